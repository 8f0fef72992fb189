//! The disposable work directory every command runs in: a small git repository with commits,
//! a tag, a branch, a stash entry, an unstaged change, some files, and the canaries.
//!
//! It is built once per oracle run as a template and copied afresh for every command. Inside
//! the sandbox it is always mounted at [`WORK_DIR`], so paths in commands are the same for all.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Where the work directory is mounted inside the sandbox.
pub(crate) const WORK_DIR: &str = "/tmp/w";
/// The marker file every canary appends to when it runs.
pub(crate) const MARKER: &str = "CANARY-RAN";

/// The canary program: it only appends a line to the marker file.
const CANARY_SCRIPT: &str = "#!/bin/sh\necho \"ran: $0 $*\" >> /tmp/w/CANARY-RAN\n";

/// Plain files of the repository (name, content).
const FILES: &[(&str, &str)] = &[
    ("README.md", "# demo\n\nabc hello world\nTODO: more\n"),
    ("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n"),
    ("src/lib.rs", "pub fn a() -> u8 {\n    1\n}\n"),
    ("notes.txt", "alpha\nbeta\nabc\nbeta\n"),
    ("data.csv", "name,n\nb,2\na,1\nc,3\n"),
    (
        "data.json",
        "{\"name\": \"demo\", \"items\": [1, 2, 3], \"nested\": {\"a\": \"x\"}}\n",
    ),
    // Untrusted content a command may read as a program: a shell, awk and sed script, and a git
    // configuration that names the canary. Their text is invisible to a static analysis.
    ("payload.sh", "./canary from-payload-sh\n"),
    (
        "payload.awk",
        "BEGIN { system(\"./canary from-payload-awk\") }\n",
    ),
    ("payload.sed", "1e ./canary from-payload-sed\n"),
    (
        "payload.cfg",
        "[core]\n\tfsmonitor = ./canary\n\tpager = ./canary\n[alias]\n\tlog = !./canary\n",
    ),
];

/// Builds the template in `dir` (which must not exist), running git on the host with a
/// configuration of its own.
pub(crate) fn build_template(dir: &Path) -> Result<(), String> {
    fs::create_dir_all(dir.join("src")).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    fs::create_dir_all(dir.join("hooks")).map_err(|e| format!("creating hooks: {e}"))?;
    let write = |name: &str, text: &str| {
        fs::write(dir.join(name), text).map_err(|e| format!("writing {name}: {e}"))
    };
    for (name, text) in FILES {
        write(name, text)?;
    }
    let executable = |name: &str| -> Result<(), String> {
        write(name, CANARY_SCRIPT)?;
        fs::set_permissions(dir.join(name), fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("chmod {name}: {e}"))
    };
    executable("canary")?;
    // A hooks directory a `core.hooksPath` may name: every hook a read could trigger.
    for hook in [
        "post-index-change",
        "pre-commit",
        "post-checkout",
        "reference-transaction",
    ] {
        executable(&format!("hooks/{hook}"))?;
    }
    let git = |args: &[&str]| -> Result<(), String> {
        let status = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("running git {args:?}: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("git {args:?} failed in the template: {status}"))
        }
    };
    git(&["init", "-q", "-b", "main"])?;
    git(&["config", "user.name", "oracle"])?;
    git(&["config", "user.email", "oracle@example.com"])?;
    git(&["add", "-A", "."])?;
    git(&["commit", "-q", "-m", "one"])?;
    write("notes.txt", "alpha\nbeta\nabc\nbeta\ngamma\n")?;
    git(&["commit", "-q", "-am", "two"])?;
    git(&["tag", "v1"])?;
    git(&["branch", "feature"])?;
    write("src/lib.rs", "pub fn a() -> u8 {\n    2\n}\n")?;
    git(&["commit", "-q", "-am", "three"])?;
    write("data.csv", "name,n\nb,2\na,1\nc,3\nd,4\n")?;
    git(&["stash", "-q"])?;
    // An unstaged change (for diff and external diff) and an untracked file.
    write(
        "README.md",
        "# demo\n\nabc hello world, changed\nTODO: more\n",
    )?;
    write("untracked.txt", "new\n")?;
    Ok(())
}

/// Copies the template `from` into `to` (which must not exist), keeping permissions.
pub(crate) fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir(to).map_err(|e| format!("creating {}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("reading {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("reading {}: {e}", from.display()))?;
        let kind = entry
            .file_type()
            .map_err(|e| format!("reading {}: {e}", entry.path().display()))?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            fs::copy(entry.path(), &target)
                .map_err(|e| format!("copying {}: {e}", entry.path().display()))?;
        }
    }
    Ok(())
}
