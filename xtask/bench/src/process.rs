//! The server processes the HTTP benchmarks measure: this binary in a server role, or a Python
//! peer in its pinned venv; each killed on drop.

use std::io::{BufRead, BufReader};
use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server process on 127.0.0.1, killed on drop.
pub(crate) struct Server {
    child: Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Server {
    /// This binary with `args` (and `env`), which prints `PORT <n>` once it listens; `what`
    /// names it in errors.
    pub(crate) fn own(
        args: &[&str],
        env: &[(&str, &str)],
        pinned: bool,
        what: &str,
    ) -> Result<Self, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = command(&exe, pinned)
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {what}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("{what} said {line:?}"))?;
        Ok(Self { child, port })
    }

    /// `python script <port>` on a free port, once it accepts connections (30 s at the most);
    /// `what` names it in errors.
    pub(crate) fn python(
        python: &Path,
        script: &Path,
        pinned: bool,
        what: &str,
    ) -> Result<Self, String> {
        let port = StdListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|e| e.to_string())?
            .port();
        let child = command(python, pinned)
            .arg(script)
            .arg(port.to_string())
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| format!("starting {what}: {e}"))?;
        let server = Self { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                return Err(format!("{what} did not listen within 30 s"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(server)
    }

    /// The port it listens on.
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Its process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server at once (SIGKILL), as a crash would.
    pub(crate) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `program`, or `taskset -c 0 program` when pinned.
fn command(program: &Path, pinned: bool) -> Command {
    if pinned {
        let mut command = Command::new("taskset");
        command.args(["-c", "0"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

/// The repository's root.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The python of the venv `venv` (under the repository's root), made or remade when the
/// pinned `requirements` (likewise) changed; `what` names the packages in errors.
pub(crate) fn venv_python(venv: &str, requirements: &str, what: &str) -> Result<PathBuf, String> {
    let venv_dir = root().join(venv);
    let requirements = root().join(requirements);
    let marker = venv_dir.join("mux-requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).map_err(|e| e.to_string())?;
    if std::fs::read_to_string(&marker).ok().as_deref() != Some(wanted.as_str()) {
        let ok = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv_dir)
            .status()
            .map_err(|e| e.to_string())?
            .success()
            && Command::new(venv_dir.join("bin/pip"))
                .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
                .arg(&requirements)
                .status()
                .map_err(|e| e.to_string())?
                .success();
        if !ok {
            return Err(format!("installing {what} into {venv} failed"));
        }
        std::fs::write(&marker, wanted).map_err(|e| e.to_string())?;
    }
    Ok(venv_dir.join("bin/python"))
}
