//! The web_agent example's page in headless Chromium (driven by playwright-core from
//! tests/web-peers): prompt, approve, answer, reload, history, with the server's token taken
//! from the page's URL and sent on every request; then the same under a path prefix with the page
//! branded (`PageOptions`). Screenshots land in target/tmp/web-page/ and web-page-branded/.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mux::web::WebConfig;
use mux::web::page::PageOptions;

use crate::common;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_streams_asks_for_approval_answers_and_keeps_its_history_after_a_reload() {
    in_the_browser(PageOptions::default(), "web-page", &[]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branded_page_under_a_prefix_works_the_same() {
    let title = "Acme <b>support</b> & \"co\"";
    let placeholder = "Ask us about </title><script>x</script>";
    let page = PageOptions::new()
        .title(title)
        .placeholder(placeholder)
        .prefix("/team/chat")
        .unwrap();
    let expect = [("EXPECT_TITLE", title), ("EXPECT_PLACEHOLDER", placeholder)];
    in_the_browser(page, "web-page-branded", &expect).await;
}

/// The browser script's whole scenario against the example's app with `page`, opened at the
/// page's prefix; `expect` are extra environment variables for the script.
async fn in_the_browser(page: PageOptions, shots: &str, expect: &[(&str, &str)]) {
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
    let base = page.base().to_owned();
    let app = mux_examples::web_agent::branded_app(
        agent,
        WebConfig::default().bearer_token("page-token-1234"),
        page,
    )
    .unwrap();
    let listener = mux::web::bind(0).await.unwrap();
    let url = format!(
        "http://{}{base}/?token=page-token-1234",
        listener.local_addr().unwrap()
    );
    let server = tokio::spawn(mux::web::serve(listener, app));

    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(shots);
    let run = tokio::process::Command::new("node")
        .arg(peers.join("browser.mjs"))
        .arg(&url)
        .arg(&shots)
        .env("CHROMIUM", &chromium)
        .envs(expect.iter().copied())
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
