//! The Python peers (LangGraph with `PostgresSaver`, DBOS): their pinned venv, and the script
//! `xtask/bench/python/durable_peers/durable_peers.py` run with a deadline.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::load::Load;
use crate::process;

/// The venv the peers are installed into, under the repository's root.
const VENV: &str = "target/bench-durable-peers-venv";
/// Their pinned requirements, under the repository's root.
const REQUIREMENTS: &str = "xtask/bench/python/durable_peers/requirements.txt";
/// The script, under the repository's root.
const SCRIPT: &str = "xtask/bench/python/durable_peers/durable_peers.py";
/// The longest a load or a resume may take.
const DEADLINE: Duration = Duration::from_secs(300);

/// A peer system, as the script names it.
#[derive(Clone, Copy)]
pub(crate) enum System {
    /// LangGraph 1.2, `PostgresSaver`, `durability="sync"`.
    LangGraph,
    /// DBOS 3.4's Python library.
    Dbos,
}

impl System {
    /// The script's name for it.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Self::LangGraph => "langgraph",
            Self::Dbos => "dbos",
        }
    }

    /// Its name in the rows.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Self::LangGraph => "LangGraph 1.2 PostgresSaver, sync",
            Self::Dbos => "DBOS 3.4",
        }
    }
}

/// The peers' python and script.
pub(crate) struct Peers {
    python: PathBuf,
    script: PathBuf,
}

/// What the script's `bench` prints.
#[derive(Deserialize)]
struct Measured {
    runs_per_s: f64,
    p99_ms: f64,
    tool_runs: usize,
}

/// What the script's `resume` prints.
#[derive(Deserialize)]
struct Resumed {
    answer: String,
}

impl Peers {
    /// Installs the peers on first use (or when the pins changed).
    pub(crate) fn install() -> Result<Self, String> {
        let python = process::venv_python(VENV, REQUIREMENTS, "LangGraph and DBOS")?;
        Ok(Self {
            python,
            script: process::root().join(SCRIPT),
        })
    }

    /// `runs` runs of `system`, `concurrency` at a time, after a warm-up of a tenth as many;
    /// an error unless the tool ran once for each.
    pub(crate) fn bench(
        &self,
        system: System,
        url: &str,
        concurrency: usize,
        runs: usize,
        counts: &Path,
    ) -> Result<Load, String> {
        let mut command = self.command("bench", system, url);
        command
            .arg(concurrency.to_string())
            .arg(runs.to_string())
            .arg(counts);
        let measured: Measured = parse(&output(command, system)?, system)?;
        if measured.tool_runs != runs {
            return Err(format!(
                "{}: the tool ran {} times in {runs} runs",
                system.label(),
                measured.tool_runs
            ));
        }
        Ok(Load {
            runs_per_s: measured.runs_per_s,
            p99_ms: measured.p99_ms,
        })
    }

    /// Starts run `run` of `system`, whose second model turn writes `marker` and then waits
    /// to be killed.
    pub(crate) fn start_crash_run(
        &self,
        system: System,
        url: &str,
        run: &str,
        counts: &Path,
        marker: &Path,
    ) -> Result<Child, String> {
        let mut command = self.command("crash", system, url);
        command.arg(run).arg(counts).arg(marker);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {}'s crash run: {e}", system.label()))
    }

    /// Continues run `run` of `system` in a new process, to its answer "ok".
    pub(crate) fn resume(
        &self,
        system: System,
        url: &str,
        run: &str,
        counts: &Path,
    ) -> Result<(), String> {
        let mut command = self.command("resume", system, url);
        command.arg(run).arg(counts);
        let resumed: Resumed = parse(&output(command, system)?, system)?;
        if resumed.answer != "ok" {
            return Err(format!(
                "{}: the resumed run answered {:?}",
                system.label(),
                resumed.answer
            ));
        }
        Ok(())
    }

    fn command(&self, mode: &str, system: System, url: &str) -> Command {
        let mut command = Command::new(&self.python);
        command
            .arg(&self.script)
            .arg(mode)
            .arg(system.key())
            .arg(url);
        command
    }
}

/// The last line of `text` as JSON.
fn parse<T: serde::de::DeserializeOwned>(text: &str, system: System) -> Result<T, String> {
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .map_err(|e| format!("{} printed {text:?}, not its figures: {e}", system.label()))
}

/// Runs `command` to its end (killed after `DEADLINE`); its standard output, an error unless
/// it succeeded. Its standard error goes to ours.
fn output(mut command: Command, system: System) -> Result<String, String> {
    let out = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let file = out.reopen().map_err(|e| e.to_string())?;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(file)
        .spawn()
        .map_err(|e| format!("starting {}: {e}", system.label()))?;
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!(
                "{} did not finish within {DEADLINE:?}",
                system.label()
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(out.path()).map_err(|e| e.to_string())?;
    if !status.success() {
        return Err(format!("{} failed ({status}): {text}", system.label()));
    }
    Ok(text)
}
