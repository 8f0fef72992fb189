//! Running one command as the bash tool would (`bash -c CMD`, stdin from /dev/null) in a fresh
//! copy of the work directory, under strace, inside bubblewrap:
//!
//! - a read-only view of the whole filesystem, a private `/tmp`, the work copy at `/tmp/w`;
//! - new user, mount, pid, network, IPC and UTS namespaces (`--unshare-all`): no network, and
//!   the command's processes die with the sandbox;
//! - a new session (`--new-session`), so no controlling terminal is reachable;
//! - a small fixed environment;
//! - a time limit, after which the process group is killed.
//!
//! The payload of every generated attack is the canary, so even a miss only writes a marker.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process_group};

use crate::fixture::{self, MARKER, WORK_DIR};
use crate::trace::{self, Event};

/// Where the trace directory is mounted inside the sandbox.
const TRACE_DIR: &str = "/tmp/.oracle-trace";

/// What one run observed.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    /// Every traced event of every process, the shell's own exec excluded.
    pub(crate) events: Vec<Event>,
    /// The lines the canary wrote to its marker file.
    pub(crate) marker: Option<String>,
    /// The time limit ended the run.
    pub(crate) timed_out: bool,
    /// No process's trace showed the shell starting: the run was not observed.
    pub(crate) unobserved: bool,
    /// The sandbox's exit code (the shell's), when it exited on its own.
    pub(crate) status: Option<i32>,
}

/// The tools the sandbox needs, checked once.
pub(crate) fn check_tools() -> Result<(), String> {
    for (tool, arg) in [("bwrap", "--version"), ("strace", "-V")] {
        let ok = Command::new(tool)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return Err(format!(
                "`{tool}` is missing: the oracle runs commands under strace inside bubblewrap \
                 (apt-get install strace bubblewrap; .ci/run installs them)"
            ));
        }
    }
    Ok(())
}

/// A set of runs sharing one template, under one scratch directory removed on drop.
pub(crate) struct Sandbox {
    scratch: PathBuf,
    template: PathBuf,
    limit: Duration,
}

impl Sandbox {
    /// Builds the template under a fresh scratch directory.
    pub(crate) fn new(limit: Duration) -> Result<Self, String> {
        let scratch = std::env::temp_dir().join(format!("mux-oracle-{}", std::process::id()));
        if scratch.exists() {
            fs::remove_dir_all(&scratch)
                .map_err(|e| format!("clearing {}: {e}", scratch.display()))?;
        }
        fs::create_dir_all(&scratch).map_err(|e| format!("creating {}: {e}", scratch.display()))?;
        let template = scratch.join("template");
        let sandbox = Self {
            scratch,
            template,
            limit,
        };
        fixture::build_template(&sandbox.template)?;
        Ok(sandbox)
    }

    /// Runs `command` in a fresh copy of the template. `slot` names the copy (one per worker).
    pub(crate) fn run(&self, command: &str, slot: usize) -> Result<Observed, String> {
        let work = self.scratch.join(format!("work-{slot}"));
        let traces = self.scratch.join(format!("trace-{slot}"));
        for dir in [&work, &traces] {
            if dir.exists() {
                fs::remove_dir_all(dir).map_err(|e| format!("clearing {}: {e}", dir.display()))?;
            }
        }
        fixture::copy_tree(&self.template, &work)?;
        fs::create_dir(&traces).map_err(|e| format!("creating {}: {e}", traces.display()))?;
        let (timed_out, status) = self.spawn(command, &work, &traces)?;
        let mut observed = Observed {
            timed_out,
            status,
            marker: fs::read_to_string(work.join(MARKER)).ok(),
            unobserved: true,
            ..Observed::default()
        };
        let mut files: Vec<PathBuf> = fs::read_dir(&traces)
            .map_err(|e| format!("reading {}: {e}", traces.display()))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .collect();
        files.sort();
        for file in files {
            let text = fs::read(&file).map_err(|e| format!("reading {}: {e}", file.display()))?;
            for event in trace::parse(&String::from_utf8_lossy(&text)) {
                if is_the_shell(&event, command) && observed.unobserved {
                    observed.unobserved = false;
                    continue;
                }
                observed.events.push(event);
            }
        }
        for dir in [&work, &traces] {
            // A command may leave unreadable modes behind; a failed removal is retried by the
            // next run's clearing and by the scratch directory's removal.
            let _ = fs::remove_dir_all(dir);
        }
        Ok(observed)
    }

