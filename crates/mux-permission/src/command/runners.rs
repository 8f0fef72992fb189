//! Commands that run other commands: which ones, and how they take what they run, as data.

/// How a runner takes the command it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Runs {
    /// A suffix of its arguments is a command (`sudo`, `timeout`, `xargs`, the dynamic loader).
    Arguments,
    /// One of its arguments is a whole command line (`watch 'cmd'`, `env -S`, `script -c`,
    /// `sg GROUP 'cmd'`, `parallel ::: 'cmd'`), parsed like `sh -c`.
    Line,
    /// A shell: `-c SCRIPT`, else a script file, else standard input.
    Shell,
    /// Joins its arguments into a script (`eval`).
    Joined,
    /// Its first argument after options is a script (`trap`).
    First,
    /// Runs the commands of a file (`source`, `.`).
    File,
}

/// Every runner the checker knows, by command name. Any argument of a runner is also read as a
/// script for deny rules, whatever its kind.
pub(crate) const RUNNERS: &[(&str, Runs)] = &[
    ("builtin", Runs::Arguments),
    ("busybox", Runs::Arguments),
    ("caffeinate", Runs::Arguments),
    ("chronic", Runs::Arguments),
    ("chroot", Runs::Arguments),
    ("chrt", Runs::Arguments),
    ("command", Runs::Arguments),
    ("coproc", Runs::Arguments),
    ("doas", Runs::Arguments),
    ("env", Runs::Line),
    ("exec", Runs::Arguments),
    ("fakeroot", Runs::Arguments),
    ("firejail", Runs::Arguments),
    ("flock", Runs::Line),
    ("ionice", Runs::Arguments),
    ("ld.so", Runs::Arguments),
    ("ltrace", Runs::Arguments),
    ("nice", Runs::Arguments),
    ("nohup", Runs::Arguments),
    ("nsenter", Runs::Arguments),
    ("parallel", Runs::Line),
    ("pkexec", Runs::Arguments),
    ("proxychains", Runs::Arguments),
    ("proxychains4", Runs::Arguments),
    ("runuser", Runs::Line),
    ("script", Runs::Line),
    ("setpriv", Runs::Arguments),
    ("setsid", Runs::Arguments),
    ("sg", Runs::Line),
    ("ssh", Runs::Line),
    ("ssh-agent", Runs::Arguments),
    ("stdbuf", Runs::Arguments),
    ("strace", Runs::Arguments),
    ("sudo", Runs::Arguments),
    ("systemd-run", Runs::Arguments),
    ("taskset", Runs::Arguments),
    ("time", Runs::Arguments),
    ("timeout", Runs::Arguments),
    ("toybox", Runs::Arguments),
    ("unbuffer", Runs::Arguments),
    ("unshare", Runs::Arguments),
    ("watch", Runs::Line),
    ("xargs", Runs::Arguments),
    ("ash", Runs::Shell),
    ("bash", Runs::Shell),
    ("csh", Runs::Shell),
    ("dash", Runs::Shell),
    ("fish", Runs::Shell),
    ("ksh", Runs::Shell),
    ("mksh", Runs::Shell),
    ("pdksh", Runs::Shell),
    ("posh", Runs::Shell),
    ("rbash", Runs::Shell),
    ("sh", Runs::Shell),
    ("su", Runs::Shell),
    ("tcsh", Runs::Shell),
    ("yash", Runs::Shell),
    ("zsh", Runs::Shell),
    ("eval", Runs::Joined),
    ("trap", Runs::First),
    ("source", Runs::File),
    (".", Runs::File),
];

/// Runners that take operands of their own before the command (`timeout DURATION`, `chroot
/// DIR`, `flock FILE`, `taskset MASK`, `chrt PRIORITY`, `sg GROUP`).
pub(crate) const LEADING_OPERANDS: &[(&str, usize)] = &[
    ("timeout", 1),
    ("chroot", 1),
    ("flock", 1),
    ("taskset", 1),
    ("chrt", 1),
    ("sg", 1),
    ("ssh", 1),
    ("runuser", 1),
    ("su", 1),
];

/// How many operands of its own `runner` takes before the command it runs.
pub(crate) fn leading_operands(runner: &str) -> usize {
    LEADING_OPERANDS
        .iter()
        .find(|(name, _)| *name == runner)
        .map_or(0, |(_, n)| *n)
}

/// How `name` runs other commands, if it does. The dynamic loader counts under any of its
/// file names (`ld-linux-x86-64.so.2`, `ld-musl-x86_64.so.1`, `ld64.so.2`).
pub(crate) fn runner(name: &str) -> Option<Runs> {
    if let Some((_, runs)) = RUNNERS.iter().find(|(runner, _)| *runner == name) {
        return Some(*runs);
    }
    let loader =
        (name.starts_with("ld-") || name.starts_with("ld.so") || name.starts_with("ld64."))
            && name.contains(".so");
    loader.then_some(Runs::Arguments)
}

