//! The file tools against real temporary directories, through the executor.
#![cfg(all(feature = "builtin", unix))]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use mux_tool::builtin::{self, ReadFile, Sandbox, TodoList, TodoStatus};
use mux_tool::{
    ApprovalPolicy, CallScope, Executor, Registry, Resources, ToolCall, ToolContext, ToolOutput,
    TypedTool,
};
use serde_json::{Value, json};

struct Workspace {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    executor: Executor,
    resources: Resources,
}

impl Workspace {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(base.join("outside")).unwrap();
        std::fs::write(base.join("outside/secret.txt"), "SECRET").unwrap();
        let registry = Registry::new();
        builtin::register(&registry, &Sandbox::new(&root).unwrap()).unwrap();
        let resources = Resources::new();
        let executor = Executor::builder(registry)
            .approval_policy(ApprovalPolicy::Never)
            .max_output_bytes(1_000_000)
            .resources(resources.clone())
            .build();
        Self {
            _dir: dir,
            base,
            root,
            executor,
            resources,
        }
    }

    fn write(&self, path: &str, content: impl AsRef<[u8]>) {
        let path = self.root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap()
    }

    async fn call(&self, tool: &str, args: Value) -> ToolOutput {
        self.executor
            .execute(ToolCall::new("t", tool, args), &CallScope::default())
            .await
            .into_output()
    }

    async fn ok(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args.clone()).await;
        assert!(!out.is_error, "{tool} {args} failed: {}", out.to_text());
        out.to_text()
    }

    async fn error(&self, tool: &str, args: Value) -> String {
        let out = self.call(tool, args.clone()).await;
        assert!(out.is_error, "{tool} {args} succeeded: {}", out.to_text());
        out.to_text()
    }

    fn secret_untouched(&self) {
        assert_eq!(
            std::fs::read_to_string(self.base.join("outside/secret.txt")).unwrap(),
            "SECRET"
        );
        let names: Vec<_> = std::fs::read_dir(self.base.join("outside"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["secret.txt"], "nothing new appeared outside");
    }
}

#[tokio::test]
async fn a_large_file_is_read_by_range() {
    let ws = Workspace::new();
    let lines: Vec<String> = (1..=100_000).map(|n| format!("line {n}")).collect();
    ws.write("big.txt", lines.join("\n"));
    let text = ws
        .ok(
            "read_file",
            json!({"path": "big.txt", "offset": 50_000, "limit": 3}),
        )
        .await;
    assert!(
        text.starts_with(" 50000\tline 50000\n 50001\tline 50001\n 50002\tline 50002"),
        "{text}"
    );
    assert!(text.contains("continue with offset=50003"), "{text}");
    let last = ws
        .ok("read_file", json!({"path": "big.txt", "offset": 100_000}))
        .await;
    assert_eq!(last, "100000\tline 100000");
    let past = ws
        .error("read_file", json!({"path": "big.txt", "offset": 100_001}))
        .await;
    assert!(
        past.contains("past the end") && past.contains("100000 lines"),
        "{past}"
    );
}

#[tokio::test]
async fn read_output_is_capped_on_character_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let line = "日本語のテキスト".repeat(50); // 1200 bytes of 3-byte characters
    std::fs::write(
        dir.path().join("jp.txt"),
        format!("{line}\n{line}\n{line}\n"),
    )
    .unwrap();
    let tool = ReadFile::new(Sandbox::new(dir.path()).unwrap())
        .max_line_bytes(100)
        .max_bytes(250);
    let args = serde_json::from_value(json!({"path": "jp.txt"})).unwrap();
    let out = tool.call(args, ToolContext::new("c")).await.unwrap();
    let text = out.to_text();
    assert!(!text.contains('\u{FFFD}'), "no split character: {text}");
    assert!(text.contains(" … [line cut]"), "{text}");
    assert!(
        text.contains("size cap reached") && text.contains("offset=3"),
        "{text}"
    );
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("     1\t日本語"), "{first}");
    // 100 bytes of 3-byte characters keep 33 characters (99 bytes).
    assert_eq!(
        first
            .trim_start_matches("     1\t")
            .trim_end_matches(" … [line cut]")
            .len(),
        99
    );
}

