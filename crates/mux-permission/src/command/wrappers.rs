//! Commands that run other commands or smuggle code through options.

/// What a simple command's words reveal beyond themselves.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    /// Why the command is at most ask.
    pub(crate) hazards: Vec<String>,
    /// Script strings the command runs (`sh -c STRING`, `eval ARGS`), parsed in turn.
    pub(crate) inner_scripts: Vec<String>,
    /// The command runs some suffix of its arguments as a command (`sudo`, `xargs`, `find
    /// -exec`); each suffix is checked against deny rules.
    pub(crate) runs_arguments: bool,
}

/// Commands that run their arguments as another command.
const WRAPPERS: &[&str] = &[
    "builtin",
    "busybox",
    "caffeinate",
    "chroot",
    "chrt",
    "command",
    "doas",
    "env",
    "exec",
    "fakeroot",
    "firejail",
    "flock",
    "ionice",
    "ltrace",
    "nice",
    "nohup",
    "nsenter",
    "parallel",
    "proxychains",
    "proxychains4",
    "runuser",
    "setsid",
    "sg",
    "stdbuf",
    "strace",
    "sudo",
    "taskset",
    "time",
    "timeout",
    "unbuffer",
    "unshare",
    "watch",
    "xargs",
];

/// Shells: with `-c` they run a string, without it a file or standard input.
const SHELLS: &[&str] = &[
    "ash", "bash", "csh", "dash", "fish", "ksh", "mksh", "sh", "su", "tcsh", "zsh",
];

/// The command name a path like `/usr/bin/sudo` stands for.
pub(crate) fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// Inspects one simple command.
pub(crate) fn inspect(words: &[String]) -> Inspection {
    let mut found = Inspection::default();
    let Some(first) = words.first() else {
        return found;
    };
    let name = base_name(first);
    let args = &words[1..];
    if WRAPPERS.contains(&name) {
        found
            .hazards
            .push(format!("the wrapper `{name}` runs another command"));
        found.runs_arguments = true;
    } else if SHELLS.contains(&name) {
        found
            .hazards
            .push(format!("the shell `{name}` runs a script"));
        match dash_c_script(args) {
            Some(script) => found.inner_scripts.push(script.to_owned()),
            None => found.runs_arguments = true,
        }
    } else {
        match name {
            "eval" => {
                found.hazards.push("`eval` runs a string".to_owned());
                found.inner_scripts.push(args.join(" "));
            }
            "trap" => {
                found.hazards.push("`trap` runs a string".to_owned());
                found.inner_scripts.extend(args.first().cloned());
            }
            "." | "source" => found
                .hazards
                .push(format!("`{name}` runs the commands of a file")),
            "alias" => found.hazards.push("`alias` redefines commands".to_owned()),
            "find" => find(args, &mut found),
            "git" => option_smuggling(name, args, GIT_SMUGGLERS, &mut found),
            "rg" => option_smuggling(name, args, RG_SMUGGLERS, &mut found),
            "tar" => option_smuggling(name, args, TAR_SMUGGLERS, &mut found),
            "sort" => option_smuggling(name, args, SORT_SMUGGLERS, &mut found),
            _ => {}
        }
    }
    found
}

/// The script of `sh -c SCRIPT` (also `-lc`, `-ec`, `-x -c`).
fn dash_c_script(args: &[String]) -> Option<&str> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let is_short_cluster = arg.starts_with('-') && !arg.starts_with("--");
        if is_short_cluster && arg.contains('c') {
            return iter.next().map(String::as_str);
        }
    }
    None
}

fn find(args: &[String], found: &mut Inspection) {
    for arg in args {
        match arg.as_str() {
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                found
                    .hazards
                    .push(format!("`find {arg}` runs another command"));
                found.runs_arguments = true;
            }
            "-delete" | "-fprint" | "-fprint0" | "-fprintf" | "-fls" => found
                .hazards
                .push(format!("`find {arg}` deletes or writes files")),
            _ => {}
        }
    }
}

/// Options that make a command run code or read configuration the model chose.
const GIT_SMUGGLERS: &[&str] = &[
    "-c",
    "--config",
    "--config-env",
    "--exec-path",
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--template",
    "--output",
];
const RG_SMUGGLERS: &[&str] = &["--pre", "--hostname-bin"];
const TAR_SMUGGLERS: &[&str] = &[
    "--to-command",
    "--use-compress-program",
    "-I",
    "--checkpoint-action",
    "--info-script",
    "--new-volume-script",
    "-F",
];
const SORT_SMUGGLERS: &[&str] = &["--compress-program"];

fn option_smuggling(name: &str, args: &[String], options: &[&str], found: &mut Inspection) {
    for arg in args {
        let smuggles = options.iter().any(|option| {
            arg == option
                || (option.starts_with("--") && arg.starts_with(&format!("{option}=")))
                || (!option.starts_with("--")
                    && arg.len() > option.len()
                    && arg.starts_with(option)
                    && !arg.starts_with("--"))
        });
        if smuggles {
            found
                .hazards
                .push(format!("`{name} {arg}` can run code through an option"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn wrappers_run_their_arguments() {
        assert!(inspect(&words("/usr/bin/sudo rm -rf /")).runs_arguments);
        assert!(inspect(&words("timeout 5 ls")).runs_arguments);
        assert!(!inspect(&words("ls -la")).runs_arguments);
    }

    #[test]
    fn shells_expose_their_script() {
        let found = inspect(&["bash".into(), "-lc".into(), "rm -rf /".into()]);
        assert_eq!(found.inner_scripts, ["rm -rf /"]);
    }

    #[test]
    fn git_config_smuggling_is_a_hazard() {
        assert!(
            !inspect(&words("git -c core.pager=sh log"))
                .hazards
                .is_empty()
        );
        assert!(
            !inspect(&words("git -ccore.pager=sh log"))
                .hazards
                .is_empty()
        );
        assert!(
            !inspect(&words("git fetch --upload-pack=evil"))
                .hazards
                .is_empty()
        );
        assert!(inspect(&words("git -C repo status")).hazards.is_empty());
        assert!(inspect(&words("git log --color")).hazards.is_empty());
    }

    #[test]
    fn find_exec_is_a_hazard() {
        assert!(inspect(&words("find . -exec rm {} ;")).runs_arguments);
        assert!(inspect(&words("find . -name x")).hazards.is_empty());
    }
}
