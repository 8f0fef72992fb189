//! Servers that misbehave: never answer, write garbage, cannot start, or die; and the
//! coordinator's handling of them (timeouts, cancellation, coalesced reconnects, no orphans).

use crate::common;

use std::time::Duration;

use mux_mcp::{
    ConnectError, ConnectionOptions, ConnectionState, Coordinator, CoordinatorConfig, McpEvent,
    ReconnectPolicy, ServerConnection, ServerSpec,
};

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mux-mcp-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn quick(connect_timeout: Duration) -> ConnectionOptions {
    ConnectionOptions {
        connect_timeout,
        shutdown_grace: Duration::from_millis(500),
        ..ConnectionOptions::default()
    }
}

/// A shell server that never answers, with a background child in its process group whose
/// pid it writes to `pid_file`.
fn silent(name: &str, pid_file: &std::path::Path) -> ServerSpec {
    ServerSpec::stdio(
        name,
        "sh",
        [
            "-c".to_string(),
            format!("sleep 60 & echo $! > {}; exec sleep 60", pid_file.display()),
        ],
    )
}

async fn read_pid(path: &std::path::Path) -> u32 {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no pid in {}", path.display())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_hits_the_connect_timeout_and_its_group_is_killed() {
    let dir = scratch("silent");
    let pid_file = dir.join("grandchild.pid");
    let connection = ServerConnection::new(
        silent("silent", &pid_file),
        quick(Duration::from_millis(700)),
    );
    let err = connection.connect().await.unwrap_err();
    assert!(matches!(err, ConnectError::Timeout { .. }), "{err:?}");
    assert!(err.to_string().contains("`silent`"), "{err}");
    assert!(matches!(connection.state(), ConnectionState::Failed { .. }));
    let grandchild = read_pid(&pid_file).await;
    assert!(
        common::gone_within(grandchild, Duration::from_secs(3)).await,
        "the process group survived"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_writing_garbage_to_stdout_fails_cleanly() {
    let spec = ServerSpec::stdio(
        "garbage",
        "sh",
        [
            "-c",
            "echo 'starting up' >&2; while :; do echo 'this is not JSON-RPC {'; echo '[1,2'; sleep 0.02; done",
        ],
    );
    let connection = ServerConnection::new(spec, quick(Duration::from_millis(800)));
    let err = connection.connect().await.unwrap_err();
    assert!(matches!(err, ConnectError::Timeout { .. }), "{err:?}");
    assert!(matches!(connection.state(), ConnectionState::Failed { .. }));
    assert!(
        connection.log().iter().any(|e| e.message == "starting up"),
        "stderr is logged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_cannot_start_is_a_spawn_error_keeping_the_os_error() {
    // A file without an execute bit cannot be started, not even by root.
    let dir = tempfile::tempdir().unwrap();
    let not_executable = dir.path().join("not-executable");
    std::fs::write(&not_executable, "#!/bin/sh\n").unwrap();
    let not_executable = not_executable.display().to_string();
    for (command, kind) in [
        ("/nonexistent/mcp-server", std::io::ErrorKind::NotFound),
        (
            not_executable.as_str(),
            std::io::ErrorKind::PermissionDenied,
        ),
    ] {
        let connection = ServerConnection::new(
            ServerSpec::stdio("ghost", command, Vec::<String>::new()),
            quick(Duration::from_secs(5)),
        );
        let err = connection.connect().await.unwrap_err();
        let ConnectError::Spawn { source, .. } = &err else {
            panic!("{command}: {err:?}")
        };
        assert_eq!(source.kind(), kind, "{command}: {err}");
        let chained = std::error::Error::source(&err)
            .and_then(|source| source.downcast_ref::<std::io::Error>())
            .map(std::io::Error::kind);
        assert_eq!(
            chained,
            Some(kind),
            "{command}: the io::Error is the source"
        );
        assert!(
            err.to_string().contains("`ghost`") && err.to_string().contains(command),
            "{err}"
        );
        let ConnectionState::Failed { message, retries } = connection.state() else {
            panic!("{:?}", connection.state())
        };
        assert!(message.contains("cannot start"), "{message}");
        assert_eq!(retries, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_during_the_handshake_fails_without_waiting_for_the_timeout() {
    let connection = ServerConnection::new(
        ServerSpec::stdio("quitter", "sh", ["-c", "echo bye >&2; exit 3"]),
        quick(Duration::from_secs(30)),
    );
    let started = std::time::Instant::now();
    let err = connection.connect().await.unwrap_err();
    assert!(matches!(err, ConnectError::Handshake { .. }), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_attempt_can_be_cancelled() {
    let dir = scratch("cancel");
    let pid_file = dir.join("grandchild.pid");
    let connection =
        ServerConnection::new(silent("slow", &pid_file), quick(Duration::from_secs(60)));
    let mut events = connection.subscribe();
    let attempt = tokio::spawn({
        let connection = connection.clone();
        async move { connection.connect().await }
    });
    common::wait_for(&mut events, Duration::from_secs(5), |e| {
        matches!(
            e,
            McpEvent::StateChanged {
                to: ConnectionState::Connecting,
                ..
            }
        )
    })
    .await
    .unwrap();
    let grandchild = read_pid(&pid_file).await;
    assert!(connection.cancel_connect());
    let result = tokio::time::timeout(Duration::from_secs(5), attempt)
        .await
        .unwrap()
        .unwrap();
    assert!(
        matches!(result, Err(ConnectError::Cancelled { .. })),
        "{result:?}"
    );
    assert_eq!(connection.state(), ConnectionState::Idle);
    assert!(common::gone_within(grandchild, Duration::from_secs(3)).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_reconnect_requests_coalesce_into_one_attempt() {
    let config = CoordinatorConfig {
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        ..CoordinatorConfig::default()
    };
    let coordinator = common::running_on(Coordinator::new(config), common::everything("ev")).await;
    let connection = coordinator.connection("ev").unwrap();
    let pid = connection.pid().unwrap();
    let mut events = coordinator.subscribe();
    common::signal(pid, "-KILL");
    common::failed(&mut events, Duration::from_secs(5))
        .await
        .expect("the loss is noticed");
    // Policy `None`: nothing reconnects on its own.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(matches!(connection.state(), ConnectionState::Failed { .. }));
    let (a, b, c) = tokio::join!(
        coordinator.reconnect("ev"),
        coordinator.reconnect("ev"),
        coordinator.reconnect("ev")
    );
    assert!(a.is_ok() && b.is_ok() && c.is_ok(), "{a:?} {b:?} {c:?}");
    let mut attempts = 0;
    while let Some(mux_mcp::Received::Event(event)) = events.try_recv() {
        if matches!(
            event,
            McpEvent::StateChanged {
                to: ConnectionState::Connecting,
                ..
            }
        ) {
            attempts += 1;
        }
    }
    assert_eq!(attempts, 1);
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_all_reports_connected_and_failed_servers_and_stop_all_leaves_no_child() {
    let dir = scratch("mixed");
    let config = format!(
        r#"{{"mcpServers": {{
            "good": {{"command": "node", "args": ["${{PEERS}}/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"]}},
            "files": {{"command": "node", "args": ["${{PEERS}}/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "{}"]}},
            "bad": {{"command": "/nonexistent/server"}}
        }}}}"#,
        dir.display()
    );
    let peers = common::peers_dir().to_string_lossy().into_owned();
    let specs =
        mux_mcp::parse_config_with(&config, &|name| (name == "PEERS").then(|| peers.clone()))
            .unwrap();
    let coordinator = Coordinator::new(CoordinatorConfig {
        reconnect: ReconnectPolicy::None,
        health_interval: Some(Duration::from_millis(200)),
        ..CoordinatorConfig::default()
    });
    let report = coordinator.start_all_and_wait(specs).await.unwrap();
    assert_eq!(report.connected, ["files", "good"]);
    assert_eq!(report.failed.len(), 1);
    assert_eq!(report.failed[0].0, "bad");
    // Health checks run against live servers without disturbing them.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let snapshot = coordinator.snapshot();
    let names: Vec<_> = snapshot
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.state.name()))
        .collect();
    assert_eq!(
        names,
        [
            ("bad", "failed"),
            ("files", "connected"),
            ("good", "connected")
        ]
    );
    let pids: Vec<u32> = snapshot.servers.iter().filter_map(|s| s.pid).collect();
    assert_eq!(pids.len(), 2);
    coordinator.stop_all().await;
    for pid in pids {
        assert!(!common::alive(pid), "pid {pid} outlived stop_all");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_health_check_leads_to_a_reconnect() {
    let config = CoordinatorConfig {
        reconnect: ReconnectPolicy::Immediate { max_attempts: 3 },
        health_interval: Some(Duration::from_millis(300)),
        health_timeout: Duration::from_millis(500),
        ..CoordinatorConfig::default()
    };
    let coordinator = common::running_on(Coordinator::new(config), common::everything("ev")).await;
    let connection = coordinator.connection("ev").unwrap();
    let pid = connection.pid().unwrap();
    let mut events = coordinator.subscribe();
    // A stopped server still holds its pipes open, so only the health check can notice.
    common::signal(pid, "-STOP");
    let failed = common::failed(&mut events, Duration::from_secs(10)).await;
    let Some(McpEvent::StateChanged {
        to: ConnectionState::Failed { message, .. },
        ..
    }) = failed
    else {
        common::signal(pid, "-KILL");
        panic!("the health check did not notice")
    };
    assert!(message.contains("health check"), "{message}");
    common::reconnected(&mut events, Duration::from_secs(20))
        .await
        .expect("reconnected");
    assert!(
        common::gone_within(pid, Duration::from_secs(3)).await,
        "the stuck server was killed"
    );
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_also_ends_what_the_server_left_in_its_process_group() {
    let dir = scratch("helper");
    let pid_file = dir.join("helper.pid");
    let mux_mcp::TransportSpec::Stdio(everything) = common::everything("x").transport else {
        panic!("server-everything runs over stdio")
    };
    let script = everything.args.join(" ");
    // The server starts a background helper in its own process group, then becomes the
    // real server: when its stdin closes, the server exits and the helper would live on.
    let spec = ServerSpec::stdio(
        "leaves-helper",
        "sh",
        [
            "-c".to_string(),
            format!(
                "sleep 300 & echo $! > '{}'; exec node {script}",
                pid_file.display()
            ),
        ],
    );
    let coordinator = common::coordinator();
    let report = coordinator.start_all_and_wait(vec![spec]).await.unwrap();
    assert_eq!(report.connected, ["leaves-helper"]);
    let helper: u32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let server = coordinator
        .connection("leaves-helper")
        .unwrap()
        .pid()
        .unwrap();
    assert!(common::alive(helper));
    coordinator.stop_all().await;
    assert!(!common::alive(server), "the server outlived stop_all");
    assert!(
        common::gone_within(helper, Duration::from_secs(2)).await,
        "the server's helper {helper} outlived stop_all"
    );
}
