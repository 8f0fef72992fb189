//! The security defaults over real HTTP: JSON-only POSTs (415), the Origin check (403), the
//! Host allow-list (403), per-principal threads and runs (404), unguessable interrupt ids,
//! the case-insensitive `Bearer` scheme, and the probe limit (429).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mux_web::{BearerTokens, Principal, WebConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::common::{self, events, events_of, input};

/// Sends `request` as raw bytes and returns the status code of the answer.
async fn raw_status(url: &str, request: String) -> u16 {
    let address = url.trim_start_matches("http://");
    let mut tcp = tokio::net::TcpStream::connect(address).await.unwrap();
    tcp.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    let read = async {
        while !head.ends_with(b"\r\n") {
            if tcp.read(&mut byte).await.unwrap() == 0 {
                break;
            }
            head.push(byte[0]);
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("no answer");
    let line = String::from_utf8_lossy(&head).to_string();
    line.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {line:?}"))
}

/// Whether the thread exists for the (only) principal: its history is not a 404.
async fn thread_exists(url: &str, thread: &str) -> bool {
    let response = reqwest::get(format!("{url}/agui/threads/{thread}/messages"))
        .await
        .unwrap();
    response.status() != 404
}

#[tokio::test]
async fn a_post_whose_body_is_not_json_is_a_415_and_starts_no_run() {
    let server = common::start(WebConfig::default()).await;
    let http = reqwest::Client::new();
    let body = input("t-ct", "r1", "run echo").to_string();
    for content_type in [
        Some("text/plain"),
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/jsonx"),
        Some("application/json+evil"),
        None,
    ] {
        let mut request = http.post(format!("{}/agui", server.url)).body(body.clone());
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 415, "{content_type:?}");
        let answer: Value = response.json().await.unwrap();
        assert_eq!(answer["error"], "unsupported_media_type");
    }
    assert!(
        !thread_exists(&server.url, "t-ct").await,
        "a refused POST started a run"
    );
    let cancel = http
        .post(format!("{}/agui/runs/r1/cancel", server.url))
        .header("content-type", "text/plain")
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 415);

    let response = http
        .post(format!("{}/agui", server.url))
        .header("content-type", "application/json; charset=utf-8")
        .body(input("t-ct", "r2", "hello").to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        events(response).await.last().unwrap()["type"],
        "RUN_FINISHED"
    );
}

#[tokio::test]
async fn a_foreign_origin_is_a_403_and_the_servers_own_and_configured_origins_pass() {
    let refusals = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&refusals);
    let config = WebConfig::default()
        .cors_origin("https://app.example")
        .on_refusal(move |r| seen.lock().unwrap().push((r.status, r.code)));
    let server = common::start(config).await;
    let http = reqwest::Client::new();
    let own = server.url.clone();
    let port = own.rsplit(':').next().unwrap().to_owned();
    for (n, (origin, status)) in [
        ("https://evil.example", 403),
        ("null", 403),
        (
            format!("http://127.0.0.1:{}", port.parse::<u16>().unwrap() + 1).leak() as &str,
            403,
        ),
        ("http://localhost.evil.example", 403),
        (own.as_str(), 200),
        (format!("http://localhost:{port}").leak() as &str, 200),
        ("https://app.example", 200),
    ]
    .into_iter()
    .enumerate()
    {
        let response = http
            .post(format!("{}/agui", server.url))
            .header("origin", origin)
            .json(&input(
                &format!("t-origin-{n}"),
                &format!("r-origin-{n}"),
                "hello",
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status, "{origin}");
        if status == 403 {
            let body: Value = response.json().await.unwrap();
            assert_eq!(body["error"], "origin_not_allowed");
            assert!(!thread_exists(&server.url, &format!("t-origin-{n}")).await);
        } else {
            events(response).await;
        }
    }
    // GETs are checked too.
    let response = http
        .get(format!("{}/agui/threads/t-origin-4/messages", server.url))
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 403);
    assert_eq!(
        refusals.lock().unwrap().len(),
        5,
        "every refusal is reported"
    );
}

