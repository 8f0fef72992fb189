//! The check-then-use race: another process flips a directory inside the root between a real
//! directory and a symlink to a directory outside it while the file tools run. Whatever the
//! timing, nothing outside is read, written or listed.
//!
//! The swapper is this test binary run again (`std::env::current_exe()`) with
//! [`SWAPPER_ENV`] naming the root whose `d` it flips; [`swapper`] is a no-op test otherwise.
//! Each race ends by stopping the swapper, checking it really flipped, putting the real
//! directory back and making one call that must succeed, so a tool that refused everything
//! would not pass.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mux_tool::builtin::{EditFile, Glob, Grep, ListDir, ReadFile, Sandbox, WriteFile};
use mux_tool::{ToolContext, ToolOutput, TypedTool};
use serde_json::{Value, json};

/// Set in the child process: the root whose `d` and `alt` it exchanges.
const SWAPPER_ENV: &str = "MUX_TEST_RACE_SWAPPER_ROOT";
/// How many calls the read and write races make; the others make a fifth of it.
const TRIES: usize = 1000;
/// What the file outside the root holds; it must never appear in an output.
const CANARY: &str = "CANARY-OUTSIDE-THE-ROOT";

/// The swapper's role: exchange `root/d` (a real directory) and `root/alt` (a symlink to the
/// directory outside) until `root/../stop` exists or a minute has passed, then print how many
/// times.
#[test]
fn swapper() {
    let Some(root) = std::env::var_os(SWAPPER_ENV) else {
        return;
    };
    let root = PathBuf::from(root);
    let stop = root.parent().unwrap().join("stop");
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut flips = 0u64;
    while Instant::now() < deadline && !stop.exists() {
        for _ in 0..256 {
            exchange(&root);
            flips += 1;
        }
    }
    eprintln!("swapper: {flips} flips");
}

/// Swaps `root/d` and `root/alt` atomically.
fn exchange(root: &std::path::Path) {
    rustix::fs::renameat_with(
        rustix::fs::CWD,
        root.join("d"),
        rustix::fs::CWD,
        root.join("alt"),
        rustix::fs::RenameFlags::EXCHANGE,
    )
    .unwrap();
}

/// A temporary directory holding `root/d/` (inside), `root/alt` (a symlink to `outside/`)
/// and `outside/` (the canaries), with the swapper running.
struct Race {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    outside: PathBuf,
    swapper: Option<Child>,
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
        std::fs::write(root.join("d/e.txt"), "count: 0\n").unwrap();
        std::fs::write(outside.join("f.txt"), format!("{CANARY}\n")).unwrap();
        std::fs::write(outside.join("e.txt"), "count: 0\n").unwrap();
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
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Let the child start flipping before the first call.
        let started = Instant::now();
        let is_dir = || {
            std::fs::symlink_metadata(root.join("d"))
                .map(|m| m.is_dir())
                .unwrap_or(false)
        };
        let first = is_dir();
        while is_dir() == first && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
        Self {
            _dir: dir,
            base,
            root,
            outside,
            swapper: Some(swapper),
        }
    }

    fn sandbox(&self) -> Sandbox {
        Sandbox::new(&self.root).unwrap()
    }

    /// Stops the swapper, puts the real directory back at `d` and returns how many times it
    /// flipped.
    fn stop(&mut self) -> u64 {
        std::fs::write(self.base.join("stop"), "").unwrap();
        let mut child = self.swapper.take().unwrap();
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert!(
            child.wait().unwrap().success(),
            "the swapper failed: {stderr}"
        );
        if std::fs::symlink_metadata(self.root.join("d"))
            .unwrap()
            .is_symlink()
        {
            exchange(&self.root);
        }
        stderr
            .lines()
            .find_map(|line| line.strip_prefix("swapper: "))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    /// Files outside the root other than the canaries.
    fn strays(&self) -> Vec<String> {
        std::fs::read_dir(&self.outside)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !matches!(name.as_str(), "f.txt" | "e.txt" | "only-outside.txt"))
            .collect()
    }
}

