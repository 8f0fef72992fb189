//! The A2A server at its door: 300 silent TCP connections do not lock out a client. The
//! accept loop is mux-http's (the one every mux server uses): at the cap a new connection
//! sheds the oldest idle one, before any token is checked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use mux_a2a::{A2aConfig, A2aServer};
use mux_llm::testing::ScriptedClient;
use tokio::net::TcpStream;

mod support;

use support::agent;

#[tokio::test]
async fn three_hundred_silent_sockets_do_not_delay_the_card() {
    let dir = tempfile::tempdir().unwrap();
    let server = A2aServer::new(agent(ScriptedClient::new(), dir.path()))
        .config(A2aConfig::default())
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let mut idle = Vec::new();
    for _ in 0..300 {
        idle.push(TcpStream::connect(server.local_addr()).await.unwrap());
    }
    // Let the server accept what it will before the real request.
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A hang detector, not a timing assertion.
    let card = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap()
        .get(format!("{}.well-known/agent-card.json", server.url()))
        .send()
        .await
        .expect("the card is answered in time");
    assert_eq!(card.status(), 200);
    let card: serde_json::Value = card.json().await.unwrap();
    assert!(card["name"].is_string(), "{card}");
    drop(idle);
    server.shutdown().await;
}