#[tokio::test]
async fn a_foreign_host_is_a_403_and_a_missing_host_a_400() {
    let server = common::start(WebConfig::default().allowed_host("agent.example.com")).await;
    let port = server.url.rsplit(':').next().unwrap().to_owned();
    let post = |host: Option<&str>, target: &str| {
        let run = format!(
            "r-host-{}",
            host.unwrap_or("none").replace([':', '.', '@'], "-")
        );
        let body = input(&run, &run, "hello").to_string();
        let host = host.map(|h| format!("Host: {h}\r\n")).unwrap_or_default();
        format!(
            "POST {target} HTTP/1.1\r\n{host}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    for (host, status) in [
        (Some("attacker.example".to_owned()), 403),
        (Some(format!("attacker.example:{port}")), 403),
        (Some(format!("127.0.0.1.attacker.example:{port}")), 403),
        (Some("127.0.0.1:1".to_owned()), 403),
        (Some(format!("user@127.0.0.1:{port}")), 403),
        (None, 400),
        (Some(format!("127.0.0.1:{port}")), 200),
        (Some(format!("localhost:{port}")), 200),
        (Some("agent.example.com".to_owned()), 200),
    ] {
        let status_got = raw_status(&server.url, post(host.as_deref(), "/agui")).await;
        assert_eq!(status_got, status, "Host {host:?}");
    }
    // An absolute-form target must name an allowed host too.
    let absolute = post(
        Some(&format!("127.0.0.1:{port}")),
        "http://attacker.example/agui",
    );
    assert_eq!(raw_status(&server.url, absolute).await, 403);
    // A GET of a thread's history through a rebinding name is refused as well.
    let get = format!(
        "GET /agui/threads/t-host/messages HTTP/1.1\r\nHost: attacker.example:{port}\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(raw_status(&server.url, get).await, 403);
}

/// A server with two principals, alice and bob.
async fn two_principals() -> common::Server {
    let auth = BearerTokens::new()
        .token("alice-token", Principal::new("alice"))
        .token("bob-token", Principal::new("bob"));
    common::start(WebConfig::default().authenticator(auth)).await
}

#[tokio::test]
async fn another_principal_gets_404_for_the_history_runs_reattach_cancel_and_resume() {
    let server = two_principals().await;
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.url);
    let paused = events_of(
        http.post(url("/agui"))
            .bearer_auth("alice-token")
            .json(&input("alice-thread", "alice-run", "run echo")),
    )
    .await;
    let interrupt = paused.last().unwrap()["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let history = http
        .get(url("/agui/threads/alice-thread/messages"))
        .bearer_auth("bob-token")
        .send()
        .await
        .unwrap();
    assert_eq!(history.status(), 404);
    assert_eq!(
        history.json::<Value>().await.unwrap()["error"],
        "thread_not_found"
    );
    let reattach = http
        .get(url("/agui/runs/alice-run/events"))
        .bearer_auth("bob-token")
        .send()
        .await
        .unwrap();
    assert_eq!(reattach.status(), 404);
    let cancel = http
        .post(url("/agui/runs/alice-run/cancel"))
        .bearer_auth("bob-token")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(cancel.status(), 404);
    let run = http
        .post(url("/agui"))
        .bearer_auth("bob-token")
        .json(&input("alice-thread", "bob-run", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(run.status(), 404);
    let mut resume = input("alice-thread", "bob-run-2", "run echo");
    resume["resume"] =
        json!([{"interruptId": interrupt, "status": "resolved", "payload": {"approved": true}}]);
    let resumed = http
        .post(url("/agui"))
        .bearer_auth("bob-token")
        .json(&resume)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 404);
    // Run ids are per principal: bob may use the same run id on his own thread, and learns
    // nothing of alice's.
    let own = http
        .post(url("/agui"))
        .bearer_auth("bob-token")
        .json(&input("bob-thread", "alice-run", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), 200);
    events(own).await;
    // A foreign thread looks exactly like an unknown one.
    let unknown = http
        .get(url("/agui/threads/no-such-thread/messages"))
        .bearer_auth("bob-token")
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
    assert_eq!(
        unknown.json::<Value>().await.unwrap()["error"],
        "thread_not_found"
    );

    // Alice still sees her thread, and her resume runs the call.
    let history: Value = http
        .get(url("/agui/threads/alice-thread/messages"))
        .bearer_auth("alice-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(history["interrupts"][0]["id"], interrupt.as_str());
    resume["runId"] = json!("alice-run-2");
    let resumed = events_of(
        http.post(url("/agui"))
            .bearer_auth("alice-token")
            .json(&resume),
    )
    .await;
    assert_eq!(
        resumed.last().unwrap()["result"],
        "Result: approved-output\n",
        "{resumed:?}"
    );
    let without = http
        .get(url("/agui/threads/alice-thread/messages"))
        .send()
        .await
        .unwrap();
    assert_eq!(without.status(), 401);
}

#[tokio::test]
async fn a_threads_owner_is_kept_in_the_store_and_holds_for_another_server() {
    let store: Arc<dyn mux_orchestrator::session::SessionStore> =
        Arc::new(mux_orchestrator::session::MemorySessionStore::new());
    let auth = || {
        BearerTokens::new()
            .token("alice-token", Principal::new("alice"))
            .token("bob-token", Principal::new("bob"))
    };
    let first = common::start_on(
        WebConfig::default().authenticator(auth()),
        Arc::clone(&store),
    )
    .await;
    let http = reqwest::Client::new();
    let run = http
        .post(format!("{}/agui", first.url))
        .bearer_auth("alice-token")
        .json(&input("kept-thread", "r1", "hello"))
        .send()
        .await
        .unwrap();
    events(run).await;
    let meta = store.load("kept-thread").await.unwrap().meta;
    assert_eq!(meta.extra["mux_web_owner"], "alice", "{meta:?}");
    drop(first);

    // A second server on the same store, with nothing cached.
    let second = common::start_on(WebConfig::default().authenticator(auth()), store).await;
    let url = format!("{}/agui/threads/kept-thread/messages", second.url);
    let bob = http
        .get(&url)
        .bearer_auth("bob-token")
        .send()
        .await
        .unwrap();
    assert_eq!(bob.status(), 404);
    let bob_run = http
        .post(format!("{}/agui", second.url))
        .bearer_auth("bob-token")
        .json(&input("kept-thread", "r2", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(bob_run.status(), 404);
    let alice: Value = http
        .get(&url)
        .bearer_auth("alice-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(alice["messages"][0]["content"], "hello", "{alice}");
}

#[tokio::test]
async fn the_bearer_scheme_is_case_insensitive() {
    let server = common::start(WebConfig::default().bearer_token("tok-1")).await;
    let http = reqwest::Client::new();
    for (n, scheme) in ["bearer", "BEARER", "Bearer", "bEaReR"]
        .into_iter()
        .enumerate()
    {
        let response = http
            .post(format!("{}/agui", server.url))
            .header("authorization", format!("{scheme} tok-1"))
            .json(&input(
                &format!("t-case-{n}"),
                &format!("r-case-{n}"),
                "hello",
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{scheme}");
        events(response).await;
    }
    let wrong = http
        .post(format!("{}/agui", server.url))
        .header("authorization", "bearer tok-2")
        .json(&input("t-case-x", "r", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
}

#[tokio::test]
async fn interrupt_ids_have_an_unguessable_part_and_a_guessed_id_is_refused() {
    let server = common::start(WebConfig::default()).await;
    let http = reqwest::Client::new();
    let mut ids = Vec::new();
    for thread in ["t-guess-1", "t-guess-2"] {
        let paused = events_of(http.post(format!("{}/agui", server.url)).json(&input(
            thread,
            &format!("{thread}-r1"),
            "run echo",
        )))
        .await;
        let interrupt = &paused.last().unwrap()["outcome"]["interrupts"][0];
        let id = interrupt["id"].as_str().unwrap().to_owned();
        let call = interrupt["toolCallId"].as_str().unwrap();
        let random = id
            .strip_prefix(&format!("{thread}-{call}-"))
            .unwrap_or_else(|| panic!("{id}"));
        assert_eq!(random.len(), 32, "{id}");
        assert!(random.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
        ids.push((thread, call.to_owned(), random.to_owned(), id));
    }
    assert_ne!(ids[0].2, ids[1].2, "the random parts differ");

    // The old, predictable form is not an interrupt of the thread.
    let (thread, call, _, real) = ids[0].clone();
    let mut guess = input(thread, "r2", "run echo");
    guess["resume"] = json!([{"interruptId": format!("{thread}-{call}"), "status": "resolved", "payload": {"approved": true}}]);
    let refused = events_of(http.post(format!("{}/agui", server.url)).json(&guess)).await;
    assert_eq!(
        refused.last().unwrap()["code"],
        "unknown_interrupt",
        "{refused:?}"
    );
    // Nor is another thread's interrupt.
    let mut crossed = input(thread, "r3", "run echo");
    crossed["resume"] =
        json!([{"interruptId": ids[1].3, "status": "resolved", "payload": {"approved": true}}]);
    let refused = events_of(http.post(format!("{}/agui", server.url)).json(&crossed)).await;
    assert_eq!(
        refused.last().unwrap()["code"],
        "unknown_interrupt",
        "{refused:?}"
    );
    // The real id still works: the refused guesses approved nothing.
    let mut answer = input(thread, "r4", "run echo");
    answer["resume"] =
        json!([{"interruptId": real, "status": "resolved", "payload": {"approved": false}}]);
    let done = events_of(http.post(format!("{}/agui", server.url)).json(&answer)).await;
    assert_eq!(
        done.last().unwrap()["outcome"]["type"],
        "success",
        "{done:?}"
    );
}

#[tokio::test]
async fn unknown_id_probes_are_rate_limited_per_principal() {
    let auth = BearerTokens::new()
        .token("prober", Principal::new("prober"))
        .token("other", Principal::new("other"));
    let server = common::start(
        WebConfig::default()
            .authenticator(auth)
            .probe_limit(5, Duration::from_secs(60)),
    )
    .await;
    let http = reqwest::Client::new();
    for n in 0..5 {
        let path = if n % 2 == 0 {
            format!("/agui/runs/guess-{n}/events")
        } else {
            format!("/agui/threads/guess-{n}/messages")
        };
        let response = http
            .get(format!("{}{path}", server.url))
            .bearer_auth("prober")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 404, "miss {n}");
    }
    let blocked = http
        .get(format!("{}/agui/runs/guess-9/events", server.url))
        .bearer_auth("prober")
        .send()
        .await
        .unwrap();
    assert_eq!(blocked.status(), 429);
    let retry: u64 = blocked.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let run = http
        .post(format!("{}/agui", server.url))
        .bearer_auth("prober")
        .json(&input("t-probe", "r", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        run.status(),
        429,
        "every route is closed to the prober for the window"
    );
    let other = http
        .post(format!("{}/agui", server.url))
        .bearer_auth("other")
        .json(&input("t-probe", "r", "hello"))
        .send()
        .await
        .unwrap();
    assert_eq!(other.status(), 200, "another principal is not limited");
    events(other).await;
}
