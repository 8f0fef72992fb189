//! The temporal_agent example as a real process: without a server it says what it needs and
//! exits successfully; against the Temporal CLI's dev server (installed by mux-testkit into
//! a venv under the target dir) it runs a prompt whose call needs approval, answered on stdin.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use mux_testkit::temporal::DevServer;

fn run(dir: &Path, env: &[(&str, String)], args: &[&str], stdin: &str) -> (Output, String, String) {
    let mut command = Command::new(crate::common::example("temporal_agent"));
    command
        .current_dir(dir)
        .args(args)
        .env_remove("TEMPORAL_ADDRESS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::common::without_provider_keys(&mut command);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    crate::common::finish(child, "temporal_agent", Duration::from_secs(120))
}

#[test]
fn without_a_server_it_says_what_it_needs_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let (output, stdout, stderr) = run(dir.path(), &[], &[], "");
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("needs a Temporal server"), "{stdout}");
    assert!(stdout.contains("TEMPORAL_ADDRESS"), "{stdout}");
}

#[test]
fn on_a_dev_server_a_call_is_approved_on_stdin_and_runs() {
    let server = DevServer::start(Path::new(env!("CARGO_TARGET_TMPDIR"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (output, stdout, stderr) = run(
        dir.path(),
        &[("TEMPORAL_ADDRESS", server.address())],
        &[r#"call write_file {"path": "a.txt", "content": "hi"}"#],
        "y\n",
    );
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("approve `write_file`"), "{stdout}");
    assert!(stdout.contains("(offline) write_file returned"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "hi"
    );
}
