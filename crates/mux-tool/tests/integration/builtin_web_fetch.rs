//! `web_fetch` against a real HTTP server on 127.0.0.1: HTML to markdown, size cap on
//! character boundaries, timeout, status errors, binary refusal and same-host redirects.
#![cfg(feature = "web")]

use std::time::Duration;

use mux_tool::builtin::{WebFetch, WebFetchArgs};
use mux_tool::{Subject, Tool, ToolContext, ToolError, ToolOutput, Typed, TypedTool};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const PAGE: &str = "<!doctype html><html><head><title>T</title><style>.x{color:red}</style>\
    <script>var secret = 1;</script></head><body><h1>Hello</h1>\
    <p>Some <b>bold</b> text and a <a href=\"/next\">link</a>.</p></body></html>";

/// Serves a few fixed routes over HTTP/1.1 until the test ends; returns the port.
async fn serve() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::spawn(respond(stream, port));
        }
    });
    port
}

async fn respond(mut stream: TcpStream, port: u16) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.unwrap();
        if n == 0 {
            return;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let request = String::from_utf8_lossy(&request);
    let path = request.split_whitespace().nth(1).unwrap_or("/").to_owned();
    let (status, headers, body): (&str, String, Vec<u8>) = match path.as_str() {
        "/page" => (
            "200 OK",
            "Content-Type: text/html; charset=utf-8".into(),
            PAGE.into(),
        ),
        "/plain" => (
            "200 OK",
            "Content-Type: text/plain".into(),
            b"just text".to_vec(),
        ),
        "/big" => (
            "200 OK",
            "Content-Type: text/plain; charset=utf-8".into(),
            "é".repeat(1500).into_bytes(),
        ),
        "/binary" => (
            "200 OK",
            "Content-Type: application/octet-stream".into(),
            vec![0, 1, 2, 3],
        ),
        "/untyped" => (
            "200 OK",
            String::new(),
            b"<html><body><p>sniffed</p></body></html>".to_vec(),
        ),
        "/hop" => ("302 Found", "Location: /plain".into(), Vec::new()),
        "/away" => (
            "302 Found",
            format!("Location: http://localhost:{port}/plain"),
            Vec::new(),
        ),
        "/metadata" => (
            "302 Found",
            "Location: http://169.254.169.254/latest/meta-data/".into(),
            Vec::new(),
        ),
        "/metadata-by-number" => (
            "301 Moved Permanently",
            "Location: http://2852039166/latest/meta-data/".into(),
            Vec::new(),
        ),
        "/slow" => {
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100\r\n\r\npartial";
            stream.write_all(head.as_bytes()).await.unwrap();
            tokio::time::sleep(Duration::from_secs(60)).await;
            return;
        }
        _ => (
            "404 Not Found",
            "Content-Type: text/plain".into(),
            b"nope".to_vec(),
        ),
    };
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if !headers.is_empty() {
        head.push_str(&headers);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body).await.unwrap();
    let _ = stream.shutdown().await;
}

async fn fetch(tool: &WebFetch, url: String) -> Result<ToolOutput, ToolError> {
    let args: WebFetchArgs = serde_json::from_value(json!({ "url": url })).unwrap();
    tool.call(args, ToolContext::new("c")).await
}

#[tokio::test]
async fn html_becomes_markdown_without_scripts_or_styles() {
    let port = serve().await;
    let out = fetch(
        &WebFetch::new().unwrap(),
        format!("http://127.0.0.1:{port}/page"),
    )
    .await
    .unwrap();
    assert!(!out.is_error);
    let text = out.to_text();
    assert!(text.contains("# Hello"), "{text}");
    assert!(
        text.contains("Some **bold** text and a [link](/next)."),
        "{text}"
    );
    assert!(
        !text.contains("secret") && !text.contains("color:red"),
        "{text}"
    );
    assert_eq!(out.metadata["status"], json!(200));

    let out = fetch(
        &WebFetch::new().unwrap(),
        format!("http://127.0.0.1:{port}/untyped"),
    )
    .await
    .unwrap();
    assert_eq!(out.to_text(), "sniffed");
}