#[tokio::test]
async fn a_first_line_larger_than_the_cap_is_shown_cut_and_the_offset_moves_on() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("wide.txt"),
        format!("{}\nnext\n", "ü".repeat(500)),
    )
    .unwrap();
    let tool = ReadFile::new(Sandbox::new(dir.path()).unwrap()).max_bytes(60);
    let args = serde_json::from_value(json!({"path": "wide.txt"})).unwrap();
    let out = tool.call(args, ToolContext::new("c")).await.unwrap();
    let first = out.content[0].as_text().unwrap();
    assert!(
        first.starts_with("     1\tüü") && first.ends_with(" … [line cut]"),
        "{first}"
    );
    assert!(first.len() <= 60, "{}", first.len());
    assert_eq!(out.metadata["next_offset"], json!(2));
}

#[tokio::test]
async fn binary_files_and_directories_are_refused_by_read_file() {
    let ws = Workspace::new();
    ws.write("image.bin", [0x89, b'P', b'N', b'G', 0, 0, 1, 2]);
    ws.write("dir/file.txt", "x");
    let err = ws.error("read_file", json!({"path": "image.bin"})).await;
    assert!(err.contains("binary"), "{err}");
    let err = ws.error("read_file", json!({"path": "dir"})).await;
    assert!(err.contains("is a directory"), "{err}");
    let err = ws.error("read_file", json!({"path": "missing.txt"})).await;
    assert!(err.contains("does not exist"), "{err}");
    assert_eq!(
        ws.ok("read_file", json!({"path": "dir/file.txt"})).await,
        "     1\tx"
    );
}

