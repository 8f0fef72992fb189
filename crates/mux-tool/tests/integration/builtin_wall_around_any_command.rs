//! [`Wall`] around a command that is not `bash`'s: its pipes work, it runs in its root with a
//! temp dir of its own, it cannot write outside the root, and dropping the [`WalledChild`]
//! kills its whole process group and removes its temp dir. Each refusal has a control that
//! shows the same command succeeding without the wall.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::path::{Path, PathBuf};
use std::process::Stdio;

use mux_tool::builtin::{SandboxPolicy, Wall};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::{is_gone, wait_gone};

/// A script that reports its working directory, its temp dir and the pid of a background
/// `sleep`, then echoes one line read from stdin, then tries to write `$1` and waits.
const SCRIPT: &str = r#"pwd; echo "$TMPDIR"; sleep 1000 & echo $!
read line; echo "echo: $line"
if echo planted > "$1"; then echo wrote; else echo refused; fi
wait"#;

fn command(target: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .args(["-c", SCRIPT, "sh"])
        .arg(target)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    command
}

struct Report {
    pwd: PathBuf,
    tmpdir: PathBuf,
    sleeper: u32,
    echoed: String,
    write: String,
}

/// Talks to the script through `child`'s pipes.
async fn talk(child: &mut tokio::process::Child) -> Report {
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = async || {
        lines
            .next_line()
            .await
            .unwrap()
            .expect("a line from the script")
    };
    let pwd = PathBuf::from(next().await);
    let tmpdir = PathBuf::from(next().await);
    let sleeper = next().await.parse().unwrap();
    stdin.write_all(b"through the pipe\n").await.unwrap();
    stdin.flush().await.unwrap();
    let echoed = next().await;
    let write = next().await;
    Report {
        pwd,
        tmpdir,
        sleeper,
        echoed,
        write,
    }
}

fn places() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap().join("root");
    std::fs::create_dir(&root).unwrap();
    let outside = dir.path().canonicalize().unwrap().join("outside.txt");
    (dir, root, outside)
}

#[tokio::test]
async fn a_walled_command_talks_through_its_pipes_and_writes_only_its_root() {
    let (_dir, root, outside) = places();
    let wall = Wall::new(SandboxPolicy::WorkspaceWrite, &root);
    let mut walled = wall.spawn(command(&outside)).unwrap();
    let report = talk(walled.child_mut()).await;
    assert_eq!(report.pwd, root);
    assert!(report.tmpdir.is_dir(), "{}", report.tmpdir.display());
    assert!(!report.tmpdir.starts_with(&root));
    assert_eq!(report.echoed, "echo: through the pipe");
    assert_eq!(report.write, "refused");
    assert!(!outside.exists());
    assert!(!is_gone(report.sleeper));
    assert_eq!(walled.group(), walled.id());

    drop(walled);
    assert!(
        wait_gone(report.sleeper).await,
        "the background process outlived the WalledChild"
    );
    assert!(!report.tmpdir.exists(), "the temp dir was left behind");

    // Inside the root the same write lands.
    let inside = root.join("inside.txt");
    let mut walled = wall.spawn(command(&inside)).unwrap();
    assert_eq!(talk(walled.child_mut()).await.write, "wrote");
    assert!(inside.exists());
}

#[tokio::test]
async fn without_the_wall_the_same_command_writes_outside() {
    let (_dir, root, outside) = places();
    let mut walled = Wall::new(SandboxPolicy::FullAccess, &root)
        .spawn(command(&outside))
        .unwrap();
    let report = talk(walled.child_mut()).await;
    assert_eq!(report.write, "wrote");
    assert!(outside.exists());
    drop(walled);
    assert!(wait_gone(report.sleeper).await);
}

#[tokio::test]
async fn a_missing_root_starts_nothing() {
    let (dir, _root, outside) = places();
    let missing = dir.path().join("missing");
    let error = Wall::new(SandboxPolicy::ReadOnly, &missing)
        .spawn(command(&outside))
        .unwrap_err();
    assert!(error.to_string().contains("missing"), "{error}");
    assert!(!outside.exists());
}
