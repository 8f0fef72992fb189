//! ag-ui-validate (the AG-UI conformance validator, from PyPI, pinned) against the live
//! endpoint: it POSTs a RunAgentInput and checks the stream; exit 0 with `--max-warnings 0` means no
//! finding at error or warning level.

use std::path::PathBuf;
use std::time::Duration;

use mux_web::WebConfig;

use crate::common;

fn validator() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/web-peers-venv/bin/ag-ui-validate");
    assert!(
        path.is_file(),
        "ag-ui-validate is not installed at {}: run `cargo xtask peers`",
        path.display()
    );
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ag_ui_validate_finds_no_error_in_a_live_run() {
    let validator = validator();
    let server = common::start(WebConfig::default()).await;
    {
        let run = tokio::process::Command::new(&validator)
            .arg(format!("{}/agui", server.url))
            .args(["--no-color", "--timeout", "20", "--max-warnings", "0"])
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("ag-ui-validate took over 60 s")
            .expect("ag-ui-validate did not start");
        assert!(
            output.status.success(),
            "ag-ui-validate exited with {}:\n{}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
