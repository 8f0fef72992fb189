//! Reading `strace -ff -y -s 4096` output (one file per process) into the events the oracle
//! compares with its prediction: programs executed and files changed.

/// The system calls strace is asked to trace: every exec and every call that can create, write,
/// remove, rename, link or change the metadata of a file.
pub(crate) const TRACED: &[&str] = &[
    "execve",
    "execveat",
    "open",
    "openat",
    "openat2",
    "creat",
    "rename",
    "renameat",
    "renameat2",
    "unlink",
    "unlinkat",
    "rmdir",
    "mkdir",
    "mkdirat",
    "mknod",
    "mknodat",
    "chmod",
    "fchmod",
    "fchmodat",
    "chown",
    "fchown",
    "lchown",
    "fchownat",
    "symlink",
    "symlinkat",
    "link",
    "linkat",
    "truncate",
    "ftruncate",
    "utimensat",
    "utimes",
    "utime",
    "futimesat",
    "setxattr",
    "lsetxattr",
    "fsetxattr",
    "removexattr",
    "lremovexattr",
    "fremovexattr",
];

/// One traced event that matters to the oracle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// A successful exec: the program's path and its arguments.
    Exec {
        /// The path executed.
        path: String,
        /// argv.
        argv: Vec<String>,
    },
    /// A call that changes a file (attempted, whether or not it succeeded).
    Change {
        /// The system call.
        call: String,
        /// The paths it names (a directory fd's path joined with a relative name).
        paths: Vec<String>,
        /// The call's result (`0`, `3</tmp/w/x>`, `-1 EROFS (...)`).
        result: String,
        /// The line as strace printed it (shortened).
        line: String,
    },
}

/// Parses one process's trace.
pub(crate) fn parse(text: &str) -> Vec<Event> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Event> {
    let open = line.find('(')?;
    let call = line[..open].trim();
    if !TRACED.contains(&call) {
        return None;
    }
    // strace pads short calls to a column: `unlink("x")        = 0`. A call cut short
    // (`<unfinished ...>`, a process killed in it) has no result.
    let (args, result) = match line.rfind(" = ") {
        Some(at) if line[..at].trim_end().ends_with(')') && at > open => {
            let head = line[..at].trim_end();
            (&head[open + 1..head.len() - 1], line[at + 3..].trim())
        }
        _ => (
            line[open + 1..]
                .trim_end()
                .trim_end_matches("<unfinished ...>")
                .trim_end(),
            "?",
        ),
    };
    let tokens = split_args(args);
    match call {
        "execve" | "execveat" => {
            if result != "0" {
                return None;
            }
            let (path_at, argv_at) = if call == "execve" { (0, 1) } else { (1, 2) };
            let path = tokens.get(path_at).and_then(|t| unquote(t))?;
            let argv = tokens
                .get(argv_at)
                .map(|t| array_strings(t))
                .unwrap_or_default();
            Some(Event::Exec { path, argv })
        }
        "open" | "openat" | "openat2" | "creat" => {
            let (dir, path_at) = if call == "open" || call == "creat" {
                (None, 0)
            } else {
                (tokens.first().map(String::as_str), 1)
            };
            let name = tokens.get(path_at).and_then(|t| unquote(t))?;
            if call != "creat" {
                let flags = tokens.get(path_at + 1).map(String::as_str).unwrap_or("");
                let writes = ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_TMPFILE"]
                    .iter()
                    .any(|f| flags.contains(f));
                if !writes {
                    return None;
                }
            }
            Some(change(call, vec![join(dir, &name)], result, line))
        }
        _ => {
            // Pair each quoted name with the directory fd before it, if any.
            let mut paths = Vec::new();
            let mut dir: Option<&str> = None;
            for token in &tokens {
                if let Some(name) = unquote(token) {
                    paths.push(join(dir.take(), &name));
                } else if token == "AT_FDCWD" || fd_path(token).is_some() {
                    dir = Some(token);
                }
            }
            if paths.is_empty() {
                // An fd-only call (fchmod, ftruncate, fsetxattr...): the fd's path.
                if let Some(path) = tokens.first().and_then(|t| fd_path(t)) {
                    paths.push(path.to_owned());
                }
            }
            Some(change(call, paths, result, line))
        }
    }
}

fn change(call: &str, paths: Vec<String>, result: &str, line: &str) -> Event {
    Event::Change {
        call: call.to_owned(),
        paths,
        result: result.to_owned(),
        line: line.chars().take(300).collect(),
    }
}

/// A relative name resolved against its directory fd (`3</tmp/w>`); `AT_FDCWD` and absolute
/// names stay as they are.
fn join(dir: Option<&str>, name: &str) -> String {
    if name.starts_with('/') {
        return name.to_owned();
    }
    match dir.and_then(fd_path) {
        Some(base) => format!("{}/{name}", base.trim_end_matches('/')),
        None => name.to_owned(),
    }
}

