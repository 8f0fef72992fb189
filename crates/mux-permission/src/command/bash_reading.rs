//! bash's own reading of a script, without running it.
//!
//! tree-sitter-bash and bash disagree on spellings (a `#` after a line continuation or an
//! escaped tab starts a comment for one and not the other), and a verdict is only as good as
//! the reading under it. So the analysis reads what bash reads: each script is handed to bash
//! as the body of a function imported from the environment (`BASH_FUNC_name%%=() { … }`), and
//! `declare -f` prints bash's own parse back. Since the Shellshock fixes, bash imports such a
//! variable only when it holds exactly one function definition and runs nothing else, so a
//! body that closes the function early (`}; touch x; g() {`) is refused, not run. The bash
//! that reads also runs sealed ([`mux_tool::builtin::seal`]): the file system read-only, no
//! socket, no capability.
//!
//! The printed reading has no comments and no line continuations, and puts the commands of a
//! list on lines of their own; the analysis then parses that text. A random last command (`:
//! <nonce>`) shows that bash read the whole script as the function's body.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The longest script bash is asked to read (the kernel caps one environment string at 128 KiB).
const MAX_READ_BYTES: usize = 120 * 1024;
/// How many bytes of scripts one bash reads at most; more are read by another bash.
const MAX_BATCH_BYTES: usize = 1024 * 1024;
/// How many readings the process keeps (the same command is often judged more than once: by
/// the gate, again after an answer, by each scope); past it, the oldest half is dropped.
const CACHED_READINGS: usize = 4096;
/// How long bash may take to read; it reads and prints, so this is generous.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// What bash made of one script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Reading {
    /// bash read the whole script: its reading, printed back.
    Read(String),
    /// bash does not read the script as one whole (a syntax error): `bash -c` would still run
    /// what comes before the error, so nothing about it can be ruled out.
    Refused(String),
    /// No reading could be made (no bash, the wall could not be set up, a NUL byte).
    Unavailable(String),
}

/// Readings made so far, by script text.
#[derive(Debug, Default)]
pub(crate) struct Readings {
    known: HashMap<String, Reading>,
}

impl Readings {
    /// The reading of `script`, if it was made.
    pub(crate) fn get(&self, script: &str) -> Option<&Reading> {
        self.known.get(script)
    }

    /// Reads every script of `scripts` not read yet, with as few bash processes as the sizes
    /// allow (usually one).
    pub(crate) fn read(&mut self, scripts: Vec<String>) {
        let mut batch: Vec<String> = Vec::new();
        let mut bytes = 0;
        for script in scripts {
            if self.known.contains_key(&script) || batch.contains(&script) {
                continue;
            }
            if let Some(cached) = cache::get(&script) {
                self.known.insert(script, cached);
                continue;
            }
            if let Some(early) = unreadable_text(&script) {
                self.known.insert(script, early);
                continue;
            }
            if bytes + script.len() > MAX_BATCH_BYTES && !batch.is_empty() {
                self.read_batch(std::mem::take(&mut batch));
                bytes = 0;
            }
            bytes += script.len();
            batch.push(script);
        }
        if !batch.is_empty() {
            self.read_batch(batch);
        }
    }

    fn read_batch(&mut self, batch: Vec<String>) {
        let readings = read_batch(&batch);
        for (script, reading) in batch.into_iter().zip(readings) {
            if !matches!(reading, Reading::Unavailable(_)) {
                cache::put(&script, &reading);
            }
            self.known.insert(script, reading);
        }
    }
}

/// The process's readings, by script: bash reads a script the same way every time.
mod cache {
    use std::collections::{HashMap, VecDeque};
    use std::sync::{Mutex, OnceLock};

    use super::{CACHED_READINGS, Reading};

    #[derive(Default)]
    struct Cache {
        readings: HashMap<String, Reading>,
        order: VecDeque<String>,
    }

