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
    ("setarch", Runs::Arguments),
    ("linux32", Runs::Arguments),
    ("linux64", Runs::Arguments),
    ("prlimit", Runs::Arguments),
    ("valgrind", Runs::Arguments),
    ("cgexec", Runs::Arguments),
    ("capsh", Runs::Line),
    ("start-stop-daemon", Runs::Arguments),
    ("daemonize", Runs::Arguments),
    ("numactl", Runs::Arguments),
    ("catchsegv", Runs::Arguments),
    ("faketime", Runs::Arguments),
    ("torsocks", Runs::Arguments),
    ("tsocks", Runs::Arguments),
    ("firejail", Runs::Arguments),
    ("bwrap", Runs::Arguments),
    ("machinectl", Runs::Arguments),
    ("run-parts", Runs::Arguments),
    ("dbus-launch", Runs::Arguments),
    ("xvfb-run", Runs::Arguments),
    ("entr", Runs::Arguments),
    ("tmux", Runs::Line),
    ("screen", Runs::Arguments),
    ("at", Runs::Line),
    ("batch", Runs::Line),
    ("ash", Runs::Shell),
    ("bash", Runs::Shell),
    ("csh", Runs::Shell),
    ("dash", Runs::Shell),
    ("fish", Runs::Shell),
    ("ksh", Runs::Shell),
    ("ksh93", Runs::Shell),
    ("lksh", Runs::Shell),
    ("oksh", Runs::Shell),
    ("bosh", Runs::Shell),
    ("rc", Runs::Shell),
    ("es", Runs::Shell),
    ("xonsh", Runs::Shell),
    ("elvish", Runs::Shell),
    ("nu", Runs::Shell),
    ("pwsh", Runs::Shell),
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
/// file names (`ld-linux-x86-64.so.2`, `ld-musl-x86_64.so.1`, `ld64.so.2`), and a runner under
/// a versioned name (`ksh93`, `bash5.2`, `zsh-5.9`) as itself.
pub(crate) fn runner(name: &str) -> Option<Runs> {
    let unversioned =
        name.trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | '-' | '_'));
    if let Some((_, runs)) = RUNNERS
        .iter()
        .find(|(runner, _)| *runner == name || (!unversioned.is_empty() && *runner == unversioned))
    {
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

/// Files that may be a process's standard input, however spelled: `-`, and any path that
/// normalises (repeated slashes, `.` and `..` components) into `/dev/` or `/proc/`
/// (`/dev/./stdin`, `//dev/stdin`, `/dev//fd/0`, `/proc/self/fd/0`).
pub(crate) fn is_stdin_path(path: &str) -> bool {
    if path == "-" {
        return true;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    path.starts_with('/') && matches!(parts.first(), Some(&("dev" | "proc")))
}

/// Variables whose value names a file the shell (or a program) runs at start.
pub(crate) const FILE_RUNNING_VARIABLES: &[&str] = &["BASH_ENV", "ENV", "PYTHONSTARTUP"];

/// Whether `word` holds a replacement string a runner fills in later (`{}`, `{.}`, `{1}`, or
/// the string given to `xargs -I`).
pub(crate) fn is_placeholder(word: &str, placeholders: &[String]) -> bool {
    word.find('{')
        .is_some_and(|open| word[open..].contains('}'))
        || placeholders
            .iter()
            .any(|p| !p.is_empty() && word.contains(p.as_str()))
}

/// Runners that, given no command, start a shell (or read commands) from standard input: the
/// runner, and how many operands of its own it takes before a command.
const STDIN_BY_DEFAULT: &[(&str, usize)] = &[
    ("fakeroot", 0),
    ("fakeroot-ng", 0),
    ("chroot", 1),
    ("nsenter", 0),
    ("unshare", 0),
    ("parallel", 0),
    ("machinectl", 2),
    ("setsid", 0),
    ("firejail", 0),
    ("tmux", 1),
    ("screen", 0),
    ("at", 1),
    ("batch", 0),
];

/// Whether `runner args` has no command, so it reads one (a shell, or commands) from
/// standard input. A word right after an option may be that option's value, so it does not
/// count as the command: when in doubt, the runner reads standard input.
pub(crate) fn reads_stdin_by_default(runner: &str, args: &[String]) -> bool {
    if runner == "script" {
        return !args.iter().any(|a| {
            a == "--command"
                || a.starts_with("--command=")
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
        });
    }
    let Some((_, leading)) = STDIN_BY_DEFAULT.iter().find(|(name, _)| *name == runner) else {
        return false;
    };
    let plain = args
        .iter()
        .enumerate()
        .filter(|&(i, word)| {
            !word.starts_with('-')
                && !word.contains('=')
                && (i == 0 || !args[i - 1].starts_with('-'))
        })
        .count();
    plain <= *leading
}

/// Interpreters and editors that read a program or commands from standard input: when given
/// no program (or `-`), what they run cannot be read. The options that give the program.
const INTERPRETERS: &[(&str, &[&str])] = &[
    ("python", &["-c", "-m"]),
    ("pypy", &["-c", "-m"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "-p", "--eval", "--print"]),
    ("nodejs", &["-e", "-p", "--eval", "--print"]),
    ("deno", &["eval", "run"]),
    ("bun", &["-e", "run"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("luajit", &["-e"]),
    ("tclsh", &[]),
    ("wish", &[]),
    ("expect", &["-c"]),
    ("Rscript", &["-e"]),
    ("R", &["-e"]),
    ("osascript", &["-e"]),
    ("guile", &["-c"]),
    ("sqlite3", &[]),
];

/// Programs that always take commands from standard input or from files the checker cannot
/// see (`ex`, `ed` with `!CMD`, `gdb` with `shell CMD` and `.gdbinit`).
const COMMAND_READERS: &[&str] = &["ex", "ed", "red", "gdb", "gdb-multiarch", "lldb", "jdb"];

/// Whether the program reads commands it runs from standard input (or from where the checker
/// cannot look): `python3`, `perl -`, `ex -s`, `vim -es`, `gdb`, `awk -f -`.
pub(crate) fn reads_program_from_stdin(name: &str, args: &[String]) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || matches!(c, '.' | '-' | '_'));
    if COMMAND_READERS.contains(&name) || COMMAND_READERS.contains(&base) {
        return true;
    }
    if matches!(base, "vi" | "vim" | "nvim" | "view" | "gvim") {
        return args.iter().any(|a| {
            a.starts_with('-')
                && !a.starts_with("--")
                && a[1..].chars().any(|c| matches!(c, 'e' | 's' | 'E'))
        });
    }
    let Some((_, code)) = INTERPRETERS.iter().find(|(n, _)| *n == name || *n == base) else {
        return false;
    };
    let mut previous_option = false;
    for arg in args {
        if code
            .iter()
            .any(|c| arg == c || (arg.starts_with(c) && c.len() == 2 && !arg.starts_with("--")))
        {
            return false;
        }
        if arg == "-" || is_stdin_path(arg) {
            return true;
        }
        if arg.starts_with('-') {
            previous_option = true;
            continue;
        }
        if !previous_option {
            // A script file: what it runs is a documented gap, not standard input.
            return false;
        }
        previous_option = false;
    }
    true
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