/// Runners that start an interactive shell, which reads standard input, when given one of
/// these options and no command (`sudo -s`, `sudo -u root -i`): the runner, its shell options,
/// its options that take the next word as a value.
pub(crate) const SHELL_OPTIONS: &[(&str, &[&str], &[&str])] = &[
    (
        "sudo",
        &["-s", "-i", "--shell", "--login"],
        &[
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-T",
            "-U",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--chdir",
            "--role",
            "--type",
            "--other-user",
            "--close-from",
            "--command-timeout",
        ],
    ),
    ("doas", &["-s"], &["-u", "-C"]),
    (
        "runuser",
        &["-l", "--login"],
        &["-u", "-g", "-G", "--user", "--group"],
    ),
];

/// Whether `runner args` starts a shell that reads its script from standard input.
pub(crate) fn starts_stdin_shell(runner: &str, args: &[String]) -> bool {
    let Some((_, shells, values)) = SHELL_OPTIONS.iter().find(|(name, ..)| *name == runner) else {
        return false;
    };
    let mut shell = false;
    let mut iter = args.iter().map(String::as_str);
    while let Some(arg) = iter.next() {
        if values.contains(&arg) {
            iter.next();
        } else if shells.contains(&arg) {
            shell = true;
        } else if let Some(cluster) = arg.strip_prefix('-').filter(|c| !c.starts_with('-')) {
            shell |= shells
                .iter()
                .filter_map(|s| s.strip_prefix('-').filter(|l| l.len() == 1))
                .any(|letter| cluster.contains(letter));
        } else if !arg.starts_with('-') {
            // A command: the shell runs it, not standard input.
            return false;
        }
    }
    shell
}

/// Files that are a process's standard input.
pub(crate) fn is_stdin_path(path: &str) -> bool {
    path == "-"
        || path == "/dev/stdin"
        || path.starts_with("/dev/fd/")
        || (path.starts_with("/proc/") && path.contains("/fd/"))
}

/// Where a shell takes its script from.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum ShellScript<'a> {
    /// `-c SCRIPT`.
    String(&'a str),
    /// `-c` with no script after it: the script comes from whoever appends arguments.
    MissingString,
    /// A script file (`bash script.sh`).
    File(&'a str),
    /// Standard input (no operand, `-s`, `-`, `/dev/stdin`).
    Stdin,
}

/// Options of sh-like shells that take the next word as a value.
const SHELL_VALUE_OPTIONS: &[&str] = &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"];

/// Reads a shell's arguments: its script after `-c` (past `--`), its script file, or stdin.
pub(crate) fn shell_script(args: &[String]) -> ShellScript<'_> {
    let mut dash_c = false;
    let mut stdin = false;
    let mut iter = args.iter().map(String::as_str);
    while let Some(arg) = iter.next() {
        if arg == "--" {
            break;
        }
        if SHELL_VALUE_OPTIONS.contains(&arg) {
            iter.next();
            continue;
        }
        if arg.starts_with("--") {
            continue;
        }
        if let Some(cluster) = arg.strip_prefix('-').or_else(|| arg.strip_prefix('+')) {
            if cluster.is_empty() {
                stdin = true;
                break;
            }
            dash_c |= arg.starts_with('-') && cluster.contains('c');
            stdin |= arg.starts_with('-') && cluster.contains('s');
            continue;
        }
        return shell_operand(arg, dash_c, stdin);
    }
    match iter.next() {
        Some(arg) => shell_operand(arg, dash_c, stdin),
        None if dash_c => ShellScript::MissingString,
        None => ShellScript::Stdin,
    }
}

fn shell_operand(arg: &str, dash_c: bool, stdin: bool) -> ShellScript<'_> {
    if dash_c {
        ShellScript::String(arg)
    } else if stdin || is_stdin_path(arg) {
        ShellScript::Stdin
    } else {
        ShellScript::File(arg)
    }
}

/// The options of a runner's arguments that carry a value inside the same word (`-S'cmd'`,
/// `--split-string=cmd`): the attached text, also read as a script for deny rules.
pub(crate) fn attached_value(arg: &str) -> Option<&str> {
    if let Some(long) = arg.strip_prefix("--") {
        return long.split_once('=').map(|(_, value)| value);
    }
    arg.strip_prefix('-')
        .and_then(|cluster| cluster.get(1..))
        .filter(|value| !value.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn shells_take_their_script_from_c_a_file_or_stdin() {
        assert_eq!(
            shell_script(&args(&["-c", "--", "x"])),
            ShellScript::String("x")
        );
        assert_eq!(shell_script(&args(&["-lc", "x"])), ShellScript::String("x"));
        assert_eq!(shell_script(&args(&["-c"])), ShellScript::MissingString);
        assert_eq!(shell_script(&args(&["s.sh"])), ShellScript::File("s.sh"));
        assert_eq!(shell_script(&args(&[])), ShellScript::Stdin);
        assert_eq!(shell_script(&args(&["-s", "a"])), ShellScript::Stdin);
        assert_eq!(shell_script(&args(&["-"])), ShellScript::Stdin);
        assert_eq!(shell_script(&args(&["/dev/stdin"])), ShellScript::Stdin);
        assert_eq!(shell_script(&args(&["-o", "posix"])), ShellScript::Stdin);
    }

    #[test]
    fn the_dynamic_loader_is_a_runner() {
        assert_eq!(runner("ld-linux-x86-64.so.2"), Some(Runs::Arguments));
        assert_eq!(runner("ld.so"), Some(Runs::Arguments));
        assert_eq!(runner("ldd"), None);
    }
}
