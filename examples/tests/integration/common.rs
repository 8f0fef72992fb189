//! What the example tests share.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The variables cargo sets for this crate, shared with xtask.
#[path = "../../../xtask/src/crate_env.rs"]
mod crate_env;

/// Builds the example (a no-op when it is fresh) and returns its path, beside this test's
/// own binary in the target directory. The flags match `cargo xtask test`'s, and the variables
/// cargo set for this test are not passed on (ring's build script tracks
/// `CARGO_MANIFEST_DIR`), so the build reuses the test step's artifacts.
pub(crate) fn example(name: &str) -> PathBuf {
    let mut cargo = Command::new(env!("CARGO"));
    for (key, _) in std::env::vars() {
        if crate_env::is_set_for_a_crate(&key) {
            cargo.env_remove(key);
        }
    }
    let status = cargo
        .args([
            "build",
            "--quiet",
            "--workspace",
            "--all-features",
            "--example",
            name,
        ])
        .status()
        .unwrap();
    assert!(status.success(), "building the example {name} failed");
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// An Anthropic streaming response with the given content blocks.
pub(crate) fn anthropic_sse(blocks: &[Value], stop_reason: &str) -> Vec<u8> {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [], "stop_reason": null, "usage": {"input_tokens": 12, "output_tokens": 1}}})];
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 9}}));
    events.push(json!({"type": "message_stop"}));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect::<String>()
        .into_bytes()
}

/// Removes the variables that pick a provider, so the example runs offline unless the test
/// sets them.
pub(crate) fn without_provider_keys(command: &mut Command) {
    for key in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "MUX_MODEL",
    ] {
        command.env_remove(key);
    }
}

/// The example running in a temporary directory, killed on drop; its stderr is collected.
pub(crate) struct Example {
    pub(crate) child: std::process::Child,
    pub(crate) url: String,
    stderr: Arc<Mutex<String>>,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Example {
    /// Starts the web_agent example with `args` (after `--port 0`).
    pub(crate) fn start(args: &[&str]) -> Self {
        Self::start_with(Command::new(example("web_agent")), args)
    }

    /// Starts `program` (the example, or a shell that execs it) with `args`.
    pub(crate) fn start_with(command: Command, args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "# a project\n").unwrap();
        let mut example = Self::start_in(command, dir.path(), args);
        example._dir = Some(dir);
        example
    }

    /// Starts `program` with `args` in `dir`, a directory the caller made (and keeps).
    pub(crate) fn start_in(mut command: Command, dir: &std::path::Path, args: &[&str]) -> Self {
        without_provider_keys(&mut command);
        let mut child = command
            .args(["--port", "0"])
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut chunk = [0u8; 4096];
            while let Ok(n) = pipe.read(&mut chunk) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&chunk[..n]));
            }
        });
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .expect("the example exited before serving")
                .unwrap();
            if let Some(rest) = line.strip_prefix("Serving on ") {
                break rest
                    .split(' ')
                    .next()
                    .unwrap()
                    .trim_end_matches('/')
                    .to_owned();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Self {
            child,
            url,
            stderr,
            _dir: None,
        }
    }

    /// Waits until stderr has `count` lines containing `needle` (at most 10 s).
    pub(crate) fn logged(&self, needle: &str, count: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = self.stderr.lock().unwrap().clone();
            if text.matches(needle).count() >= count || Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Sends raw bytes and returns the status code of the answer.
pub(crate) fn raw_status(url: &str, request: &str) -> u16 {
    let mut tcp = TcpStream::connect(url.trim_start_matches("http://")).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    tcp.write_all(request.as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(tcp).read_line(&mut line).unwrap();
    line.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {line:?}"))
}

/// tests/web-peers with playwright-core installed, and the Chromium to drive (`CHROMIUM`, or
/// Debian's at /usr/bin/chromium); asserts that both are there.
pub(crate) fn browser() -> (PathBuf, String) {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/web-peers");
    assert!(
        peers.join("node_modules/playwright-core").is_dir(),
        "playwright-core is not installed in {}: run `cargo xtask peers`",
        peers.display()
    );
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "no Chromium at {chromium}: install Debian's `chromium` (apt-get install chromium; .ci/run does) or set CHROMIUM"
    );
    (peers, chromium)
}

/// Waits for `child` to finish, killing it (and failing the test) after `limit`; its output
/// and its stdout and stderr as text. `name` names it in the failure.
pub(crate) fn finish(
    mut child: std::process::Child,
    name: &str,
    limit: Duration,
) -> (std::process::Output, String, String) {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            panic!("{name} did not finish within {} s", limit.as_secs());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stdout, stderr)
}
