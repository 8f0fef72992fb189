//! The built-in tools describe themselves to faces: a kind in their annotations, and locations,
//! diffs and the todo list in their output's presentation.
#![cfg(all(feature = "builtin", unix))]

use mux_tool::builtin::{self, Sandbox};
use mux_tool::{
    ApprovalPolicy, CallScope, Executor, Presentation, Registry, TodoStatus, ToolCall, ToolKind,
};
use serde_json::{Value, json};

struct Workspace {
    dir: tempfile::TempDir,
    registry: Registry,
    executor: Executor,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::new();
        builtin::register(&registry, &Sandbox::new(dir.path()).unwrap()).unwrap();
        let executor = Executor::builder(registry.clone())
            .approval_policy(ApprovalPolicy::Never)
            .build();
        Self {
            dir,
            registry,
            executor,
        }
    }

    async fn shown(&self, tool: &str, args: Value) -> Presentation {
        let output = self
            .executor
            .execute(ToolCall::new("t", tool, args), &CallScope::default())
            .await
            .output();
        assert!(!output.is_error, "{tool}: {}", output.to_text());
        output.presentation().expect("a presentation")
    }
}

#[test]
fn every_builtin_tool_has_its_kind() {
    let ws = Workspace::new();
    let kinds = [
        ("read_file", ToolKind::Read),
        ("write_file", ToolKind::Edit),
        ("edit_file", ToolKind::Edit),
        ("list_dir", ToolKind::Search),
        ("glob", ToolKind::Search),
        ("grep", ToolKind::Search),
        ("bash", ToolKind::Execute),
        ("todo_write", ToolKind::Think),
        #[cfg(feature = "web")]
        ("web_fetch", ToolKind::Fetch),
    ];
    for (name, kind) in kinds {
        let tool = ws.registry.get(name).unwrap();
        assert_eq!(tool.spec().annotations.kind, kind, "{name}");
    }
}

#[tokio::test]
async fn a_write_shows_a_new_file_then_the_change_of_an_overwrite() {
    let ws = Workspace::new();
    let created = ws
        .shown(
            "write_file",
            json!({"path": "a/notes.txt", "content": "one\ntwo\n"}),
        )
        .await;
    let diff = &created.diffs()[0];
    assert_eq!(
        (diff.path(), diff.old_text(), diff.new_text()),
        ("a/notes.txt", None, "one\ntwo\n")
    );
    assert_eq!(created.locations()[0].path(), "a/notes.txt");

    let overwritten = ws
        .shown(
            "write_file",
            json!({"path": "a/notes.txt", "content": "one\n2\n"}),
        )
        .await;
    let diff = &overwritten.diffs()[0];
    assert_eq!(
        (diff.old_text(), diff.new_text()),
        (Some("one\ntwo\n"), "one\n2\n")
    );
}

#[tokio::test]
async fn an_edit_shows_its_diff_and_the_line_it_changed() {
    let ws = Workspace::new();
    let text: String = (1..=40).map(|n| format!("line {n}\n")).collect();
    std::fs::write(ws.dir.path().join("big.txt"), &text).unwrap();
    let shown = ws
        .shown(
            "edit_file",
            json!({"path": "big.txt", "old_string": "line 30\n", "new_string": "thirty\n"}),
        )
        .await;
    assert_eq!(shown.locations()[0].line(), Some(30));
    let diff = &shown.diffs()[0];
    assert_eq!(diff.first_line(), 27);
    assert_eq!(
        diff.new_text(),
        "line 27\nline 28\nline 29\nthirty\nline 31\nline 32\nline 33\n"
    );
    assert!(diff.old_text().unwrap().contains("line 30\n"));
}

#[tokio::test]
async fn reads_and_searches_locate_what_they_looked_at() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.dir.path().join("src")).unwrap();
    std::fs::write(ws.dir.path().join("src/lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    let read = ws
        .shown("read_file", json!({"path": "./src/lib.rs", "offset": 2}))
        .await;
    let location = &read.locations()[0];
    assert_eq!((location.path(), location.line()), ("src/lib.rs", Some(2)));
    assert!(read.diffs().is_empty());
    let grep = ws
        .shown("grep", json!({"pattern": "fn", "path": "src"}))
        .await;
    assert_eq!(grep.locations()[0].path(), "src");
    let listed = ws.shown("list_dir", json!({"path": "."})).await;
    assert_eq!(listed.locations()[0].path(), ".");
}

#[tokio::test]
async fn todo_write_shows_the_whole_list() {
    let ws = Workspace::new();
    let shown = ws
        .shown(
            "todo_write",
            json!({"todos": [
                {"content": "Read", "status": "completed"},
                {"content": "Fix", "status": "in_progress", "active_form": "Fixing"}
            ]}),
        )
        .await;
    let todos = shown.todos().unwrap();
    assert_eq!(todos.len(), 2);
    assert_eq!(todos[1].status, TodoStatus::InProgress);
    assert_eq!(todos[1].active_form.as_deref(), Some("Fixing"));
}

#[tokio::test]
async fn the_model_cannot_give_a_todo_a_priority() {
    let ws = Workspace::new();
    let output = ws
        .executor
        .execute(
            ToolCall::new(
                "t",
                "todo_write",
                json!({"todos": [{"content": "x", "status": "pending", "priority": "high"}]}),
            ),
            &CallScope::default(),
        )
        .await
        .output();
    assert!(output.is_error, "{}", output.to_text());
}

#[tokio::test]
async fn edits_and_writes_preview_their_diff_without_touching_the_file() {
    let ws = Workspace::new();
    let path = ws.dir.path().join("notes.txt");
    std::fs::write(&path, "alpha\nbeta\n").unwrap();
    let preview = |tool: &str, args: Value| {
        let tool = ws.registry.get(tool).unwrap();
        async move { tool.preview(&args).await }
    };

    let edit = preview(
        "edit_file",
        json!({"path": "notes.txt", "old_string": "beta\n", "new_string": "gamma\n"}),
    )
    .await
    .expect("an edit previews its diff");
    assert_eq!(edit.diffs()[0].old_text(), Some("alpha\nbeta\n"));
    assert_eq!(edit.diffs()[0].new_text(), "alpha\ngamma\n");
    assert_eq!(edit.locations()[0].line(), Some(2));

    let write = preview(
        "write_file",
        json!({"path": "new.txt", "content": "hello\n"}),
    )
    .await
    .expect("a write previews the new file");
    assert_eq!(write.diffs()[0].old_text(), None);
    assert_eq!(write.diffs()[0].new_text(), "hello\n");

    // An edit that would fail shows nothing, and no preview changed the disk.
    let missing = json!({"path": "notes.txt", "old_string": "zeta", "new_string": "eta"});
    assert!(preview("edit_file", missing).await.is_none());
    let outside = json!({"path": "../escape.txt", "content": "x"});
    assert!(preview("write_file", outside).await.is_none());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "alpha\nbeta\n");
    assert!(!ws.dir.path().join("new.txt").exists());
    // A read has no preview.
    assert!(
        preview("read_file", json!({"path": "notes.txt"}))
            .await
            .is_none()
    );
}
