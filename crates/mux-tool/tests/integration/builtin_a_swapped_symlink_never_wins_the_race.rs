//! The check-then-use race: another process flips a directory inside the root between a real
//! directory and a symlink to a directory outside it while the file tools run. Whatever the
//! timing, nothing outside is read or written.
//!
//! The swapper is this test binary run again (`std::env::current_exe()`) with
//! [`SWAPPER_ENV`] naming the directory to flip; [`swapper`] is a no-op test otherwise.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mux_tool::builtin::{Glob, Grep, ListDir, ReadFile, Sandbox, WriteFile};
use mux_tool::{ToolContext, TypedTool};
use serde_json::json;

/// Set in the child process: the root whose `d` and `alt` it exchanges.
const SWAPPER_ENV: &str = "MUX_TEST_RACE_SWAPPER_ROOT";
/// How many tool calls each race makes.
const TRIES: usize = 1000;
/// What the file outside the root holds; it must never appear in an output.
const CANARY: &str = "CANARY-OUTSIDE-THE-ROOT";

/// The swapper's role: exchange `root/d` (a real directory) and `root/alt` (a symlink to the
/// directory outside) until `root/../stop` exists or a minute has passed.
#[test]
fn swapper() {
    let Some(root) = std::env::var_os(SWAPPER_ENV) else {
        return;
    };
    let root = PathBuf::from(root);
    let stop = root.parent().unwrap().join("stop");
    let (d, alt) = (root.join("d"), root.join("alt"));
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut flips = 0u64;
    while Instant::now() < deadline {
        for _ in 0..256 {
            rustix::fs::renameat_with(
                rustix::fs::CWD,
                &d,
                rustix::fs::CWD,
                &alt,
                rustix::fs::RenameFlags::EXCHANGE,
            )
            .unwrap();
            flips += 1;
        }
        if stop.exists() {
            break;
        }
    }
    eprintln!("swapper: {flips} flips");
}

/// A temporary directory holding `root/d/f.txt` (inside), `root/alt` (a symlink to
/// `outside/`) and `outside/f.txt` (the canary), with the swapper running.
struct Race {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    swapper: Child,
}

impl Race {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("d/f.txt"), "inside\n").unwrap();
        std::fs::write(outside.join("f.txt"), format!("{CANARY}\n")).unwrap();
        std::fs::write(outside.join("only-outside.txt"), "").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("alt")).unwrap();
        let swapper = Command::new(std::env::current_exe().unwrap())
            .args([
                "builtin_a_swapped_symlink_never_wins_the_race::swapper",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SWAPPER_ENV, &root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        // Let the child start flipping before the first call.
        let started = Instant::now();
        let first = std::fs::symlink_metadata(root.join("d"))
            .unwrap()
            .file_type();
        while std::fs::symlink_metadata(root.join("d"))
            .map(|m| m.file_type() == first)
            .unwrap_or(true)
            && started.elapsed() < Duration::from_secs(10)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        Self {
            _dir: dir,
            base,
            root,
            outside,
            swapper,
        }
    }

    fn sandbox(&self) -> Sandbox {
        Sandbox::new(&self.root).unwrap()
    }

    /// Files outside the root other than the canary.
    fn strays(&self) -> Vec<String> {
        std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name != "f.txt" && name != "only-outside.txt")
            .collect()
    }
}

impl Drop for Race {
    fn drop(&mut self) {
        let _ = std::fs::write(self.base.join("stop"), "");
        let _ = self.swapper.kill();
        let _ = self.swapper.wait();
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn read_file_never_reads_through_a_swapped_symlink() {
    let race = Race::start();
    let tool = ReadFile::new(race.sandbox());
    let (mut escapes, mut inside, mut refused) = (0, 0, 0);
    runtime().block_on(async {
        for _ in 0..TRIES {
            let args = serde_json::from_value(json!({"path": "d/f.txt"})).unwrap();
            match tool.call(args, ToolContext::new("race")).await {
                Ok(out) if out.to_text().contains(CANARY) => escapes += 1,
                Ok(out) if out.to_text().contains("inside") => inside += 1,
                _ => refused += 1,
            }
        }
    });
    eprintln!("read_file: {escapes} escapes, {inside} inside, {refused} refused of {TRIES}");
    assert_eq!(
        escapes, 0,
        "read the canary outside the root {escapes} times of {TRIES}"
    );
    assert!(inside > 0, "the race never let a read through");
}

#[test]
fn write_file_never_writes_through_a_swapped_symlink() {
    let race = Race::start();
    let tool = WriteFile::new(race.sandbox());
    let (mut written, mut refused) = (0, 0);
    runtime().block_on(async {
        for i in 0..TRIES {
            let args =
                serde_json::from_value(json!({"path": format!("d/w{i}.txt"), "content": "x"}))
                    .unwrap();
            match tool.call(args, ToolContext::new("race")).await {
                Ok(out) if !out.is_error => written += 1,
                _ => refused += 1,
            }
        }
    });
    let strays = race.strays();
    eprintln!(
        "write_file: {} escapes, {written} written, {refused} refused of {TRIES}",
        strays.len()
    );
    assert!(
        strays.is_empty(),
        "{} of {TRIES} writes landed outside the root",
        strays.len()
    );
    assert!(written > 0, "the race never let a write through");
}

#[test]
fn grep_never_searches_through_a_swapped_symlink() {
    let race = Race::start();
    let tool = Grep::new(race.sandbox());
    let mut escapes = 0;
    runtime().block_on(async {
        for _ in 0..TRIES / 5 {
            let args = serde_json::from_value(json!({"pattern": "CANARY|inside"})).unwrap();
            if let Ok(out) = tool.call(args, ToolContext::new("race")).await
                && out.to_text().contains(CANARY)
            {
                escapes += 1;
            }
        }
    });
    eprintln!("grep: {escapes} escapes of {}", TRIES / 5);
    assert_eq!(
        escapes, 0,
        "grep read the canary outside the root {escapes} times"
    );
}

#[test]
fn glob_and_list_dir_never_list_through_a_swapped_symlink() {
    let race = Race::start();
    let glob = Glob::new(race.sandbox());
    let list = ListDir::new(race.sandbox());
    let mut escapes = 0;
    runtime().block_on(async {
        for _ in 0..TRIES / 5 {
            let args = serde_json::from_value(json!({"pattern": "**/*"})).unwrap();
            if let Ok(out) = glob.call(args, ToolContext::new("race")).await
                && out.to_text().contains("only-outside")
            {
                escapes += 1;
            }
            let args = serde_json::from_value(json!({"path": "d"})).unwrap();
            if let Ok(out) = list.call(args, ToolContext::new("race")).await
                && out.to_text().contains("only-outside")
            {
                escapes += 1;
            }
        }
    });
    eprintln!("glob and list_dir: {escapes} escapes of {}", 2 * TRIES / 5);
    assert_eq!(escapes, 0, "listed a name outside the root {escapes} times");
}
