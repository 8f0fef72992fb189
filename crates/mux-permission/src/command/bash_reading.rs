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
//!
//! Cost: on Linux the bash that reads is started ahead of time as a
//! [`mux_tool::builtin::SealedSpare`] (cloned and walled, waiting for its environment), so a
//! reading pays only bash's `exec` and start, not the fork of this process and its wall. The
//! functions still come in through the environment (no other way into bash gives the import's
//! one-definition guarantee: `eval` of the same text runs whatever follows an early `}`).
//! Each bash reads one batch and exits, so nothing carries from one reading to another. Two
//! spares wait; a taken one is replaced after the reading, off its path.

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

/// How bash is started for a reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// A sealed spare started ahead of time (Linux), or else a fresh process.
    Warm,
    /// A fresh sealed process, forked from this one when it is needed (as before spares;
    /// kept for the benchmark that compares the two).
    Cold,
}

thread_local! {
    static START: std::cell::Cell<Start> = const { std::cell::Cell::new(Start::Warm) };
}

/// Runs `f` with this thread's readings started as `start` says.
pub(crate) fn with_start<T>(start: Start, f: impl FnOnce() -> T) -> T {
    let before = START.with(|cell| cell.replace(start));
    let out = f();
    START.with(|cell| cell.set(before));
    out
}

/// What bash is given to read `batch`: its program (`-c`) and its environment, one
/// function a script. Each function is printed, then a NUL (which no environment string can
/// hold) ends it.
fn invocation(batch: &[String], nonce: &str) -> (String, Vec<(String, String)>) {
    let mut program = String::new();
    for index in 0..batch.len() {
        program.push_str(&format!(
            "declare -f {} ; printf '\\0'\n",
            function_name(index)
        ));
    }
    let env = batch
        .iter()
        .enumerate()
        .map(|(index, script)| {
            (
                format!("BASH_FUNC_{}%%", function_name(index)),
                format!("() {{ \n{script}\n: {nonce}\n}}"),
            )
        })
        .collect();
    (program, env)
}

/// Reads each script of `batch` with one bash.
fn read_batch(batch: &[String]) -> Vec<Reading> {
    let unavailable = |why: String| vec![Reading::Unavailable(why); batch.len()];
    let Some(bash) = bash() else {
        return unavailable("bash is not on the PATH".to_owned());
    };
    let nonce = nonce();
    let (program, env) = invocation(batch, &nonce);
    let output = match START.with(std::cell::Cell::get) {
        Start::Warm => run_warm(bash, &program, &env),
        Start::Cold => run_cold(bash, &program, &env),
    };
    let (stdout, stderr) = match output {
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

/// Runs the reading bash as a fresh sealed process (forked now), to its end: its standard
/// output and error.
fn run_cold(
    bash: &std::path::Path,
    program: &str,
    env: &[(String, String)],
) -> Result<(String, String), String> {
    let mut command = Command::new(bash);
    command
        .arg("-c")
        .arg(program)
        .env_clear()
        .envs(env.iter().map(|(name, value)| (name, value)))
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    seal(&mut command)?;
    run(command)
}

/// Runs the reading bash in a sealed spare (Linux), to its end: its standard output and
/// error. Elsewhere, a fresh process.
#[cfg(target_os = "linux")]
fn run_warm(
    bash: &std::path::Path,
    program: &str,
    env: &[(String, String)],
) -> Result<(String, String), String> {
    let spare = match spares::take() {
        Some(spare) => spare,
        None => mux_tool::builtin::SealedSpare::start(bash)
            .map_err(|err| format!("bash cannot read it: {err}"))?,
    };
    let env: Vec<(&str, &str)> = env
        .iter()
        .map(|(name, value)| (name.as_str(), value.as_str()))
        .collect();
    // argv[0] as `Command` gives it, so that bash's messages name it alike.
    let name = bash.to_string_lossy();
    let output = spare
        .exec(&[&name, "-c", program], &env)
        .and_then(|child| child.output(READ_TIMEOUT, 8 * MAX_BATCH_BYTES));
    spares::refill(bash);
    let output = output.map_err(|err| format!("bash could not read the command: {err}"))?;
    if output.stdout.is_empty() && matches!(output.status, 125..=127) {
        return Err(format!(
            "bash could not be started to read the command (status {})",
            output.status
        ));
    }
    Ok((
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ))
}

#[cfg(not(target_os = "linux"))]
fn run_warm(
    bash: &std::path::Path,
    program: &str,
    env: &[(String, String)],
) -> Result<(String, String), String> {
    run_cold(bash, program, env)
}

/// The sealed bash processes waiting to read (Linux).
#[cfg(target_os = "linux")]
mod spares {
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, OnceLock, mpsc};

    use mux_tool::builtin::SealedSpare;

    /// How many spares wait.
    const SPARES: usize = 2;

    fn pool() -> &'static Mutex<Vec<SealedSpare>> {
        static POOL: OnceLock<Mutex<Vec<SealedSpare>>> = OnceLock::new();
        POOL.get_or_init(Mutex::default)
    }

    /// Set when a spare could not be made: no more are tried (each reading then starts its
    /// own, and reports why it cannot).
    static FAILED: AtomicBool = AtomicBool::new(false);

    /// A waiting spare, if one is ready.
    pub(super) fn take() -> Option<SealedSpare> {
        pool().lock().ok()?.pop()
    }

    /// Has the pool filled again in the background.
    pub(super) fn refill(bash: &Path) {
        if FAILED.load(Ordering::Relaxed) {
            return;
        }
        static REFILLER: OnceLock<Option<Mutex<mpsc::Sender<PathBuf>>>> = OnceLock::new();
        let sender = REFILLER.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<PathBuf>();
            std::thread::Builder::new()
                .name("mux-bash-spares".to_owned())
                .spawn(move || {
                    while let Ok(bash) = rx.recv() {
                        fill(&bash);
                    }
                })
                .ok()
                .map(|_| Mutex::new(tx))
        });
        if let Some(sender) = sender
            && let Ok(sender) = sender.lock()
        {
            let _ = sender.send(bash.to_owned());
        }
    }

    fn fill(bash: &Path) {
        loop {
            let missing = pool()
                .lock()
                .map_or(0, |pool| SPARES.saturating_sub(pool.len()));
            if missing == 0 {
                return;
            }
            match SealedSpare::start(bash) {
                Ok(spare) => {
                    if let Ok(mut pool) = pool().lock() {
                        pool.push(spare);
                    }
                }
                Err(_) => {
                    FAILED.store(true, Ordering::Relaxed);
                    return;
                }
            }
        }
    }
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
    fn a_spare_and_a_fresh_bash_read_alike() {
        let scripts = [
            "echo ok\\\n#; touch CANARY",
            "ls $HOME | wc -l # count",
            "a && b\nc &",
            "echo (",
            "}; touch x; f() {",
        ];
        for script in scripts {
            let nonce = nonce();
            let batch = vec![script.to_owned()];
            let (program, env) = invocation(&batch, &nonce);
            let bash = bash().expect("bash");
            let warm = run_warm(bash, &program, &env).expect("warm");
            let cold = run_cold(bash, &program, &env).expect("cold");
            assert_eq!(warm, cold, "{script}");
        }
    }

    #[test]
    fn a_nul_byte_is_not_read() {
        assert!(matches!(read("echo a\0b"), Reading::Unavailable(_)));
    }
}
