//! The web_agent example's page in headless Chromium (driven by playwright-core from
//! tests/web-peers): prompt, approve, answer, reload, history, with the server's token taken
//! from the page's URL and sent on every request. Screenshots land in target/tmp/web-page/.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mux::web::WebConfig;

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_streams_asks_for_approval_answers_and_keeps_its_history_after_a_reload() {
    let (peers, chromium) = common::browser();

    // The repository itself is the directory the offline model explores.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let agent = mux_examples::coding_agent::builder(
        Arc::new(mux_examples::offline::offline_model()),
        "scripted",
    )
    .root(root)
    .build()
    .unwrap();
    let app =
        mux_examples::web_agent::app(agent, WebConfig::default().bearer_token("page-token-1234"))
            .unwrap();
    let listener = mux::web::bind(0).await.unwrap();
    let url = format!(
        "http://{}/?token=page-token-1234",
        listener.local_addr().unwrap()
    );
    let server = tokio::spawn(mux::web::serve(listener, app));

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("web-page");
    let run = tokio::process::Command::new("node")
        .arg(peers.join("browser.mjs"))
        .arg(&url)
        .arg(&shots)
        .env("CHROMIUM", &chromium)
        .current_dir(&peers)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the browser test took over 120 s")
        .expect("node did not start (is Node.js installed?)");
    server.abort();
    assert!(
        output.status.success(),
        "the page failed in Chromium (screenshots in {}):\n{}\n{}",
        shots.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(shots.join("web-page-after-reload.png").is_file());
}
