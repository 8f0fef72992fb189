//! What the example tests share.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

/// Builds the example (a no-op when it is fresh) and returns its path, beside this test's
/// own binary in the target directory. The flags match `cargo xtask test`'s, and the variables
/// cargo set for this test are not passed on (ring's build script tracks
/// `CARGO_MANIFEST_DIR`), so the build reuses the test step's artifacts.
pub(crate) fn example(name: &str) -> PathBuf {
    let mut cargo = Command::new(env!("CARGO"));
    for (key, _) in std::env::vars() {
        let for_this_crate = [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_BIN_",
            "CARGO_CRATE_NAME",
        ]
        .iter()
        .any(|prefix| key.starts_with(prefix))
            || matches!(
                key.as_str(),
                "CARGO_PRIMARY_PACKAGE" | "CARGO_TARGET_TMPDIR" | "CARGO_RUSTC_CURRENT_DIR"
            );
        if for_this_crate {
            cargo.env_remove(key);
        }
    }
    let status = cargo
        .args([
            "build",
            "--quiet",
            "--workspace",
            "--all-features",
            "--example",
            name,
        ])
        .status()
        .unwrap();
    assert!(status.success(), "building the example {name} failed");
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).unwrap();
    profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

/// An Anthropic streaming response with the given content blocks.
pub(crate) fn anthropic_sse(blocks: &[Value], stop_reason: &str) -> Vec<u8> {
    let mut events = vec![json!({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
        "content": [], "stop_reason": null, "usage": {"input_tokens": 12, "output_tokens": 1}}})];
    for (index, block) in blocks.iter().enumerate() {
        let (start, delta) = if block["type"] == "tool_use" {
            (
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}),
                json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}),
            )
        } else {
            (
                json!({"type": "text", "text": ""}),
                json!({"type": "text_delta", "text": block["text"]}),
            )
        };
        events.push(json!({"type": "content_block_start", "index": index, "content_block": start}));
        events.push(json!({"type": "content_block_delta", "index": index, "delta": delta}));
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 9}}));
    events.push(json!({"type": "message_stop"}));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect::<String>()
        .into_bytes()
}

/// Removes the variables that pick a provider, so the example runs offline unless the test
/// sets them.
pub(crate) fn without_provider_keys(command: &mut Command) {
    for key in [
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "MUX_MODEL",
    ] {
        command.env_remove(key);
    }
}
