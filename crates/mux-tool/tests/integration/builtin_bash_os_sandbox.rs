//! The OS sandbox around `bash`, against real processes: an allowed command that reaches
//! outside the root, opens a socket or leaves its process group is contained, and the model
//! reads why. Every destructive command points only at paths inside this test's temp dir.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::path::Path;

use mux_tool::builtin::SandboxPolicy;

use crate::common::{self, Layout, bash, run, wait_gone};

/// The common layout, with `outside/keep.txt` and a symlink `root/link_out` to `outside`.
fn layout() -> Layout {
    let layout = common::layout();
    std::fs::write(layout.outside.join("keep.txt"), "keep").unwrap();
    std::os::unix::fs::symlink(&layout.outside, layout.root.join("link_out")).unwrap();
    layout
}

/// The read-only view answers `EROFS`, Landlock `EACCES`; either is a refusal.
fn refused(text: &str) -> bool {
    text.contains("Permission denied") || text.contains("Read-only file system")
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

#[tokio::test]
async fn writes_outside_the_root_are_refused_and_inside_work() {
    let l = layout();
    let bash = bash(&l.root, SandboxPolicy::WorkspaceWrite);

    let out = run(&bash, "echo hi > inside.txt && cat inside.txt").await;
    assert!(
        !out.is_error && out.to_text().contains("hi"),
        "{}",
        out.to_text()
    );

    let target = l.outside.join("touched");
    let out = run(&bash, &format!("touch {}", quoted(&target))).await;
    assert!(out.is_error, "{}", out.to_text());
    assert!(refused(&out.to_text()), "{}", out.to_text());
    assert!(!target.exists());

    let keep = l.outside.join("keep.txt");
    let out = run(&bash, &format!("rm -f {}", quoted(&keep))).await;
    assert!(out.is_error && refused(&out.to_text()), "{}", out.to_text());
    assert!(keep.exists());

    let out = run(&bash, "echo through > link_out/via_link.txt").await;
    assert!(out.is_error && refused(&out.to_text()), "{}", out.to_text());
    assert!(!l.outside.join("via_link.txt").exists());

    // Reading outside is allowed; writing to /dev/null and the command's own temp dir too.
    let out = run(
        &bash,
        &format!(
            "cat {} > /dev/null && echo scratch > \"$TMPDIR/x\" && cat \"$TMPDIR/x\"",
            quoted(&keep)
        ),
    )
    .await;
    assert!(
        !out.is_error && out.to_text().contains("scratch"),
        "{}",
        out.to_text()
    );
}

#[tokio::test]
async fn read_only_writes_nothing_in_the_root_and_full_access_is_unconfined() {
    let l = layout();
    let out = run(
        &bash(&l.root, SandboxPolicy::ReadOnly),
        "echo x > inside.txt",
    )
    .await;
    assert!(out.is_error && refused(&out.to_text()), "{}", out.to_text());
    assert!(!l.root.join("inside.txt").exists());

    let target = l.outside.join("full_access");
    let out = run(
        &bash(&l.root, SandboxPolicy::FullAccess),
        &format!("touch {}", quoted(&target)),
    )
    .await;
    assert!(!out.is_error, "{}", out.to_text());
    assert!(target.exists());
}

#[tokio::test]
async fn the_network_is_off_unless_allowed() {
    let l = layout();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let python = format!(
        "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), timeout=5); print(\"connected\")'"
    );
    let out = run(&bash(&l.root, SandboxPolicy::WorkspaceWrite), &python).await;
    assert!(out.is_error, "{}", out.to_text());
    assert!(!out.to_text().contains("connected"), "{}", out.to_text());
    assert!(
        out.to_text().contains("Operation not permitted"),
        "{}",
        out.to_text()
    );

    let curl = format!("curl -sS --max-time 5 http://127.0.0.1:{port}/");
    let out = run(&bash(&l.root, SandboxPolicy::WorkspaceWrite), &curl).await;
    assert!(out.is_error, "{}", out.to_text());

    let open = bash(&l.root, SandboxPolicy::WorkspaceWrite).network(true);
    let out = run(&open, &python).await;
    assert!(
        !out.is_error && out.to_text().contains("connected"),
        "{}",
        out.to_text()
    );
}

#[tokio::test]
async fn no_descendant_outlives_the_command() {
    let l = layout();
    let bash = bash(&l.root, SandboxPolicy::WorkspaceWrite);
    // A new session would leave the process group that is killed with the command: refused.
    let out = run(
        &bash,
        "setsid -f sh -c 'echo $$ > escaped.pid; sleep 300'; sleep 0.5",
    )
    .await;
    assert!(
        out.to_text().contains("Operation not permitted"),
        "{}",
        out.to_text()
    );
    assert!(!l.root.join("escaped.pid").exists());

    // A background child that outlives its parent dies with the process group.
    let out = run(&bash, "(sleep 300 & echo $! > bg.pid) ; echo started").await;
    assert!(!out.is_error, "{}", out.to_text());
    let pid: u32 = std::fs::read_to_string(l.root.join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        wait_gone(pid).await,
        "the background child {pid} outlived the command"
    );
}
