//! The web_agent example as shipped without a token (`--no-token`), attacked from a page on
//! another loopback origin in headless Chromium (tests/web-peers/cross_site.mjs): a no-cors
//! `text/plain` fetch and two form POSTs to /agui. No run starts, and the server logs each
//! refusal. Then a DNS-rebinding-style request (a foreign `Host`) is refused too.

use std::process::Command;

use serde_json::Value;

use crate::common;

fn history_status(url: &str, thread: &str) -> u16 {
    let host = url.trim_start_matches("http://");
    common::raw_status(
        url,
        &format!(
            "GET /agui/threads/{thread}/messages HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        ),
    )
}

#[test]
fn a_page_on_another_origin_cannot_start_a_run_and_a_foreign_host_is_refused() {
    let (peers, chromium) = common::browser();
    let server = common::Example::start(&["--no-token"]);
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
    assert_eq!(common::raw_status(&server.url, &rebound), 403);
    let body = r#"{"threadId":"evil-rebind","runId":"r","messages":[{"id":"m","role":"user","content":"hi"}]}"#;
    let post = format!(
        "POST /agui HTTP/1.1\r\nHost: attacker.example:{port}\r\nOrigin: http://attacker.example:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    assert_eq!(common::raw_status(&server.url, &post), 403);
    let log = server.logged("host_not_allowed", 2);
    assert_eq!(log.matches("(403 host_not_allowed)").count(), 2, "{log}");
    assert_eq!(history_status(&server.url, "evil-rebind"), 404);
    // The server's own Host is still served (404: no such thread, not a 403).
    assert_eq!(history_status(&server.url, "anything"), 404);
}
