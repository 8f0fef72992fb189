//! The web_agent example as shipped without a token (`--no-token`), attacked from a page on
//! another loopback origin in headless Chromium (tests/web-peers/cross_site.mjs): a no-cors
//! `text/plain` fetch and two form POSTs to /agui. No run starts, and the server logs each
//! refusal. Then a DNS-rebinding-style request (a foreign `Host`) is refused too.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;

/// The example running in a temporary directory, killed on drop; its stderr is collected.
struct Example {
    child: std::process::Child,
    url: String,
    stderr: Arc<Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Example {
    fn start(args: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("README.md"), "# a project\n").unwrap();
        let mut command = Command::new(common::example("web_agent"));
        common::without_provider_keys(&mut command);
        let mut child = command
            .args(["--port", "0"])
            .args(args)
            .current_dir(dir.path())
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
            _dir: dir,
        }
    }

    /// Waits until stderr has `count` lines containing `needle` (at most 10 s).
    fn logged(&self, needle: &str, count: usize) -> String {
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

fn history_status(url: &str, thread: &str) -> u16 {
    let host = url.trim_start_matches("http://");
    raw_status(
        url,
        &format!(
            "GET /agui/threads/{thread}/messages HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        ),
    )
}

#[test]
fn a_page_on_another_origin_cannot_start_a_run_and_a_foreign_host_is_refused() {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/web-peers");
    assert!(
        peers.join("node_modules/playwright-core").is_dir(),
        "playwright-core is not installed in {}: run `cargo xtask peers`",
        peers.display()
    );
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "no Chromium at {chromium}: install Debian's `chromium` (.ci/run does) or set CHROMIUM"
    );
    let server = Example::start(&["--no-token"]);
    assert!(
        server
            .logged("WARNING: --no-token", 1)
            .contains("can read every thread")
    );

    let output = Command::new("node")
        .arg(peers.join("cross_site.mjs"))
        .arg(&server.url)
        .env("CHROMIUM", &chromium)
        .current_dir(&peers)
        .output()
        .expect("node did not start (is Node.js installed?)");
    assert!(
        output.status.success(),
        "the attacker page failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let report: Value = serde_json::from_slice(output.stdout.trim_ascii()).unwrap();
    let seen = &report["seen"];
    for attempt in ["fetch-no-cors", "form-text", "form-urlencoded"] {
        assert_eq!(seen[attempt], 403, "{attempt}: {report}");
    }
    let log = server.logged("refused POST /agui (403 origin_not_allowed)", 3);
    assert_eq!(
        log.matches("refused POST /agui (403 origin_not_allowed)")
            .count(),
        3,
        "every attempt is logged:\n{log}"
    );
    let attacker = report["attacker"].as_str().unwrap().trim_end_matches('/');
    assert!(
        log.contains(&format!("Origin `{attacker}` is not allowed")),
        "{log}"
    );
    for thread in ["evil-fetch", "evil-form-text", "evil-form-url"] {
        assert_eq!(
            history_status(&server.url, thread),
            404,
            "a run started on {thread}"
        );
    }

    // DNS rebinding: the attacker's name resolved to 127.0.0.1 reaches the server with its
    // own name as Host.
    let port = server.url.rsplit(':').next().unwrap();
    let rebound = format!(
        "GET /agui/threads/evil-fetch/messages HTTP/1.1\r\nHost: attacker.example:{port}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw_status(&server.url, &rebound), 403);
    let body = r#"{"threadId":"evil-rebind","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}"#;
    let post = format!(
        "POST /agui HTTP/1.1\r\nHost: attacker.example:{port}\r\nOrigin: http://attacker.example:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(raw_status(&server.url, &post), 403);
    let log = server.logged("host_not_allowed", 2);
    assert_eq!(log.matches("(403 host_not_allowed)").count(), 2, "{log}");
    assert_eq!(history_status(&server.url, "evil-rebind"), 404);
    // The server's own Host is still served (404: no such thread, not a 403).
    assert_eq!(history_status(&server.url, "anything"), 404);
}