/// The path strace's `-y` printed for an fd argument: `3</tmp/w/x>`.
fn fd_path(token: &str) -> Option<&str> {
    let open = token.find('<')?;
    let fd = &token[..open];
    if fd != "AT_FDCWD" && (fd.is_empty() || !fd.chars().all(|c| c.is_ascii_digit())) {
        return None;
    }
    token[open + 1..].strip_suffix('>')
}

/// Splits top-level arguments at commas outside quotes, brackets and braces.
fn split_args(args: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0i32;
    let mut quoted = false;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quoted => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
                continue;
            }
            '"' => quoted = !quoted,
            '[' | '{' | '(' if !quoted => depth += 1,
            ']' | '}' | ')' if !quoted => depth -= 1,
            ',' if !quoted && depth == 0 => {
                out.push(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_owned());
    }
    out
}

/// The strings of an array argument (`["git", "log"]`).
fn array_strings(token: &str) -> Vec<String> {
    let inner = token
        .trim()
        .strip_prefix('[')
        .and_then(|t| t.rsplit_once(']').map(|(a, _)| a))
        .unwrap_or("");
    split_args(inner)
        .iter()
        .filter_map(|t| unquote(t))
        .collect()
}

/// A C-quoted strace string, unescaped; `None` when the token is not a string. A string
/// strace cut short (`"..."...`) keeps what it printed.
fn unquote(token: &str) -> Option<String> {
    let body = token.strip_prefix('"')?;
    let body = body
        .strip_suffix("\"...")
        .or_else(|| body.strip_suffix('"'))?;
    let mut out = Vec::new();
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 1 < bytes.len() {
            i += 1;
            match bytes[i] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'v' => out.push(0x0b),
                b'f' => out.push(0x0c),
                b'x' => {
                    let hex = body.get(i + 1..i + 3).unwrap_or("");
                    out.push(u8::from_str_radix(hex, 16).unwrap_or(b'?'));
                    i += 2;
                }
                d @ b'0'..=b'7' => {
                    let mut value = u32::from(d - b'0');
                    let mut n = 1;
                    while n < 3 && i + 1 < bytes.len() && (b'0'..=b'7').contains(&bytes[i + 1]) {
                        i += 1;
                        n += 1;
                        value = value * 8 + u32::from(bytes[i] - b'0');
                    }
                    out.push(u8::try_from(value).unwrap_or(b'?'));
                }
                other => out.push(other),
            }
        } else {
            out.push(bytes[i]);
        }
        i += 1;
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exec_is_read_with_its_arguments() {
        let events = parse(
            r#"execve("/usr/bin/git", ["git", "log", "--format=%H \"x\"\n"], 0x7ffd /* 9 vars */) = 0
execve("/usr/local/sbin/sh", ["sh", "-c", "x"], 0x55 /* 9 vars */) = -1 ENOENT (No such file or directory)"#,
        );
        assert_eq!(
            events,
            vec![Event::Exec {
                path: "/usr/bin/git".into(),
                argv: vec!["git".into(), "log".into(), "--format=%H \"x\"\n".into()],
            }]
        );
    }

    #[test]
    fn reads_are_ignored_and_writes_are_changes() {
        let events = parse(
            r#"openat(AT_FDCWD</tmp/w>, "README.md", O_RDONLY) = 3</tmp/w/README.md>
openat(AT_FDCWD</tmp/w>, ".git/hooks/pre-commit", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 3</tmp/w/.git/hooks/pre-commit>
openat(5</tmp/w/.git>, "config.lock", O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0666) = -1 EROFS (Read-only file system)
renameat2(AT_FDCWD</tmp/w>, ".git/index.lock", AT_FDCWD</tmp/w>, ".git/index", 0) = 0
fchmod(3</tmp/w/out.txt>, 0755) = 0
unlink("/tmp/w/.git/index.lock")        = 0
mkdir("/tmp/git-blob-x", 0700 <unfinished ...>"#,
        );
        let paths: Vec<Vec<String>> = events
            .iter()
            .map(|e| match e {
                Event::Change { paths, .. } => paths.clone(),
                Event::Exec { .. } => vec![],
            })
            .collect();
        assert_eq!(
            paths,
            vec![
                vec!["/tmp/w/.git/hooks/pre-commit".to_owned()],
                vec!["/tmp/w/.git/config.lock".to_owned()],
                vec![
                    "/tmp/w/.git/index.lock".to_owned(),
                    "/tmp/w/.git/index".to_owned()
                ],
                vec!["/tmp/w/out.txt".to_owned()],
                vec!["/tmp/w/.git/index.lock".to_owned()],
                vec!["/tmp/git-blob-x".to_owned()],
            ]
        );
    }

    #[test]
    fn octal_and_hex_escapes_are_decoded() {
        assert_eq!(unquote(r#""a\303\251\x41""#).as_deref(), Some("aéA"));
        assert_eq!(unquote(r#""abc"..."#).as_deref(), Some("abc"));
        assert_eq!(unquote("AT_FDCWD"), None);
    }
}