#[tokio::test]
async fn the_size_cap_cuts_on_a_character_boundary() {
    let port = serve().await;
    let tool = WebFetch::new().unwrap().max_bytes(1001);
    let out = fetch(&tool, format!("http://127.0.0.1:{port}/big"))
        .await
        .unwrap();
    let text = out.to_text();
    assert!(text.starts_with(&"é".repeat(500)), "{text}");
    assert!(!text.contains('\u{FFFD}'), "{text}");
    assert!(
        text.ends_with("[content cut: only the first 1001 bytes were read]"),
        "{text}"
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let port = serve().await;
    let tool = WebFetch::with_timeout(Duration::from_millis(300)).unwrap();
    let err = fetch(&tool, format!("http://127.0.0.1:{port}/slow"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
}

#[tokio::test]
async fn statuses_binary_bodies_and_schemes_are_reported() {
    let port = serve().await;
    let tool = WebFetch::new().unwrap();
    let out = fetch(&tool, format!("http://127.0.0.1:{port}/missing"))
        .await
        .unwrap();
    assert!(out.is_error);
    assert_eq!(
        out.to_text(),
        format!("HTTP 404 Not Found from http://127.0.0.1:{port}/missing\nnope")
    );

    let out = fetch(&tool, format!("http://127.0.0.1:{port}/binary"))
        .await
        .unwrap();
    assert!(
        out.is_error && out.to_text().contains("binary content"),
        "{}",
        out.to_text()
    );

    let err = fetch(&tool, "file:///etc/passwd".into()).await.unwrap_err();
    assert!(err.to_string().contains("only http and https"), "{err}");
    let err = fetch(&tool, "not a url".into()).await.unwrap_err();
    assert!(err.to_string().contains("bad URL"), "{err}");

    // Nothing listens on the port of a dropped listener.
    let closed = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = fetch(&tool, format!("http://127.0.0.1:{closed}/"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("could not connect"), "{err}");
}

#[tokio::test]
async fn redirects_are_followed_only_within_the_host() {
    let port = serve().await;
    let tool = WebFetch::new().unwrap();
    let out = fetch(&tool, format!("http://127.0.0.1:{port}/hop"))
        .await
        .unwrap();
    assert_eq!(out.to_text(), "just text");
    assert_eq!(
        out.metadata["url"],
        json!(format!("http://127.0.0.1:{port}/plain"))
    );

    let out = fetch(&tool, format!("http://127.0.0.1:{port}/away"))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(
        out.to_text()
            .contains("redirects to another host: http://localhost:"),
        "{}",
        out.to_text()
    );
}

#[tokio::test]
async fn a_redirect_to_an_internal_address_is_reported_not_followed() {
    let port = serve().await;
    let tool = WebFetch::with_timeout(Duration::from_secs(5)).unwrap();
    for route in ["metadata", "metadata-by-number"] {
        let out = fetch(&tool, format!("http://127.0.0.1:{port}/{route}"))
            .await
            .unwrap();
        assert!(out.is_error, "{route}");
        assert!(
            out.to_text().contains("redirects to another host: http://"),
            "{route}: {}",
            out.to_text()
        );
        assert!(out.metadata["status"].as_u64().unwrap() >= 300, "{route}");
    }
}

/// The machine's host name, when it resolves to loopback addresses only (as `127.0.0.1 vm`
/// in /etc/hosts does); `None` where it does not, and the test has nothing to show.
fn a_name_for_loopback() -> Option<String> {
    use std::net::ToSocketAddrs;
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim().to_owned();
    let addrs: Vec<_> = (name.as_str(), 0).to_socket_addrs().ok()?.collect();
    let loopback = !addrs.is_empty() && addrs.iter().all(|a| a.ip().is_loopback());
    let internal = mux_tool::address::classify_host(&name).is_some();
    (loopback && !internal).then_some(name)
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused() {
    let Some(name) = a_name_for_loopback() else {
        eprintln!("skipped: the host name does not resolve to loopback only");
        return;
    };
    let port = serve().await;
    let tool = WebFetch::with_timeout(Duration::from_secs(5)).unwrap();
    let err = fetch(&tool, format!("http://{name}:{port}/plain"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("a loopback address"),
        "{name}: {err}"
    );
    // The address itself is the permission layer's to judge; the tool fetches it.
    let out = fetch(&tool, format!("http://127.0.0.1:{port}/plain"))
        .await
        .unwrap();
    assert_eq!(out.to_text(), "just text");
}

#[test]
fn the_subject_is_the_url_and_the_tool_is_read_only_and_open_world() {
    let tool = Typed::new(WebFetch::new().unwrap()).unwrap();
    assert_eq!(
        tool.subject(&json!({"url": "https://docs.rs/mux"})),
        Subject::url("https://docs.rs/mux")
    );
    let annotations = tool.spec().annotations;
    assert!(annotations.read_only && annotations.open_world);
}