#[tokio::test]
async fn a_fifo_is_refused_instead_of_blocking() {
    let ws = Workspace::new();
    let status = std::process::Command::new("mkfifo")
        .arg(ws.root.join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    let err = ws.error("read_file", json!({"path": "pipe"})).await;
    assert!(err.contains("not a regular file"), "{err}");
    let err = ws
        .error(
            "edit_file",
            json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(err.contains("not a regular file"), "{err}");
}

#[tokio::test]
async fn invalid_utf8_is_shown_with_replacement_characters() {
    let ws = Workspace::new();
    ws.write("latin1.txt", b"caf\xe9\n");
    let text = ws.ok("read_file", json!({"path": "latin1.txt"})).await;
    assert_eq!(text, "     1\tcaf\u{FFFD}");
}

#[tokio::test]
async fn write_creates_parents_and_replaces_atomically() {
    let ws = Workspace::new();
    let text = ws
        .ok(
            "write_file",
            json!({"path": "a/b/c/new.txt", "content": "héllo\n"}),
        )
        .await;
    assert!(text.starts_with("Created a/b/c/new.txt"), "{text}");
    assert_eq!(ws.read("a/b/c/new.txt"), "héllo\n");
    let text = ws
        .ok(
            "write_file",
            json!({"path": "a/b/c/new.txt", "content": "bye"}),
        )
        .await;
    assert!(text.starts_with("Overwrote"), "{text}");
    assert_eq!(ws.read("a/b/c/new.txt"), "bye");
    let leftovers: Vec<_> = std::fs::read_dir(ws.root.join("a/b/c"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(leftovers, ["new.txt"], "no temporary file is left behind");
}

#[tokio::test]
async fn write_keeps_the_permissions_of_the_file_it_replaces() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    ws.write("run.sh", "#!/bin/sh\n");
    std::fs::set_permissions(
        ws.root.join("run.sh"),
        std::fs::Permissions::from_mode(0o751),
    )
    .unwrap();
    ws.ok(
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}),
    )
    .await;
    let mode = std::fs::metadata(ws.root.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o751);
}

#[tokio::test]
async fn writes_through_symlinks_cannot_escape() {
    let ws = Workspace::new();
    symlink(
        ws.base.join("outside/secret.txt"),
        ws.root.join("link_file"),
    )
    .unwrap();
    symlink(ws.base.join("outside"), ws.root.join("link_dir")).unwrap();
    symlink(ws.base.join("outside/new.txt"), ws.root.join("dangling")).unwrap();
    for path in [
        "link_file",
        "link_dir/new.txt",
        "link_dir/x/y.txt",
        "dangling",
    ] {
        let err = ws
            .error("write_file", json!({"path": path, "content": "pwned"}))
            .await;
        assert!(err.contains("symlink"), "{path}: {err}");
    }
    let err = ws
        .error(
            "edit_file",
            json!({"path": "link_file", "old_string": "SECRET", "new_string": "pwned"}),
        )
        .await;
    assert!(err.contains("outside the root"), "{err}");
    ws.secret_untouched();
}

#[tokio::test]
async fn a_write_through_a_symlink_inside_the_root_changes_its_target() {
    let ws = Workspace::new();
    ws.write("real.txt", "old");
    symlink("real.txt", ws.root.join("alias.txt")).unwrap();
    ws.ok("write_file", json!({"path": "alias.txt", "content": "new"}))
        .await;
    assert_eq!(ws.read("real.txt"), "new");
    assert!(
        std::fs::symlink_metadata(ws.root.join("alias.txt"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}

#[tokio::test]
async fn an_edit_with_zero_one_and_two_matches() {
    let ws = Workspace::new();
    ws.write("f.rs", "let a = 1;\nlet b = 2;\nlet a2 = 1;\n");

    let err = ws
        .error(
            "edit_file",
            json!({"path": "f.rs", "old_string": "let c", "new_string": "let d"}),
        )
        .await;
    assert!(err.contains("not found"), "{err}");

    let err = ws
        .error(
            "edit_file",
            json!({"path": "f.rs", "old_string": "= 1;", "new_string": "= 9;"}),
        )
        .await;
    assert!(err.contains("found 2 times"), "{err}");
    assert_eq!(
        ws.read("f.rs"),
        "let a = 1;\nlet b = 2;\nlet a2 = 1;\n",
        "untouched"
    );

    let text = ws
        .ok(
            "edit_file",
            json!({"path": "f.rs", "old_string": "let b = 2;", "new_string": "let b = 3;"}),
        )
        .await;
    assert_eq!(text, "Replaced 1 occurrence in f.rs");
    assert_eq!(ws.read("f.rs"), "let a = 1;\nlet b = 3;\nlet a2 = 1;\n");

    let text = ws
        .ok(
            "edit_file",
            json!({"path": "f.rs", "old_string": "= 1;", "new_string": "= 9;", "replace_all": true}),
        )
        .await;
    assert_eq!(text, "Replaced 2 occurrences in f.rs");
    assert_eq!(ws.read("f.rs"), "let a = 9;\nlet b = 3;\nlet a2 = 9;\n");
}

#[tokio::test]
async fn edit_refuses_empty_and_identical_strings_and_binary_files() {
    let ws = Workspace::new();
    ws.write("f.txt", "abc");
    ws.write("b.bin", b"\xff\xfe\x00");
    let err = ws
        .error(
            "edit_file",
            json!({"path": "f.txt", "old_string": "", "new_string": "x"}),
        )
        .await;
    assert!(err.contains("old_string is empty"), "{err}");
    let err = ws
        .error(
            "edit_file",
            json!({"path": "f.txt", "old_string": "a", "new_string": "a"}),
        )
        .await;
    assert!(err.contains("the same"), "{err}");
    let err = ws
        .error(
            "edit_file",
            json!({"path": "b.bin", "old_string": "a", "new_string": "b"}),
        )
        .await;
    assert!(err.contains("not UTF-8"), "{err}");
}

#[tokio::test]
async fn list_dir_marks_kinds_and_honours_gitignore() {
    let ws = Workspace::new();
    ws.write(".gitignore", "target/\n*.log\n");
    ws.write("src/main.rs", "fn main() {}");
    ws.write("target/debug/app", "bin");
    ws.write("build.log", "log");
    ws.write(".git/HEAD", "ref");
    ws.write("README.md", "# hi");
    symlink("README.md", ws.root.join("readme_link")).unwrap();
    let text = ws.ok("list_dir", json!({})).await;
    assert_eq!(text, ".gitignore\nREADME.md\nreadme_link@\nsrc/");
    assert_eq!(ws.ok("list_dir", json!({"path": "src"})).await, "main.rs");
    let err = ws.error("list_dir", json!({"path": "README.md"})).await;
    assert!(err.contains("not a directory"), "{err}");
}

#[tokio::test]
async fn list_dir_caps_its_entries() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..30 {
        std::fs::write(dir.path().join(format!("f{n:02}")), "").unwrap();
    }
    let tool = builtin::ListDir::new(Sandbox::new(dir.path()).unwrap()).max_entries(10);
    let args = serde_json::from_value(json!({"path": "."})).unwrap();
    let text = tool
        .call(args, ToolContext::new("c"))
        .await
        .unwrap()
        .to_text();
    assert_eq!(text.lines().count(), 11);
    assert!(text.ends_with("[20 more entries not shown]"), "{text}");
}

#[tokio::test]
async fn glob_matches_relative_paths_and_skips_ignored_files() {
    let ws = Workspace::new();
    ws.write(".gitignore", "target/\n");
    ws.write("src/lib.rs", "");
    ws.write("src/bin/tool.rs", "");
    ws.write("target/gen.rs", "");
    ws.write("build.rs", "");
    ws.write("Cargo.toml", "");
    symlink(ws.base.join("outside"), ws.root.join("out")).unwrap();
    assert_eq!(
        ws.ok("glob", json!({"pattern": "**/*.rs"})).await,
        "build.rs\nsrc/bin/tool.rs\nsrc/lib.rs"
    );
    assert_eq!(ws.ok("glob", json!({"pattern": "*.rs"})).await, "build.rs");
    assert_eq!(
        ws.ok("glob", json!({"pattern": "*.rs", "path": "src"}))
            .await,
        "src/lib.rs"
    );
    assert_eq!(
        ws.ok("glob", json!({"pattern": "**/secret.txt"})).await,
        "No files match \"**/secret.txt\""
    );
    let err = ws
        .error("glob", json!({"pattern": "a[", "path": "."}))
        .await;
    assert!(err.contains("bad glob"), "{err}");
    let err = ws
        .error("glob", json!({"pattern": "*", "path": "out"}))
        .await;
    assert!(err.contains("symlink"), "{err}");
}

#[tokio::test]
async fn grep_finds_lines_skips_ignored_and_binary_files_and_never_follows_links_out() {
    let ws = Workspace::new();
    ws.write(".gitignore", "vendor/\n");
    ws.write("src/a.rs", "fn alpha() {}\nfn beta() {}\n");
    ws.write("src/b.txt", "ALPHA in caps\n");
    ws.write("vendor/c.rs", "fn alpha() {}\n");
    ws.write("blob.bin", b"alpha\x00\x01");
    symlink(ws.base.join("outside"), ws.root.join("out")).unwrap();
    assert_eq!(
        ws.ok("grep", json!({"pattern": "alpha"})).await,
        "src/a.rs:1:fn alpha() {}"
    );
    assert_eq!(
        ws.ok(
            "grep",
            json!({"pattern": "alpha", "ignore_case": true, "glob": "*.txt", "path": "src"})
        )
        .await,
        "src/b.txt:1:ALPHA in caps"
    );
    assert_eq!(
        ws.ok("grep", json!({"pattern": "SECRET"})).await,
        "No matches for \"SECRET\""
    );
    let err = ws
        .error("grep", json!({"pattern": "SECRET", "path": "out"}))
        .await;
    assert!(err.contains("symlink"), "{err}");
    let err = ws.error("grep", json!({"pattern": "(unclosed"})).await;
    assert!(err.contains("bad regex"), "{err}");
}

#[tokio::test]
async fn grep_output_is_capped_with_a_marker() {
    let dir = tempfile::tempdir().unwrap();
    let body: String = (0..1000).map(|n| format!("hit {n} ünïcödé\n")).collect();
    std::fs::write(dir.path().join("many.txt"), body).unwrap();
    let tool = builtin::Grep::new(Sandbox::new(dir.path()).unwrap()).max_matches(5);
    let args = serde_json::from_value(json!({"pattern": "hit"})).unwrap();
    let text = tool
        .call(args, ToolContext::new("c"))
        .await
        .unwrap()
        .to_text();
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(text.ends_with("[results capped at 5 lines; narrow the pattern, path or glob]"));

    std::fs::write(
        dir.path().join("wide.txt"),
        format!("hit {}\n", "語".repeat(300)),
    )
    .unwrap();
    let tool = builtin::Grep::new(Sandbox::new(dir.path()).unwrap());
    let args = serde_json::from_value(json!({"pattern": "hit", "path": "wide.txt"})).unwrap();
    let text = tool
        .call(args, ToolContext::new("c"))
        .await
        .unwrap()
        .to_text();
    assert!(text.starts_with("wide.txt:1:hit 語語"), "{text}");
    assert!(text.ends_with("語 … [line cut]"), "{text}");
    assert!(!text.contains('\u{FFFD}'), "{text}");

    let tool = builtin::Grep::new(Sandbox::new(dir.path()).unwrap()).max_bytes(100);
    let args = serde_json::from_value(json!({"pattern": "hit", "path": "many.txt"})).unwrap();
    let out = tool.call(args, ToolContext::new("c")).await.unwrap();
    let text = out.to_text();
    let results: usize = text
        .lines()
        .filter(|l| l.starts_with("many.txt:"))
        .map(|l| l.len() + 1)
        .sum();
    assert!(results <= 100, "{text}");
    assert!(text.contains("results capped"), "{text}");
}

#[tokio::test]
async fn todo_write_keeps_the_list_in_the_shared_resources() {
    let ws = Workspace::new();
    let text = ws
        .ok(
            "todo_write",
            json!({"todos": [
                {"content": "Read the code", "status": "completed"},
                {"content": "Fix the bug", "status": "in_progress", "active_form": "Fixing the bug"},
                {"content": "Run the tests", "status": "pending"}
            ]}),
        )
        .await;
    assert_eq!(
        text,
        "Todo list (1/3 completed):\n[x] Read the code\n[>] Fix the bug (Fixing the bug)\n[ ] Run the tests"
    );
    let list = ws
        .resources
        .get::<TodoList>()
        .expect("todo_write stored the list");
    assert_eq!(list.len(), 3);
    assert_eq!(list.current().unwrap().content, "Fix the bug");
    let counts = list.counts();
    assert_eq!(
        (counts.pending, counts.in_progress, counts.completed),
        (1, 1, 1)
    );

    ws.ok(
        "todo_write",
        json!({"todos": [{"content": "Read the code", "status": "completed"}]}),
    )
    .await;
    assert_eq!(list.items()[0].status, TodoStatus::Completed);
    assert_eq!(list.len(), 1, "the list is replaced, not appended to");

    let err = ws
        .error(
            "todo_write",
            json!({"todos": [{"content": " ", "status": "pending"}]}),
        )
        .await;
    assert!(err.contains("empty content"), "{err}");
    let err = ws
        .error(
            "todo_write",
            json!({"todos": [{"content": "x", "status": "done"}]}),
        )
        .await;
    assert!(err.contains("status"), "{err}");
}

#[test]
fn every_tool_has_the_arguments_the_issue_names() {
    let dir = tempfile::tempdir().unwrap();
    let tools = builtin::tools(&Sandbox::new(dir.path()).unwrap()).unwrap();
    let properties = |name: &str| -> Vec<String> {
        let tool = tools
            .iter()
            .find(|t| t.spec().name.as_str() == name)
            .unwrap();
        let mut keys: Vec<String> = tool.spec().input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(properties("read_file"), ["limit", "offset", "path"]);
    assert_eq!(properties("write_file"), ["content", "path"]);
    assert_eq!(
        properties("edit_file"),
        ["new_string", "old_string", "path", "replace_all"]
    );
    assert_eq!(properties("list_dir"), ["path"]);
    assert_eq!(properties("glob"), ["path", "pattern"]);
    assert_eq!(
        properties("grep"),
        ["glob", "ignore_case", "path", "pattern"]
    );
    assert_eq!(
        properties("bash"),
        ["command", "dangerouslyDisableSandbox", "timeout_ms"]
    );
    assert_eq!(properties("todo_write"), ["todos"]);
    let read_only = |name: &str| {
        tools
            .iter()
            .find(|t| t.spec().name.as_str() == name)
            .unwrap()
            .spec()
            .annotations
    };
    for name in ["read_file", "list_dir", "glob", "grep"] {
        assert!(read_only(name).read_only, "{name}");
    }
    for name in ["write_file", "edit_file", "bash"] {
        assert!(
            read_only(name).destructive && !read_only(name).read_only,
            "{name}"
        );
    }
    let bash = tools
        .iter()
        .find(|t| t.spec().name.as_str() == "bash")
        .unwrap();
    assert_eq!(
        bash.subject(&json!({"command": "ls -la"})),
        mux_tool::Subject::command("ls -la")
    );
    let read = tools
        .iter()
        .find(|t| t.spec().name.as_str() == "read_file")
        .unwrap();
    assert_eq!(
        read.subject(&json!({"path": "src/main.rs"})),
        mux_tool::Subject::path(Path::new("src/main.rs"))
    );
}

#[tokio::test]
async fn the_tools_accept_a_parent_that_stays_inside_and_refuse_one_that_leaves() {
    let ws = Workspace::new();
    ws.write("sub/a.txt", "alpha\n");
    symlink(ws.root.join("sub"), ws.root.join("link")).unwrap();
    assert_eq!(
        ws.ok("read_file", json!({"path": "sub/../sub/a.txt"}))
            .await,
        "     1\talpha"
    );
    // `link/..` is the parent of `sub`, the root, as the kernel resolves it.
    assert_eq!(
        ws.ok("read_file", json!({"path": "link/../sub/a.txt"}))
            .await,
        "     1\talpha"
    );
    ws.ok(
        "write_file",
        json!({"path": "sub/../new/dir/../b.txt", "content": "beta"}),
    )
    .await;
    assert_eq!(ws.read("new/b.txt"), "beta");
    assert!(
        !ws.root.join("new/dir").exists(),
        "a directory left by `..` is not made"
    );
    ws.ok(
        "edit_file",
        json!({"path": "link/../new/b.txt", "old_string": "beta", "new_string": "gamma"}),
    )
    .await;
    assert_eq!(ws.read("new/b.txt"), "gamma");
    let listed = ws.ok("list_dir", json!({"path": "sub/.."})).await;
    assert!(
        listed.contains("sub/") && listed.contains("new/"),
        "{listed}"
    );
    let found = ws
        .ok("grep", json!({"pattern": "alpha", "path": "new/.."}))
        .await;
    assert_eq!(found, "sub/a.txt:1:alpha");

    for (tool, args) in [
        ("read_file", json!({"path": "sub/../../outside/secret.txt"})),
        (
            "read_file",
            json!({"path": "link/../../outside/secret.txt"}),
        ),
        (
            "write_file",
            json!({"path": "new/../../outside/x.txt", "content": "x"}),
        ),
        ("list_dir", json!({"path": "sub/../.."})),
        (
            "grep",
            json!({"pattern": "SECRET", "path": "sub/../../outside"}),
        ),
    ] {
        let refused = ws.error(tool, args.clone()).await;
        assert!(
            refused.contains("`..` that leads outside the root"),
            "{tool} {args}: {refused}"
        );
    }
    ws.secret_untouched();
}
