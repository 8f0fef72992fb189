//! @ag-ui/client's HttpAgent (which rejects out-of-order events) against the server, and every
//! event checked against @ag-ui/core's zod schema. Scenarios live in
//! tests/web-peers/agui_client.mjs.

use std::time::Duration;

use mux_web::WebConfig;

use crate::common;

async fn scenario(name: &str) {
    let peers = common::web_peers();
    let server = common::start(WebConfig::default()).await;
    let run = tokio::process::Command::new("node")
        .arg(peers.join("agui_client.mjs"))
        .arg(name)
        .arg(&server.url)
        .current_dir(&peers)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap_or_else(|_| panic!("scenario {name} took over 60 s"))
        .expect("node did not start (is Node.js installed?)");
    assert!(
        output.status.success(),
        "scenario {name} failed:\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_run_streams_text_and_a_reload_gets_the_history() {
    scenario("plain").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_interrupts_the_run_and_a_resume_that_approves_runs_the_call() {
    scenario("approve").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resume_that_denies_shows_the_model_the_reason() {
    scenario("deny").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frontend_tool_call_ends_the_run_and_the_next_run_carries_its_result() {
    scenario("frontend").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reattach_after_a_dropped_connection_loses_and_repeats_no_event() {
    scenario("reattach").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_stops_the_run_and_kills_its_sleep_child() {
    scenario("cancel").await;
}
