//! The built-in tools' costs: the sandbox check of a five-component path against the plain
//! `canonicalize` it replaces, and `grep` over a generated tree against a naive scan of the
//! same files (read each, test each line with `str::contains`); and a `bash` call inside the
//! OS sandbox against the same call without it and against a plain spawn of `bash -c true`.

use std::path::Path;

use mux_tool::builtin::{Bash, BashArgs, Grep, GrepArgs, Sandbox, SandboxPolicy};
use mux_tool::{ToolContext, TypedTool};
use tokio::runtime::Builder;

use crate::harness::{Row, per_iter};

const SAMPLES: usize = 11;
const FILES: usize = 200;
const LINES: usize = 200;

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let dir = tempfile::tempdir().map_err(|err| format!("creating a temp dir: {err}"))?;
    build_tree(dir.path()).map_err(|err| format!("building the tree: {err}"))?;
    let sandbox = Sandbox::new(dir.path()).map_err(|err| err.to_string())?;
    let mut rows = vec![resolve(&sandbox, dir.path())?, grep(&sandbox, dir.path())?];
    rows.extend(bash_spawn(&sandbox)?);
    Ok(rows)
}

/// One `bash -c true` call inside the OS sandbox (the full wall: session, namespaces and the
/// read-only view, no capabilities, Landlock, seccomp; the default `WorkspaceWrite` policy)
/// against the same call with `FullAccess`, no sandbox, and against a plain spawn of the same
/// command with piped output. Prints the time the wall adds per call.
fn bash_spawn(sandbox: &Sandbox) -> Result<Vec<Row>, String> {
    let runtime = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| format!("building the runtime: {err}"))?;
    let call = |policy: SandboxPolicy| -> Result<(), String> {
        let tool = Bash::new(sandbox.clone()).sandbox_policy(policy);
        let args: BashArgs = serde_json::from_value(serde_json::json!({"command": "true"}))
            .map_err(|err| err.to_string())?;
        let out = runtime
            .block_on(tool.call(args, ToolContext::new("bench")))
            .map_err(|err| err.to_string())?;
        if out.is_error {
            return Err(format!("bash under {policy} failed: {}", out.to_text()));
        }
        Ok(())
    };
    call(SandboxPolicy::WorkspaceWrite)?;
    call(SandboxPolicy::FullAccess)?;
    let mut failed = None;
    let mut measure = |policy| {
        per_iter(SAMPLES, 20, |iters| {
            for _ in 0..iters {
                if let Err(err) = call(policy) {
                    failed = Some(err);
                }
            }
        })
    };
    let confined = measure(SandboxPolicy::WorkspaceWrite);
    let open = measure(SandboxPolicy::FullAccess);
    if let Some(err) = failed {
        return Err(err);
    }
    let plain_spawn = || -> Result<(), String> {
        // Spawned inside the runtime, which tokio's child process needs.
        let out = runtime
            .block_on(async {
                tokio::process::Command::new("bash")
                    .args(["-c", "true"])
                    .current_dir(sandbox.root())
                    .stdin(std::process::Stdio::null())
                    .output()
                    .await
            })
            .map_err(|err| format!("plain spawn: {err}"))?;
        if !out.status.success() {
            return Err(format!("plain spawn exited with {}", out.status));
        }
        Ok(())
    };
    plain_spawn()?;
    let mut failed = None;
    let plain = per_iter(SAMPLES, 20, |iters| {
        for _ in 0..iters {
            if let Err(err) = plain_spawn() {
                failed = Some(err);
            }
        }
    });
    if let Some(err) = failed {
        return Err(err);
    }
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    println!(
        "bash: the OS wall adds {:.2} ms per call over a plain spawn ({:.2} ms against {:.2} ms, ratio {:.2}); {:.2} ms over the tool without the wall",
        ms(confined) - ms(plain),
        ms(confined),
        ms(plain),
        ms(confined) / ms(plain),
        ms(confined) - ms(open),
    );
    Ok(vec![
        Row {
            name: "bash call, OS sandbox (workspaceWrite)".into(),
            value: ms(confined),
            unit: "ms",
            baseline: "the same call, fullAccess (no sandbox)".into(),
            baseline_value: ms(open),
        },
        Row {
            name: "bash call, full OS wall (workspaceWrite)".into(),
            value: ms(confined),
            unit: "ms",
            baseline: "plain spawn of bash -c true, piped".into(),
            baseline_value: ms(plain),
        },
    ])
}

