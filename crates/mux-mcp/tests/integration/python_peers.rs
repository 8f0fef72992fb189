//! Interop with Python servers: our own Python SDK server (2026-07-28, `server/discover`),
//! `mcp-server-time` and `mcp-server-git` from PyPI.

use crate::common;

use std::time::Duration;

use mux_mcp::{CallError, McpEvent, ServerSpec};
use mux_tool::{Content, ProgressSender, Tool, ToolContext, ToolError, ToolUpdate};
use serde_json::json;

/// Starts our Python SDK server as `py` on `coordinator` and checks it speaks 2026-07-28.
async fn start_modern(coordinator: &mux_mcp::Coordinator) -> mux_mcp::ServerConnection {
    let report = coordinator
        .start_all_and_wait(vec![common::modern("py")])
        .await
        .unwrap();
    assert_eq!(report.connected, ["py"], "{report:?}");
    let connection = coordinator.connection("py").unwrap();
    assert_eq!(connection.protocol_version().as_deref(), Some("2026-07-28"));
    connection
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_server_connects_through_discover_and_works() {
    let coordinator = common::coordinator();
    let connection = start_modern(&coordinator).await;
    let tools = coordinator.tools();

    let out = common::find(&tools, "mcp__py__add")
        .call(json!({"a": 2, "b": 40}), ToolContext::new("a"))
        .await
        .unwrap();
    assert!(out.to_text().contains("42"), "{out:?}");
    assert!(
        out.content
            .iter()
            .any(|c| matches!(c, Content::Json { value } if value["result"] == 42)),
        "{out:?}"
    );

    // The call's effect key travels in `_meta`, so the server can make its effect once.
    let cx = ToolContext::new("k").with_effect_key(mux_tool::EffectKey::new("s1:2:toolu_7", 2));
    let out = common::find(&tools, "mcp__py__effect_key")
        .call(json!({}), cx)
        .await
        .unwrap();
    assert!(out.to_text().starts_with("s1:2:toolu_7 2\n"), "{out:?}");

    let out = common::find(&tools, "mcp__py__fail")
        .call(json!({"reason": "no such thing"}), ToolContext::new("f"))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(out.to_text().contains("no such thing"), "{out:?}");

    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let out = common::find(&tools, "mcp__py__slow")
        .call(
            json!({"steps": 3}),
            ToolContext::new("s").with_progress(ProgressSender::new(tx)),
        )
        .await
        .unwrap();
    assert!(out.to_text().starts_with("done after 3 steps"), "{out:?}");
    let mut progress = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let ToolUpdate::Progress { progress: p, .. } = event.update {
            progress.push(p);
        }
    }
    assert_eq!(progress, [1.0, 2.0, 3.0]);

    // Health checks on a 2026-07-28 session use server/discover (there is no ping).
    connection
        .check_health(Duration::from_secs(5))
        .await
        .unwrap();
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_call_on_a_2026_07_28_server_ends_it() {
    let coordinator = common::running(common::modern("py")).await;
    common::cancel_once_started(
        &coordinator,
        "mcp__py__slow",
        json!({"steps": 1000}),
        "long",
    )
    .await;
    let add = common::find(&coordinator.tools(), "mcp__py__add");
    assert!(
        add.call(json!({"a": 1, "b": 1}), ToolContext::new("n"))
            .await
            .unwrap()
            .to_text()
            .contains('2')
    );
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_server_time_and_mcp_server_git_answer() {
    let repo = std::env::temp_dir().join(format!("mux-mcp-git-{}", std::process::id()));
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let status = std::process::Command::new("git")
            .args(args)
            .current_dir(&repo)
            .status()
            .unwrap();
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("notes.txt"), "hello").unwrap();
    let coordinator = common::coordinator();
    let report = coordinator
        .start_all_and_wait(vec![
            ServerSpec::stdio(
                "time",
                common::venv_bin("mcp-server-time"),
                Vec::<String>::new(),
            ),
            ServerSpec::stdio(
                "git",
                common::venv_bin("mcp-server-git"),
                [
                    "--repository".to_string(),
                    repo.to_string_lossy().into_owned(),
                ],
            ),
        ])
        .await
        .unwrap();
    assert_eq!(report.connected, ["git", "time"], "{report:?}");
    let tools = coordinator.tools();
    let out = common::find(&tools, "mcp__time__get_current_time")
        .call(json!({"timezone": "Etc/UTC"}), ToolContext::new("t"))
        .await
        .unwrap();
    assert!(
        !out.is_error && out.to_text().contains("Etc/UTC"),
        "{out:?}"
    );
    let out = common::find(&tools, "mcp__git__git_status")
        .call(json!({"repo_path": repo}), ToolContext::new("g"))
        .await
        .unwrap();
    assert!(
        !out.is_error && out.to_text().contains("notes.txt"),
        "{out:?}"
    );
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modes_select_tool_sets_across_servers() {
    use mux_mcp::{McpFilter, ToolModes};
    use mux_tool::ToolFilter;
    let coordinator = common::coordinator();
    coordinator
        .start_all_and_wait(vec![
            common::modern("py"),
            ServerSpec::stdio(
                "time",
                common::venv_bin("mcp-server-time"),
                Vec::<String>::new(),
            ),
        ])
        .await
        .unwrap();
    let modes: ToolModes = serde_json::from_value(json!({
        "time_only": {"server": "time"},
        "math": {"or": [{"tool": {"server": "py", "tool": "add"}}, {"spec": {"glob": "mcp__py__sh*"}}]},
        "no_py": {"not": {"server": "py"}},
        "read_only": {"spec": "read_only"}
    }))
    .unwrap();
    let names = |mode: &str| -> Vec<String> {
        coordinator
            .tools_for_mode(&modes, mode)
            .unwrap()
            .iter()
            .map(|t| t.spec().name.to_string())
            .collect()
    };
    assert_eq!(
        names("time_only"),
        ["mcp__time__get_current_time", "mcp__time__convert_time"]
    );
    assert_eq!(names("math"), ["mcp__py__add", "mcp__py__shout"]);
    assert_eq!(names("no_py"), names("time_only"));
    assert!(
        names("read_only")
            .iter()
            .all(|n| n.starts_with("mcp__time__")),
        "{:?}",
        names("read_only")
    );
    let err = coordinator.tools_for_mode(&modes, "nope").unwrap_err();
    assert!(
        err.to_string().contains("`nope`") && err.to_string().contains("math"),
        "{err}"
    );
    let filter = McpFilter::And(vec![
        McpFilter::Server("py".into()),
        McpFilter::Spec(ToolFilter::glob("*fail").unwrap()),
    ]);
    assert_eq!(coordinator.tools_matching(&filter).len(), 1);
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_required_round_is_answered_by_the_client_handlers() {
    let giver = common::FormAnswers::accept();
    let coordinator = common::coordinator().with_client_handlers(giver.clone());
    start_modern(&coordinator).await;
    let out = common::find(&coordinator.tools(), "mcp__py__greet")
        .call(json!({}), ToolContext::new("g"))
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert!(out.to_text().contains("Hello, mux!"), "{out:?}");
    assert_eq!(giver.asked(), 1);
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_request_the_handlers_refuse_is_a_typed_error() {
    let coordinator = common::coordinator()
        .with_client_handlers(common::FormAnswers::refuse("no one is at the keyboard"));
    let report = coordinator
        .start_all_and_wait(vec![common::modern("py")])
        .await
        .unwrap();
    assert_eq!(report.connected, ["py"], "{report:?}");
    let result = common::find(&coordinator.tools(), "mcp__py__greet")
        .call(json!({}), ToolContext::new("g"))
        .await;
    let Err(ToolError::Other(error)) = result else {
        panic!("expected a typed error, got {result:?}");
    };
    match error.downcast_ref::<CallError>() {
        Some(CallError {
            server,
            tool,
            failure: mux_mcp::CallFailure::InputRequired { message },
        }) => {
            assert_eq!((server.as_str(), tool.as_str()), ("py", "greet"));
            assert!(message.contains("no one is at the keyboard"), "{message}");
        }
        other => panic!("expected CallError::InputRequired, got {other:?}"),
    }
    coordinator.stop_all().await;
}

fn names(tools: &[mux_mcp::ToolInfo]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// Waits for the `ToolsChanged` event of `py` whose list does (or does not) hold `later`.
async fn later_listed(events: &mut mux_mcp::Events, listed: bool) -> Vec<String> {
    let changed = common::wait_for(events, Duration::from_secs(10), |e| {
        matches!(e, McpEvent::ToolsChanged { server, tools }
            if server == "py" && names(tools).contains(&"later") == listed)
    })
    .await;
    let Some(McpEvent::ToolsChanged { tools, .. }) = changed else {
        panic!("no ToolsChanged event with `later` listed: {listed}")
    };
    names(&tools).iter().map(|n| n.to_string()).collect()
}

fn listens(connection: &mux_mcp::ServerConnection) -> usize {
    connection
        .log()
        .iter()
        .filter(|e| e.message.contains("listening for tool list changes"))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_tool_list_change_arrives_on_the_listen_stream_also_after_a_reconnect() {
    // The Python SDK sends notifications/tools/list_changed at 2026-07-28 only on
    // subscriptions/listen streams, so the list can follow only through one.
    let coordinator = common::running(common::modern("py")).await;
    let connection = coordinator.connection("py").unwrap();
    assert_eq!(connection.protocol_version().as_deref(), Some("2026-07-28"));
    assert_eq!(listens(&connection), 1, "{:?}", connection.log());
    let mut events = coordinator.subscribe();
    let tool_names = || {
        coordinator
            .tools()
            .iter()
            .map(|t| t.spec().name.to_string())
            .collect::<Vec<_>>()
    };
    assert!(!tool_names().contains(&"mcp__py__later".to_string()));

    let out = common::find(&coordinator.tools(), "mcp__py__add_later")
        .call(json!({}), ToolContext::new("add"))
        .await
        .unwrap();
    assert!(out.to_text().starts_with("added"), "{out:?}");
    let listed = later_listed(&mut events, true).await;
    assert!(listed.contains(&"add".to_string()), "{listed:?}");
    let out = common::find(&coordinator.tools(), "mcp__py__later")
        .call(json!({"text": "hi"}), ToolContext::new("later"))
        .await
        .unwrap();
    assert!(out.to_text().starts_with("later: hi"), "{out:?}");

    common::find(&coordinator.tools(), "mcp__py__drop_later")
        .call(json!({}), ToolContext::new("drop"))
        .await
        .unwrap();
    later_listed(&mut events, false).await;
    assert!(!tool_names().contains(&"mcp__py__later".to_string()));

    // A new server process after a crash: the connection listens again.
    let pid = connection.pid().unwrap();
    common::signal(pid, "-KILL");
    common::reconnected(&mut events, Duration::from_secs(20))
        .await
        .expect("reconnected");
    assert_ne!(connection.pid(), Some(pid));
    assert_eq!(listens(&connection), 2, "{:?}", connection.log());
    common::find(&coordinator.tools(), "mcp__py__add_later")
        .call(json!({}), ToolContext::new("add again"))
        .await
        .unwrap();
    later_listed(&mut events, true).await;
    assert!(tool_names().contains(&"mcp__py__later".to_string()));

    // Disconnecting cancels the stream and does not wait on it.
    let pid = connection.pid().unwrap();
    let started = std::time::Instant::now();
    coordinator.stop_all().await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(common::gone_within(pid, Duration::from_secs(2)).await);
    assert!(
        !connection
            .log()
            .iter()
            .any(|e| e.message.contains("relying on unscoped")),
        "{:?}",
        connection.log()
    );
}