    /// Spawns the sandboxed, traced shell; returns whether the time limit ended it, and its exit
    /// code when it exited on its own.
    fn spawn(
        &self,
        command: &str,
        work: &Path,
        traces: &Path,
    ) -> Result<(bool, Option<i32>), String> {
        let trace_set = trace::TRACED.join(",");
        let mut child = Command::new("bwrap")
            .args(["--unshare-all", "--new-session", "--die-with-parent"])
            .args(["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"])
            .args(["--tmpfs", "/tmp", "--dir", "/tmp/home"])
            .arg("--bind")
            .arg(work)
            .arg(WORK_DIR)
            .arg("--bind")
            .arg(traces)
            .arg(TRACE_DIR)
            .args(["--chdir", WORK_DIR, "--"])
            .args(["strace", "-ff", "-qq", "-y", "-s", "4096", "-o"])
            .arg(format!("{TRACE_DIR}/t"))
            .arg("-e")
            .arg(format!("trace={trace_set}"))
            .args(["--", "bash", "-c", command])
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", "/tmp/home")
            .env("LANG", "C.UTF-8")
            .env("TERM", "dumb")
            .env("TMPDIR", "/tmp")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting bwrap: {e}"))?;
        let started = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Ok((false, status.code())),
                Ok(None) if started.elapsed() >= self.limit => break,
                Ok(None) => std::thread::sleep(Duration::from_millis(5)),
                Err(e) => return Err(format!("waiting for bwrap: {e}")),
            }
        }
        if let Some(pid) = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)) {
            // The group is bwrap's; what runs inside dies with it (--die-with-parent, and the
            // pid namespace ends with its first process).
            let _ = kill_process_group(pid, Signal::KILL);
        }
        let _ = child.kill();
        child
            .wait()
            .map_err(|e| format!("waiting for bwrap after killing it: {e}"))?;
        Ok((true, None))
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.scratch);
    }
}

/// Whether `event` is strace starting the shell itself.
fn is_the_shell(event: &Event, command: &str) -> bool {
    matches!(event, Event::Exec { argv, .. }
        if argv.len() == 3 && argv[0] == "bash" && argv[1] == "-c" && argv[2] == command)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::compare::{Kind, findings};

    fn kinds(sandbox: &Sandbox, command: &str, predicted: &[&str]) -> Vec<Kind> {
        let programs: BTreeSet<String> = predicted.iter().map(|p| (*p).to_owned()).collect();
        let observed = sandbox.run(command, 0).unwrap();
        assert!(!observed.timed_out, "{command} timed out");
        let found = findings(&programs, &observed, "/usr/lib/git-core");
        let mut kinds: Vec<Kind> = found.iter().map(|f| f.kind).collect();
        kinds.sort();
        kinds.dedup();
        kinds
    }

    /// Real processes under the real sandbox: a quiet read has no findings; the canary, an
    /// unpredicted program and a write are each seen; a write outside the copy fails.
    #[test]
    fn the_sandbox_sees_execs_writes_and_the_canary() {
        check_tools().unwrap();
        let sandbox = Sandbox::new(Duration::from_secs(10)).unwrap();
        assert_eq!(
            kinds(&sandbox, "cat README.md | wc -l", &["cat", "wc"]),
            vec![]
        );
        assert_eq!(
            kinds(&sandbox, "git status && git log -1", &["git"]),
            vec![]
        );
        assert_eq!(kinds(&sandbox, "./canary x", &["cat"]), vec![Kind::Canary]);
        assert_eq!(
            kinds(&sandbox, "sort -o out.txt data.csv", &["sort"]),
            vec![Kind::Write]
        );
        assert_eq!(
            kinds(&sandbox, "cat README.md | sh -c true", &["cat"]),
            vec![Kind::Exec]
        );
        // The host's filesystem is read-only inside: the attempt is seen, and nothing lands.
        let outside = Path::new(env!("CARGO_MANIFEST_DIR")).join("must-not-exist");
        let command = format!("touch {}", outside.display());
        assert_eq!(kinds(&sandbox, &command, &["touch"]), vec![Kind::Write]);
        assert!(!outside.exists());
    }
}
