//! `Server`: a silent connection and a stalled body are closed after their timeouts, and a
//! graceful shutdown lets a response in progress finish while refusing new connections.

use std::time::Duration;

use mux_web::{ServeLimits, Server, WebConfig};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::common;

/// Reads until the server closes the connection; the bytes it sent first.
async fn until_closed(tcp: &mut TcpStream, within: Duration) -> Vec<u8> {
    let mut seen = Vec::new();
    let read = async {
        let mut buffer = [0u8; 1024];
        loop {
            match tcp.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.extend_from_slice(&buffer[..n]),
            }
        }
    };
    tokio::time::timeout(within, read)
        .await
        .expect("the server kept the connection open");
    seen
}

#[tokio::test]
async fn silent_connections_stalled_bodies_and_idle_keep_alives_are_closed() {
    let (router, _dir) = common::router(WebConfig::default());
    let listener = mux_web::bind(0).await.unwrap();
    let address = listener.local_addr().unwrap();
    let limits = ServeLimits::default()
        .header_read_timeout(Duration::from_millis(300))
        .idle_timeout(Duration::from_millis(300))
        .body_read_timeout(Duration::from_millis(300));
    let server = tokio::spawn(Server::new(listener, router).limits(limits).run());

    let mut silent = TcpStream::connect(address).await.unwrap();
    let mut partial = TcpStream::connect(address).await.unwrap();
    partial
        .write_all(b"GET /agui/threads/t/messages HTTP/1.1\r\nHost: 127")
        .await
        .unwrap();
    let mut stalled = TcpStream::connect(address).await.unwrap();
    let head = format!(
        "POST /agui HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{"
    );
    stalled.write_all(head.as_bytes()).await.unwrap();
    let mut idle = TcpStream::connect(address).await.unwrap();
    let get = format!("GET /agui/threads/t/messages HTTP/1.1\r\nHost: {address}\r\n\r\n");
    idle.write_all(get.as_bytes()).await.unwrap();

    let within = Duration::from_secs(10);
    assert!(until_closed(&mut silent, within).await.is_empty());
    until_closed(&mut partial, within).await;
    until_closed(&mut stalled, within).await;
    let answered = until_closed(&mut idle, within).await;
    assert!(
        answered.starts_with(b"HTTP/1.1 404"),
        "{}",
        String::from_utf8_lossy(&answered)
    );
    server.abort();
}

#[tokio::test]
async fn a_graceful_shutdown_finishes_the_run_in_progress_and_takes_no_new_connection() {
    let (router, _dir) = common::router(WebConfig::default());
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(
        Server::new(listener, router)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .run(),
    );
    let http = reqwest::Client::new();
    // "slow" runs five 150 ms tool calls.
    let input = json!({"threadId": "t-stop", "runId": "r1", "messages": [{"id": "m", "role": "user", "content": "slow"}]});
    let response = http
        .post(format!("{url}/agui"))
        .json(&input)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    stop.send(()).unwrap();
    let body = tokio::time::timeout(Duration::from_secs(20), response.text())
        .await
        .unwrap()
        .unwrap();
    assert!(
        body.contains("\"RUN_FINISHED\""),
        "the run in progress was cut: {body}"
    );
    let served = tokio::time::timeout(Duration::from_secs(20), server)
        .await
        .unwrap()
        .unwrap();
    assert!(served.is_ok());
    assert!(
        reqwest::get(format!("{url}/")).await.is_err(),
        "a new connection was served"
    );
}

#[tokio::test]
async fn three_hundred_silent_sockets_at_a_cap_of_256_do_not_delay_a_get() {
    let (router, _dir) = common::router(WebConfig::default());
    let listener = mux_web::bind(0).await.unwrap();
    let address = listener.local_addr().unwrap();
    let limits = ServeLimits::default().max_connections(256);
    let server = tokio::spawn(Server::new(listener, router).limits(limits).run());
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(TcpStream::connect(address).await.unwrap());
    }
    // Let the server accept what it will before the real request.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut tcp = TcpStream::connect(address).await.unwrap();
    let get = format!(
        "GET /agui/threads/t/messages HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    );
    tcp.write_all(get.as_bytes()).await.unwrap();
    // A hang detector, not a timing assertion.
    let answered = until_closed(&mut tcp, Duration::from_secs(5)).await;
    assert!(
        answered.starts_with(b"HTTP/1.1 404"),
        "{}",
        String::from_utf8_lossy(&answered)
    );
    drop(idle);
    server.abort();
}
