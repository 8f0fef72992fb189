//! git: global options, then a subcommand vouched for (or not), then its options, all read
//! through git's program model ([`super::model`]).

use super::inspection::Inspection;
use super::model::{GIT_RUNNERS, GIT_RUNNING_ACTIONS, GIT_SUBCOMMANDS, reading};
use super::scan::scan;

/// Inspects `git ARGS`.
pub(crate) fn inspect(args: &[String], found: &mut Inspection) {
    let Some(global) = reading("git", None) else {
        return;
    };
    let globals = scan(&global, args);
    found.absorb(globals.hazards, &globals.runs);
    let Some(at) = globals.stopped_at else {
        return;
    };
    let sub = args[at].as_str();
    let rest = &args[at + 1..];
    if GIT_RUNNERS.contains(&sub) {
        found
            .hazards
            .push(format!("`git {sub}` runs commands or configuration"));
        // Whatever it runs may be given as an argument.
        found.inner_scripts.extend(rest.iter().cloned());
        return;
    }
    if !GIT_SUBCOMMANDS.contains(&sub) {
        found.hazards.push(format!(
            "`git {sub}` is not a subcommand the checker can vouch for (an alias may run anything)"
        ));
        return;
    }
    if let Some((_, action)) = GIT_RUNNING_ACTIONS
        .iter()
        .find(|(s, action)| *s == sub && rest.iter().any(|a| a == action))
    {
        found
            .hazards
            .push(format!("`git {sub} {action}` runs a command"));
        found.inner_scripts.extend(rest.iter().cloned());
    }
    if sub == "config" && !super::model::config_reads(rest) {
        found
            .hazards
            .push("`git config` may set a key that names a command".to_owned());
        found.guessed_scripts.extend(
            rest.iter()
                .map(|value| value.strip_prefix('!').unwrap_or(value).to_owned()),
        );
    }
    if let Some(model) = reading("git", Some(sub)) {
        let read = scan(&model, rest);
        found.absorb(read.hazards, &read.runs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hazards(line: &str) -> Vec<String> {
        let args: Vec<String> = line.split(' ').map(str::to_owned).collect();
        let mut found = Inspection::default();
        inspect(&args, &mut found);
        found.hazards
    }

    #[test]
    fn plain_git_is_vouched_for() {
        for line in [
            "status",
            "log --oneline -5",
            "-C . status",
            "--no-pager log",
            "config --get user.name",
            "config user.email",
            "grep -n foo",
            "log -S foo",
        ] {
            assert!(hazards(line).is_empty(), "{line}: {:?}", hazards(line));
        }
    }

    #[test]
    fn code_running_git_is_not() {
        for line in [
            "rebase -xid main",
            "rebase --exe id main",
            "grep -Oid x",
            "grep --open x",
            "difftool --ext=id",
            "bisect run id",
            "filter-branch x",
            "config core.pager id",
            "config core.fsmonitor id list",
            "config alias.x !id get",
            "-c a=b log",
            "--exec-path=/x status",
            "fetch --upload-pa=x",
            "frobnicate",
            "log --outp=/tmp/x",
        ] {
            assert!(!hazards(line).is_empty(), "{line}");
        }
    }
}
