//! The examples' evals: the coding agent ([`crate::coding_agent`]) on the offline scripted
//! model ([`crate::offline`]), run against the dataset in `examples/evals/coding_agent.yaml`.
//! Every attempt works in a fresh copy of a small project, so cases cannot disturb each other.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use mux::eval::{Dataset, EvalContext, Runner, Score, SharedEvaluator, evaluator, target};
use mux::orchestrator::AgentBuilder;

/// The dataset file.
pub const DATASET: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/evals/coding_agent.yaml");

/// The project every attempt starts from: (path, contents).
pub const PROJECT: &[(&str, &str)] = &[
    (
        "README.md",
        "# Demo project\n\nA tiny crate the evals work on.\n",
    ),
    (
        "Cargo.toml",
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
    ),
    ("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n"),
    (
        "src/lib.rs",
        "/// Adds two numbers.\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    ),
    ("notes/todo.txt", "TODO: write more tests\n"),
];

/// A directory under the temporary directory holding one project per attempt; removed when
/// dropped.
pub struct Workspaces {
    dir: PathBuf,
}

impl Workspaces {
    /// A new, empty directory.
    pub fn new() -> Result<Self, String> {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!("mux-evals-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(Self { dir })
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Workspaces {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Writes a fresh copy of [`PROJECT`] at `root`.
pub fn lay_out(root: &Path) -> Result<(), String> {
    for (path, contents) in PROJECT {
        let file = root.join(path);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("creating {}: {e}", parent.display()))?;
        }
        std::fs::write(&file, contents).map_err(|e| format!("writing {}: {e}", file.display()))?;
    }
    Ok(())
}

/// The dataset.
pub fn dataset() -> Result<Dataset, String> {
    Dataset::load(DATASET).map_err(|e| e.to_string())
}

/// A runner of the coding agent: each attempt in its own copy of the project under
/// `workspaces`, on the offline model.
pub fn runner(workspaces: &Path) -> Runner {
    runner_with(workspaces, |builder, _root| Ok(builder))
}

/// [`runner`] with a change to the agent's description (`configure` gets the builder and the
/// attempt's root): how a test seeds a regression.
pub fn runner_with<F>(workspaces: &Path, configure: F) -> Runner
where
    F: Fn(AgentBuilder, &Path) -> Result<AgentBuilder, String> + Send + Sync + 'static,
{
    let parent = workspaces.to_owned();
    Runner::new(target::from_fn(move |env| {
        let stem: String = env
            .case
            .name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let root = parent.join(format!("{stem}-{}", env.attempt));
        lay_out(&root)?;
        let builder =
            crate::coding_agent::builder(Arc::new(crate::offline::offline_model()), "scripted")
                .root(&root);
        configure(builder, &root)?
            .build()
            .map_err(|e| e.to_string())
    }))
    .evaluator(short_answers())
}

/// A custom evaluator in Rust: answers stay under 400 characters (a wall of text is a
/// regression for a coding agent's chat).
pub fn short_answers() -> SharedEvaluator {
    evaluator::from_fn("short answer", |cx: &EvalContext<'_>| {
        let length = cx.run.output.chars().count();
        Score::check(length <= 400, format!("{length} characters"))
    })
}