    fn cache() -> &'static Mutex<Cache> {
        static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
        CACHE.get_or_init(Mutex::default)
    }

    pub(super) fn get(script: &str) -> Option<Reading> {
        let cache = cache().lock().ok()?;
        cache.readings.get(script).cloned()
    }

    pub(super) fn put(script: &str, reading: &Reading) {
        let Ok(mut cache) = cache().lock() else {
            return;
        };
        if cache.readings.len() >= CACHED_READINGS {
            for _ in 0..CACHED_READINGS / 2 {
                if let Some(old) = cache.order.pop_front() {
                    cache.readings.remove(&old);
                }
            }
        }
        if cache
            .readings
            .insert(script.to_owned(), reading.clone())
            .is_none()
        {
            cache.order.push_back(script.to_owned());
        }
    }
}

/// A script bash is not asked to read, and why.
fn unreadable_text(script: &str) -> Option<Reading> {
    if script.contains('\0') {
        return Some(Reading::Unavailable(
            "the command holds a NUL byte".to_owned(),
        ));
    }
    if script.len() > MAX_READ_BYTES {
        return Some(Reading::Unavailable(format!(
            "the script is longer than the {MAX_READ_BYTES} bytes bash is asked to read"
        )));
    }
    None
}

/// The name of the function that holds script `index`.
fn function_name(index: usize) -> String {
    format!("mux_reading_{index}")
}

/// A number no script can guess, for the last command of each body.
fn nonce() -> String {
    static STATE: OnceLock<RandomState> = OnceLock::new();
    let state = STATE.get_or_init(RandomState::new);
    let now = Instant::now();
    let a = state.hash_one((now, std::process::id(), 1u8));
    let b = RandomState::new().hash_one((now, a));
    format!("{a:016x}{b:016x}")
}

/// The bash that reads, found once on the `PATH`.
fn bash() -> Option<&'static std::path::Path> {
    static BASH: OnceLock<Option<std::path::PathBuf>> = OnceLock::new();
    BASH.get_or_init(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join("bash"))
            .find(|candidate| candidate.is_file())
    })
    .as_deref()
}

/// Reads each script of `batch` with one bash.
fn read_batch(batch: &[String]) -> Vec<Reading> {
    let unavailable = |why: String| vec![Reading::Unavailable(why); batch.len()];
    let Some(bash) = bash() else {
        return unavailable("bash is not on the PATH".to_owned());
    };
    let nonce = nonce();
    let mut command = Command::new(bash);
    // Each function is printed, then a NUL (which no environment string can hold) ends it.
    let mut program = String::new();
    for index in 0..batch.len() {
        program.push_str(&format!(
            "declare -f {} ; printf '\\0'\n",
            function_name(index)
        ));
    }
    command
        .arg("-c")
        .arg(program)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (index, script) in batch.iter().enumerate() {
        command.env(
            format!("BASH_FUNC_{}%%", function_name(index)),
            format!("() {{ \n{script}\n: {nonce}\n}}"),
        );
    }
    if let Err(why) = seal(&mut command) {
        return unavailable(why);
    }
    let (stdout, stderr) = match run(command) {
        Ok(output) => output,
        Err(why) => return unavailable(why),
    };
    let printed: Vec<&str> = stdout.split('\0').collect();
    batch
        .iter()
        .enumerate()
        .map(|(index, _)| {
            let name = function_name(index);
            let text = printed.get(index).copied().unwrap_or_default();
            body(text, &name, &nonce)
                .map_or_else(|| Reading::Refused(refusal(&stderr, &name)), Reading::Read)
        })
        .collect()
}

/// Seals the reading bash; only Linux can, and elsewhere bash's own rule (one function
/// definition, nothing run) is the only guard.
fn seal(command: &mut Command) -> Result<(), String> {
    if cfg!(target_os = "linux") {
        mux_tool::builtin::seal(command).map_err(|err| format!("bash cannot read it: {err}"))
    } else {
        Ok(())
    }
}

