//! The oracle's fixed policy and its prediction.
//!
//! The policy is what a user plausibly writes for read-ish tools: `Bash(git:*)`, `Bash(sed:*)`,
//! `Bash(awk:*)` and so on, in the default mode. Under mux's semantics such a rule allows a
//! command whose words start with the program's name, unless the analysis found a hazard
//! (a redirection, a substitution, a runner, an option that writes or runs...), which makes it
//! ask. So an allow is the analysis vouching for the command. Two deny rules (`touch`, `rm`)
//! make a hidden denied program a breach of its own.
//!
//! What an allow vouches for, and what the oracle checks after running the command:
//! - the only programs executed are the names of the simple commands the analysis reports
//!   ([`mux_permission::command::analyze`]'s `commands`), plus [`helpers`];
//! - no file is created, written, truncated, removed, renamed, linked or has its metadata
//!   changed, except [`allowed_change`]: every program of the policy is read-only by its model;
//! - no canary runs (a program named by an environment variable or a configuration key is an
//!   exec the prediction does not contain).

use std::collections::BTreeSet;

use mux_permission::command::analyze;
use mux_permission::{
    Mode, PathContext, Permissions, RuleSet, Scope, ScopeRules, Verdict, builtin,
};
use mux_tool::Subject;

use crate::fixture::WORK_DIR;

/// The allow rules: read-ish programs, each allowed with any arguments.
pub(crate) const ALLOW: &[&str] = &[
    "Bash(git:*)",
    "Bash(sed:*)",
    "Bash(awk:*)",
    "Bash(grep:*)",
    "Bash(cat:*)",
    "Bash(ls:*)",
    "Bash(wc:*)",
    "Bash(head:*)",
    "Bash(tail:*)",
    "Bash(find:*)",
    "Bash(sort:*)",
    "Bash(uniq:*)",
    "Bash(cut:*)",
    "Bash(tr:*)",
    "Bash(diff:*)",
    "Bash(stat:*)",
    "Bash(file:*)",
    "Bash(echo:*)",
    "Bash(pwd)",
    "Bash(jq:*)",
    // Narrower rules a user writes for git, beside `Bash(git:*)`: the rule a command is allowed
    // under does not change the verdict, but these name the reach of issue 40's class 3.
    "Bash(git diff:*)",
    "Bash(git log:*)",
    "Bash(git blame:*)",
    "Bash(git show:*)",
    "Bash(git status:*)",
];

/// The deny rules: programs that must never run under this policy. A run that executes one of
/// them is a breach however the command was allowed.
pub(crate) const DENY: &[&str] = &["Bash(touch:*)", "Bash(rm:*)"];

/// The programs [`DENY`] names.
pub(crate) const DENIED_PROGRAMS: &[&str] = &["touch", "rm"];

/// The policy, rooted at the sandbox's work directory.
pub(crate) fn permissions() -> Result<Permissions, String> {
    let mut set = RuleSet::new().with_mode(Mode::Default);
    for rule in ALLOW {
        set = set
            .with_allow(rule)
            .map_err(|e| format!("the oracle's rule {rule}: {e}"))?;
    }
    for rule in DENY {
        set = set
            .with_deny(rule)
            .map_err(|e| format!("the oracle's rule {rule}: {e}"))?;
    }
    Ok(Permissions::builder(PathContext::new(WORK_DIR))
        .scope(Scope::Project, ScopeRules::new(set))
        .build())
}

/// The policy's verdict on a bash call running `command`.
pub(crate) fn verdict(permissions: &Permissions, command: &str) -> Result<Verdict, String> {
    let spec = builtin::spec("Bash").ok_or("mux-permission has no built-in Bash spec")?;
    Ok(permissions.check(&spec, &Subject::command(command)).verdict)
}

/// The programs an allowed command may execute: the base names of the simple commands the
/// analysis reports.
pub(crate) fn predicted_programs(command: &str) -> BTreeSet<String> {
    analyze(command)
        .commands
        .iter()
        .filter_map(|words| words.first())
        .map(|name| base_name(name).to_owned())
        .collect()
}

/// Executions a predicted program legitimately makes of other programs: git runs its own
/// helpers (`git-*` in its exec path) and itself. Nothing else is exempt.
pub(crate) fn helpers(program: &str, path: &str, git_exec_path: &str) -> bool {
    let name = base_name(path);
    match program {
        "git" => {
            name == "git"
                || (name.starts_with("git-")
                    && !git_exec_path.is_empty()
                    && path.starts_with(git_exec_path))
        }
        _ => false,
    }
}

/// File changes the read-only programs legitimately make: opening `/dev/null`, a failed open
/// of `/dev/tty` (bash probes for a terminal; the sandbox's new session has none), and git
/// refreshing its index (`.git/index.lock`, renamed over `.git/index`) on `status` and `diff`.
/// Nothing else.
pub(crate) fn allowed_change(
    programs: &BTreeSet<String>,
    call: &str,
    paths: &[String],
    result: &str,
) -> bool {
    if paths.is_empty() {
        return false;
    }
    paths.iter().all(|path| {
        path == "/dev/null"
            || (path == "/dev/tty" && result.starts_with("-1 "))
            || (programs.contains("git")
                && matches!(
                    call,
                    "openat" | "renameat" | "renameat2" | "rename" | "unlink" | "unlinkat"
                )
                && (path.ends_with("/.git/index.lock") || path.ends_with("/.git/index")))
    })
}

/// The last component of a path.
pub(crate) fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_a_plain_read_and_asks_for_a_redirection() {
        let permissions = permissions().unwrap();
        assert_eq!(
            verdict(&permissions, "git log --oneline").unwrap(),
            Verdict::Allow
        );
        assert_eq!(
            verdict(&permissions, "cat README.md > out.txt").unwrap(),
            Verdict::Ask
        );
        assert_eq!(verdict(&permissions, "rm -rf x").unwrap(), Verdict::Deny);
        assert_eq!(
            verdict(&permissions, "echo a; touch x").unwrap(),
            Verdict::Deny
        );
    }

    #[test]
    fn the_prediction_names_every_simple_command() {
        let programs = predicted_programs("git log | sort -r && wc -l README.md");
        assert_eq!(
            programs.into_iter().collect::<Vec<_>>(),
            vec!["git", "sort", "wc"]
        );
    }

    #[test]
    fn only_gits_own_helpers_and_index_refresh_are_exempt() {
        assert!(helpers(
            "git",
            "/usr/lib/git-core/git-remote-http",
            "/usr/lib/git-core"
        ));
        assert!(!helpers("git", "/tmp/w/git-x", "/usr/lib/git-core"));
        assert!(!helpers("sed", "/usr/bin/sh", "/usr/lib/git-core"));
        let git: BTreeSet<String> = ["git".to_owned()].into();
        let index = [
            "/tmp/w/.git/index.lock".to_owned(),
            "/tmp/w/.git/index".to_owned(),
        ];
        assert!(allowed_change(&git, "renameat2", &index, "0"));
        assert!(!allowed_change(
            &git,
            "openat",
            &["/tmp/w/.git/config.lock".to_owned()],
            "3"
        ));
        let sed: BTreeSet<String> = ["sed".to_owned()].into();
        assert!(!allowed_change(&sed, "renameat2", &index, "0"));
        let tty = ["/dev/tty".to_owned()];
        assert!(allowed_change(
            &sed,
            "openat",
            &tty,
            "-1 ENXIO (No such device or address)"
        ));
        assert!(!allowed_change(&sed, "openat", &tty, "3</dev/tty>"));
    }
}