impl Drop for Race {
    fn drop(&mut self) {
        if let Some(mut child) = self.swapper.take() {
            let _ = std::fs::write(self.base.join("stop"), "");
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Calls `tool` with `args` `tries` times while the swapper runs, then stops it and checks it
/// flipped, and that one call with the real directory in place succeeds. Returns the outputs
/// of the successful calls during the race and how many were refused.
fn race<T: TypedTool>(
    race: &mut Race,
    tool: &T,
    tries: usize,
    args: impl Fn(usize) -> Value,
) -> (Vec<ToolOutput>, usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let call = |i: usize| {
        let args = serde_json::from_value(args(i)).unwrap();
        runtime.block_on(tool.call(args, ToolContext::new("race")))
    };
    let mut outputs = Vec::new();
    let mut refused = 0;
    for i in 0..tries {
        match call(i) {
            Ok(out) if !out.is_error => outputs.push(out),
            _ => refused += 1,
        }
    }
    let flips = race.stop();
    assert!(flips > 0, "the swapper never flipped");
    let settled = call(tries).unwrap();
    assert!(
        !settled.is_error,
        "{} failed with nothing racing it",
        T::NAME
    );
    eprintln!(
        "{}: {} succeeded, {refused} refused of {tries}; {flips} flips",
        T::NAME,
        outputs.len()
    );
    (outputs, refused)
}

#[test]
fn read_file_never_reads_through_a_swapped_symlink() {
    let mut fx = Race::start();
    let tool = ReadFile::new(fx.sandbox());
    let (outputs, _) = race(&mut fx, &tool, TRIES, |_| json!({"path": "d/f.txt"}));
    let escapes = outputs
        .iter()
        .filter(|out| out.to_text().contains(CANARY))
        .count();
    eprintln!("read_file: {escapes} escapes of {TRIES}");
    assert_eq!(
        escapes, 0,
        "read the canary outside the root {escapes} times"
    );
}

#[test]
fn write_file_never_writes_through_a_swapped_symlink() {
    let mut fx = Race::start();
    let tool = WriteFile::new(fx.sandbox());
    race(
        &mut fx,
        &tool,
        TRIES,
        |i| json!({"path": format!("d/w{i}.txt"), "content": "x"}),
    );
    let strays = fx.strays();
    eprintln!("write_file: {} escapes of {TRIES}", strays.len());
    assert!(
        strays.is_empty(),
        "{} writes landed outside the root",
        strays.len()
    );
}

#[test]
fn edit_file_never_edits_through_a_swapped_symlink() {
    let mut fx = Race::start();
    let tool = EditFile::new(fx.sandbox());
    race(
        &mut fx,
        &tool,
        TRIES / 5,
        |i| json!({"path": "d/e.txt", "old_string": "count: ", "new_string": format!("count: {i} "), "replace_all": true}),
    );
    // Each edit that landed outside added its number: "count: 7 3 0".
    let outside = std::fs::read_to_string(fx.outside.join("e.txt")).unwrap();
    let escapes = outside.split_whitespace().count() - 2 + fx.strays().len();
    eprintln!("edit_file: {escapes} escapes of {}", TRIES / 5);
    assert_eq!(escapes, 0, "edits reached outside the root: {outside:?}");
}

#[test]
fn grep_never_searches_through_a_swapped_symlink() {
    let mut fx = Race::start();
    let tool = Grep::new(fx.sandbox());
    let (outputs, _) = race(
        &mut fx,
        &tool,
        TRIES / 5,
        |_| json!({"pattern": "CANARY|inside"}),
    );
    let escapes = outputs
        .iter()
        .filter(|out| out.to_text().contains(CANARY))
        .count();
    eprintln!("grep: {escapes} escapes of {}", TRIES / 5);
    assert_eq!(
        escapes, 0,
        "grep read the canary outside the root {escapes} times"
    );
}

#[test]
fn glob_never_lists_through_a_swapped_symlink() {
    let mut fx = Race::start();
    let tool = Glob::new(fx.sandbox());
    let (outputs, _) = race(&mut fx, &tool, TRIES / 5, |_| json!({"pattern": "**/*"}));
    let escapes = outputs
        .iter()
        .filter(|out| out.to_text().contains("only-outside"))
        .count();
    eprintln!("glob: {escapes} escapes of {}", TRIES / 5);
    assert_eq!(
        escapes, 0,
        "glob listed a name outside the root {escapes} times"
    );
}

#[test]
fn list_dir_never_lists_through_a_swapped_symlink() {
    let mut fx = Race::start();
    let tool = ListDir::new(fx.sandbox());
    let (outputs, _) = race(&mut fx, &tool, TRIES / 5, |_| json!({"path": "d"}));
    let escapes = outputs
        .iter()
        .filter(|out| out.to_text().contains("only-outside"))
        .count();
    eprintln!("list_dir: {escapes} escapes of {}", TRIES / 5);
    assert_eq!(
        escapes, 0,
        "list_dir listed a name outside the root {escapes} times"
    );
}
