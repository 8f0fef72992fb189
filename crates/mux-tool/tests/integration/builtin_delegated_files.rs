//! `DelegatedFiles`: the file tools read and write an editor's buffers instead of the disk,
//! while the sandbox root still applies.
#![cfg(all(feature = "builtin", unix))]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mux_tool::builtin::{self, DelegatedFiles, Sandbox, TextFiles};
use mux_tool::{
    ApprovalPolicy, BoxFuture, CallScope, Executor, Registry, Resources, ToolCall, ToolError,
};
use serde_json::{Value, json};

/// Buffers by absolute path; paths it does not hold fall through to the disk.
#[derive(Clone, Default)]
struct Buffers(Arc<Mutex<HashMap<PathBuf, String>>>);

impl TextFiles for Buffers {
    fn read_text<'a>(&'a self, path: &'a Path) -> BoxFuture<'a, Result<Option<String>, ToolError>> {
        let text = self.0.lock().unwrap().get(path).cloned();
        Box::pin(async move { Ok(text) })
    }

    fn write_text<'a>(
        &'a self,
        path: &'a Path,
        content: &'a str,
    ) -> BoxFuture<'a, Result<bool, ToolError>> {
        self.0
            .lock()
            .unwrap()
            .insert(path.to_path_buf(), content.to_owned());
        Box::pin(async { Ok(true) })
    }
}

async fn call(executor: &Executor, name: &str, input: Value) -> (bool, String) {
    let output = executor
        .execute(ToolCall::new("1", name, input), &CallScope::default())
        .await
        .output();
    (output.is_error, output.to_text())
}

#[tokio::test]
async fn reads_and_writes_go_to_the_buffers_and_the_root_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "on disk\n").unwrap();
    let buffers = Buffers::default();
    buffers
        .0
        .lock()
        .unwrap()
        .insert(root.join("notes.txt"), "unsaved\nsecond\n".into());
    let registry = Registry::new();
    builtin::register(&registry, &Sandbox::new(&root).unwrap()).unwrap();
    let resources = Resources::new();
    resources.insert(DelegatedFiles::new(buffers.clone()));
    let executor = Executor::builder(registry)
        .approval_policy(ApprovalPolicy::Never)
        .resources(resources)
        .build();

    let (_, read) = call(
        &executor,
        "read_file",
        json!({"path": "notes.txt", "offset": 2}),
    )
    .await;
    assert_eq!(read, "     2\tsecond");

    let (error, wrote) = call(
        &executor,
        "write_file",
        json!({"path": "new.txt", "content": "x"}),
    )
    .await;
    assert!(!error, "{wrote}");
    assert_eq!(wrote, "Created new.txt (1 bytes)");
    assert!(!root.join("new.txt").exists(), "the disk was not written");
    assert_eq!(buffers.0.lock().unwrap()[&root.join("new.txt")], "x");

    let edit = json!({"path": "notes.txt", "old_string": "unsaved", "new_string": "edited"});
    let (error, edited) = call(&executor, "edit_file", edit).await;
    assert!(!error, "{edited}");
    assert_eq!(
        buffers.0.lock().unwrap()[&root.join("notes.txt")],
        "edited\nsecond\n"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "on disk\n"
    );

    let (error, refused) = call(&executor, "read_file", json!({"path": "../outside.txt"})).await;
    assert!(error && refused.contains(".."), "{refused}");
    // A file the buffers do not hold comes from the disk.
    std::fs::write(root.join("plain.txt"), "plain\n").unwrap();
    buffers.0.lock().unwrap().remove(&root.join("plain.txt"));
    let (_, plain) = call(&executor, "read_file", json!({"path": "plain.txt"})).await;
    assert_eq!(plain, "     1\tplain");
}
