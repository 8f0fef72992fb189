//! The chat page (feature `page`, `AguiRouter::with_page()`) over real HTTP: `/`, `/app.js`
//! and `/app.css` with their content types and security headers, no token needed for them
//! while `/agui` still wants one, and the same `Host` and `Origin` refusals as the AG-UI
//! routes. The HTML holds nothing the Content-Security-Policy would block.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_web::{AguiRouter, WebConfig};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A server with the page (or without it), its token `page-token`; refused paths are
/// recorded.
struct PageServer {
    url: String,
    refused: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for PageServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn start(with_page: bool) -> PageServer {
    let refused = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&refused);
    let config = WebConfig::default()
        .bearer_token("page-token")
        .on_refusal(move |r| {
            seen.lock()
                .unwrap()
                .push(format!("{} {}", r.status, r.path))
        });
    let agent = Agent::builder(ScriptedClient::new().reply_text("hello"), "scripted")
        .build()
        .unwrap();
    let mut router = AguiRouter::new(move |tools| agent.conversation_with(tools)).config(config);
    if with_page {
        router = router.with_page(mux_web::page::PageOptions::default());
    }
    let router = router.try_build().unwrap();
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(mux_web::serve(listener, router));
    PageServer { url, refused, task }
}

/// An answer read off the socket: status, headers (lower-case names), body.
struct Raw {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `METHOD path` with the given `Host` and extra header lines, `Connection: close`, and
/// reads the whole answer.
async fn raw(url: &str, method: &str, path: &str, host: &str, extra: &str) -> Raw {
    let address = url.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    let request =
        format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n");
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut bytes = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut bytes))
        .await
        .expect("no answer in 10 s")
        .unwrap();
    let split = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("no end of head");
    let head = String::from_utf8_lossy(&bytes[..split]).to_string();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("no status line");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Raw {
        status,
        headers,
        body: bytes[split + 4..].to_vec(),
    }
}

fn own_host(url: &str) -> &str {
    url.trim_start_matches("http://")
}