/// Runs the reading bash to its end, within [`READ_TIMEOUT`]: its standard output and error.
fn run(mut command: Command) -> Result<(String, String), String> {
    let mut child = command
        .spawn()
        .map_err(|err| format!("cannot start bash to read the command: {err}"))?;
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(pipe) = pipe {
                // bash prints at most a little more than it read; the limit guards the reader.
                let _ = pipe
                    .take(8 * MAX_BATCH_BYTES as u64)
                    .read_to_end(&mut bytes);
            }
            let _ = tx.send(bytes);
        });
        rx
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let deadline = Instant::now() + READ_TIMEOUT;
    let within = |rx: &std::sync::mpsc::Receiver<Vec<u8>>| {
        rx.recv_timeout(deadline.saturating_duration_since(Instant::now()))
    };
    let (Ok(stdout), Ok(stderr)) = (within(&out), within(&err)) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err("bash did not finish reading the command".to_owned());
    };
    let _ = child.wait();
    Ok((
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    ))
}

/// The body of the function `name` as bash printed it, without its last command `: nonce`;
/// `None` unless bash read the whole script as that body, the nonce a command of its own
/// after the script's last one (on a line of its own, or after a background `&`).
fn body(printed: &str, name: &str, nonce: &str) -> Option<String> {
    let rest = printed.strip_prefix(name)?.strip_prefix(" () \n{ \n")?;
    let rest = rest.strip_suffix("\n}\n")?;
    let rest = rest.strip_suffix(&format!(": {nonce}"))?;
    if let Some(before) = rest.strip_suffix("\n    ") {
        return Some(before.strip_suffix(';').unwrap_or(before).to_owned());
    }
    if rest == "    " {
        return Some(String::new());
    }
    // `cmd & : nonce`: the `&` must be an operator, not `&&`, `|&` or an escaped `\&`.
    let before = rest.strip_suffix("& ")?;
    let escapes = before.chars().rev().take_while(|c| *c == '\\').count();
    let operator = !before.ends_with(['&', '|', '>', '<']) && escapes % 2 == 0;
    operator.then(|| format!("{before}&"))
}

/// What bash said about the function `name`, for the hazard.
fn refusal(stderr: &str, name: &str) -> String {
    let said = stderr
        .lines()
        .find_map(|line| line.split_once(&format!("{name}: ")))
        .map(|(_, what)| format!(" ({what})"))
        .unwrap_or_default();
    format!("bash does not read the command as one whole script{said}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(script: &str) -> Reading {
        let mut readings = Readings::default();
        readings.read(vec![script.to_owned()]);
        readings.get(script).cloned().expect("read")
    }

    #[test]
    fn a_continuation_before_a_hash_is_no_comment_for_bash() {
        assert_eq!(
            read("echo ok\\\n#; touch CANARY"),
            Reading::Read("    echo ok#;\n    touch CANARY".to_owned())
        );
    }

    #[test]
    fn closing_the_function_early_is_refused_and_runs_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let canary = dir.path().join("CANARY");
        for escape in [
            format!("}}; touch {0}; f() {{", canary.display()),
            format!(":; }}\ntouch {0}\ng() {{ :", canary.display()),
            format!(":; }} && touch {0} && g() {{ :", canary.display()),
            format!(":\n}}\n$(touch {0})\n{{ :", canary.display()),
        ] {
            let reading = read(&escape);
            assert!(
                matches!(reading, Reading::Refused(_)),
                "{escape}: {reading:?}"
            );
        }
        assert!(!canary.exists(), "an escape from the wrapper ran");
    }

    #[test]
    fn many_scripts_are_read_by_one_bash_each_on_its_own() {
        let mut readings = Readings::default();
        let scripts = vec![
            "ls -la | wc -l".to_owned(),
            "echo (".to_owned(),
            "a && b\nc".to_owned(),
        ];
        readings.read(scripts.clone());
        assert_eq!(
            readings.get(&scripts[0]),
            Some(&Reading::Read("    ls -la | wc -l".to_owned()))
        );
        assert!(matches!(
            readings.get(&scripts[1]),
            Some(Reading::Refused(_))
        ));
        assert_eq!(
            readings.get(&scripts[2]),
            Some(&Reading::Read("    a && b;\n    c".to_owned()))
        );
    }

    #[test]
    fn a_nul_byte_is_not_read() {
        assert!(matches!(read("echo a\0b"), Reading::Unavailable(_)));
    }
}