fn build_tree(root: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(root.join("a/b/c/d"))?;
    std::fs::write(root.join("a/b/c/d/file.txt"), "x")?;
    for n in 0..FILES {
        let dir = root.join(format!("src/m{}", n % 10));
        std::fs::create_dir_all(&dir)?;
        let body: String = (0..LINES)
            .map(|line| {
                if line == n % LINES {
                    format!("let needle_{n} = {line};\n")
                } else {
                    format!("let value_{line} = compute({n}, {line});\n")
                }
            })
            .collect();
        std::fs::write(dir.join(format!("f{n}.rs")), body)?;
    }
    Ok(())
}

fn resolve(sandbox: &Sandbox, root: &Path) -> Result<Row, String> {
    let path = "a/b/c/d/file.txt";
    sandbox
        .resolve_existing(path)
        .map_err(|err| err.to_string())?;
    let full = root.join(path);
    let checked = per_iter(SAMPLES, 2_000, |iters| {
        for _ in 0..iters {
            std::hint::black_box(sandbox.resolve_existing(std::hint::black_box(path)).ok());
        }
    });
    let plain = per_iter(SAMPLES, 2_000, |iters| {
        for _ in 0..iters {
            std::hint::black_box(std::fs::canonicalize(std::hint::black_box(&full)).ok());
        }
    });
    Ok(Row {
        name: "sandbox resolve_existing, 5 components".into(),
        value: checked.as_secs_f64() * 1e6,
        unit: "µs",
        baseline: "std::fs::canonicalize".into(),
        baseline_value: plain.as_secs_f64() * 1e6,
    })
}

fn grep(sandbox: &Sandbox, root: &Path) -> Result<Row, String> {
    let runtime = Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|err| format!("building the runtime: {err}"))?;
    let tool = Grep::new(sandbox.clone());
    let args = || -> Result<GrepArgs, String> {
        serde_json::from_value(serde_json::json!({"pattern": "needle_1[0-9] ="}))
            .map_err(|err| err.to_string())
    };
    let found = runtime
        .block_on(tool.call(args()?, ToolContext::new("bench")))
        .map_err(|err| err.to_string())?;
    let matches = found.metadata.get("matches").and_then(|m| m.as_u64());
    if matches != Some(10) {
        return Err(format!("grep found {matches:?} lines, expected 10"));
    }
    let mut failed = None;
    let searched = per_iter(SAMPLES, 5, |iters| {
        for _ in 0..iters {
            match args() {
                Ok(args) => {
                    let out = runtime.block_on(tool.call(args, ToolContext::new("bench")));
                    std::hint::black_box(out.ok());
                }
                Err(err) => failed = Some(err),
            }
        }
    });
    if let Some(err) = failed {
        return Err(err);
    }
    let naive = per_iter(SAMPLES, 5, |iters| {
        for _ in 0..iters {
            std::hint::black_box(naive_scan(&root.join("src"), "needle_1"));
        }
    });
    Ok(Row {
        name: format!("grep tool, {FILES} files x {LINES} lines"),
        value: searched.as_secs_f64() * 1e3,
        unit: "ms",
        baseline: "naive read + str::contains".into(),
        baseline_value: naive.as_secs_f64() * 1e3,
    })
}

fn naive_scan(dir: &Path, needle: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut found = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            found += naive_scan(&path, needle);
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            found += text.lines().filter(|line| line.contains(needle)).count();
        }
    }
    found
}