#[tokio::test]
async fn the_page_and_its_script_are_served_with_their_types_and_a_strict_csp() {
    let server = start(true).await;
    let host = own_host(&server.url);
    for (path, content_type, needle) in [
        (
            "/",
            "text/html; charset=utf-8",
            "<script type=\"module\" src=\"/app.js\">",
        ),
        ("/app.js", "text/javascript; charset=utf-8", "/agui"),
        ("/app.css", "text/css; charset=utf-8", "#log"),
    ] {
        // No token: the page is public, it holds none.
        let answer = raw(&server.url, "GET", path, host, "").await;
        assert_eq!(answer.status, 200, "{path}");
        assert_eq!(answer.header("content-type"), Some(content_type), "{path}");
        assert_eq!(
            answer.header("content-security-policy"),
            Some(mux_web::page::CONTENT_SECURITY_POLICY),
            "{path}"
        );
        assert_eq!(answer.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(answer.header("referrer-policy"), Some("no-referrer"));
        assert_eq!(answer.header("x-frame-options"), Some("DENY"));
        let body = String::from_utf8(answer.body).unwrap();
        assert!(body.contains(needle), "{path} lacks {needle:?}");
        let head = raw(&server.url, "HEAD", path, host, "").await;
        assert_eq!((head.status, head.body.len()), (200, 0), "HEAD {path}");
    }
    // The script is the whole bundle, with the AG-UI client in it.
    let script = raw(&server.url, "GET", "/app.js", host, "").await;
    assert!(script.body.len() > 100_000, "{} bytes", script.body.len());
    // The AG-UI routes still want the token.
    let history = raw(&server.url, "GET", "/agui/threads/t1/messages", host, "").await;
    assert_eq!(history.status, 401);
    let with_token = raw(
        &server.url,
        "GET",
        "/agui/threads/t1/messages",
        host,
        "Authorization: Bearer page-token\r\n",
    )
    .await;
    assert_eq!(with_token.status, 404);
    // Only reads.
    let post = raw(
        &server.url,
        "POST",
        "/",
        host,
        "Content-Type: application/json\r\nContent-Length: 0\r\n",
    )
    .await;
    assert_eq!(post.status, 405);
}

#[tokio::test]
async fn a_foreign_host_or_origin_gets_no_page() {
    let server = start(true).await;
    let host = own_host(&server.url).to_owned();
    let port = host.rsplit(':').next().unwrap().to_owned();
    for path in ["/", "/app.js", "/app.css"] {
        // DNS rebinding: an attacker's name that resolves to 127.0.0.1.
        for foreign in [
            format!("evil.example:{port}"),
            "evil.example".to_owned(),
            format!("localhost.evil.example:{port}"),
            format!("127.0.0.1@evil.example:{port}"),
        ] {
            let answer = raw(&server.url, "GET", path, &foreign, "").await;
            assert_eq!(answer.status, 403, "{path} with Host {foreign}");
            assert!(answer.header("content-security-policy").is_none());
            let body = String::from_utf8_lossy(&answer.body);
            assert!(body.contains("host_not_allowed"), "{body}");
        }
        // An absolute-form target naming another host.
        let absolute = raw(
            &server.url,
            "GET",
            &format!("http://evil.example:{port}{path}"),
            &host,
            "",
        )
        .await;
        assert_eq!(absolute.status, 403, "absolute-form {path}");
        // A cross-origin fetch of the script from another site's page.
        let origin = raw(
            &server.url,
            "GET",
            path,
            &host,
            "Origin: http://evil.example\r\n",
        )
        .await;
        assert_eq!(origin.status, 403, "{path} with a foreign Origin");
        // Two Host headers.
        let twice = raw(&server.url, "GET", path, &host, "Host: evil.example\r\n").await;
        assert_eq!(twice.status, 400, "{path} with two Host headers");
    }
    let refused = server.refused.lock().unwrap().clone();
    assert!(refused.contains(&"403 /app.js".to_owned()), "{refused:?}");
    // Its own origin may fetch it.
    let own = raw(
        &server.url,
        "GET",
        "/app.js",
        &host,
        &format!("Origin: {}\r\n", server.url),
    )
    .await;
    assert_eq!(own.status, 200);
}

#[tokio::test]
async fn without_with_page_there_is_no_page() {
    let server = start(false).await;
    let host = own_host(&server.url);
    for path in ["/", "/app.js", "/app.css"] {
        // Unknown paths go through the AG-UI checks: without the token a 401, with it a 404.
        assert_eq!(raw(&server.url, "GET", path, host, "").await.status, 401);
        let token = "Authorization: Bearer page-token\r\n";
        assert_eq!(raw(&server.url, "GET", path, host, token).await.status, 404);
    }
}

/// The page's HTML loads its script and styles from files, so the policy's `script-src
/// 'self'; style-src 'self'` blocks nothing of its own: no inline script, style or handler.
#[tokio::test]
async fn the_html_has_nothing_inline_that_the_policy_would_block() {
    let server = start(true).await;
    let html = raw(&server.url, "GET", "/", own_host(&server.url), "").await;
    let html = String::from_utf8(html.body).unwrap().to_ascii_lowercase();
    assert!(!html.contains("<style"), "inline <style>");
    assert!(!html.contains(" style="), "a style attribute");
    assert!(!html.contains("javascript:"), "a javascript: URL");
    for (at, _) in html.match_indices("<script") {
        let tag = &html[at..at + html[at..].find('>').unwrap()];
        assert!(tag.contains(" src=\"/"), "an inline script: {tag}");
    }
    for word in html.split(|c: char| c.is_whitespace() || c == '<') {
        assert!(
            !(word.starts_with("on") && word.contains('=')),
            "an inline handler: {word}"
        );
    }
    assert!(html.contains("<link rel=\"stylesheet\" href=\"/app.css\">"));
}
