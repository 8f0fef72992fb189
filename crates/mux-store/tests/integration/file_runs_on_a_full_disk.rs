//! The file run store on a full disk: a write that does not fit is `Unavailable` (disk full)
//! and changes nothing, even cut off half-way; the next write after space returns succeeds;
//! and the journal reopens with exactly the acknowledged events.
//!
//! The store runs in a child process (this test binary again, `child_process_role`) inside a
//! user and mount namespace of its own (`unshare --user --map-root-user --mount`, as
//! mux-web's disk-full tests do), on a small tmpfs it fills to the last byte.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mux_store::runs::{FileRunStore, RunStatus, RunStore, RunStoreError, StoreFault};
use serde_json::json;

const ROLE: &str = "MUX_FULL_DISK_DIR";
const CHILD_TEST: &str = "file_runs_on_a_full_disk::child_process_role";
const HELD: Duration = Duration::from_secs(60);

/// Fills the file system of `dir` to its last byte with `dir/filler`.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut file = std::fs::File::create(&path).unwrap();
    let chunk = vec![0u8; 64 * 1024];
    for size in [chunk.len(), 4096, 1] {
        while file.write_all(&chunk[..size]).is_ok() {}
    }
    let _ = file.sync_all();
    path
}

fn full(result: Result<impl std::fmt::Debug, RunStoreError>) {
    match result {
        Err(err @ RunStoreError::Unavailable { .. }) => {
            assert_eq!(err.fault(), Some(StoreFault::Full), "{err}")
        }
        other => panic!("a write on a full disk answered {other:?}"),
    }
}

/// Not a test of its own: with `MUX_FULL_DISK_DIR` (a fresh tmpfs), plays the store's
/// process (without it, returns at once).
#[test]
fn child_process_role() {
    let Ok(dir) = std::env::var(ROLE) else {
        return;
    };
    let dir = PathBuf::from(dir);
    crate::runtime().block_on(async {
        let runs = dir.join("runs");
        let store = FileRunStore::open(&runs).await.unwrap();
        store.begin("s", "r", "me", HELD).await.unwrap();
        store
            .append_events("r", "me", &[json!({"n": 1})], None)
            .await
            .unwrap();

        let filler = fill(&dir);
        // Big enough to need pages the disk no longer has: a write cut off half-way.
        let big = json!({"n": 2, "pad": "x".repeat(64 * 1024)});
        full(
            store
                .append_events("r", "me", std::slice::from_ref(&big), None)
                .await,
        );
        full(
            store
                .append_events(
                    "r",
                    "me",
                    std::slice::from_ref(&big),
                    Some(RunStatus::Paused),
                )
                .await,
        );
        let record = store.get("r").await.unwrap();
        assert_eq!((record.last_seq, record.status), (1, RunStatus::Running));

        // Space returns: the next write succeeds at once.
        std::fs::remove_file(&filler).unwrap();
        assert_eq!(
            store
                .append_events(
                    "r",
                    "me",
                    std::slice::from_ref(&big),
                    Some(RunStatus::Paused)
                )
                .await
                .unwrap(),
            2
        );
        drop(store);

        let reopened = FileRunStore::open(&runs).await.unwrap();
        let events = reopened.events_after("r", 0, 10).await.unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].event, big);
        assert_eq!(reopened.get("r").await.unwrap().status, RunStatus::Paused);
        println!("MUX-FULL-DISK-OK");
    });
}

#[test]
fn a_full_disk_refuses_writes_typed_and_the_journal_keeps_only_what_was_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg(
            "mount -t tmpfs -o size=1m mux-full \"$1\" && \
             exec \"$2\" \"$3\" --exact --nocapture --test-threads=1",
        )
        .arg("sh")
        .arg(dir.path())
        .arg(std::env::current_exe().unwrap())
        .arg(CHILD_TEST)
        .env(ROLE, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("running unshare (util-linux)");
    // A hang detector: the child's writes are bounded by WRITE_TIMEOUT each.
    let deadline = Instant::now() + Duration::from_secs(180);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            panic!("the child did not end");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    assert!(
        status.success() && stdout.contains("MUX-FULL-DISK-OK"),
        "the child failed ({status}):\n{stdout}"
    );
}
