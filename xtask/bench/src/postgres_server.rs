//! A throw-away PostgreSQL server for the session-store benchmark: `initdb` into a temp dir,
//! listening only on a unix socket there, run as `nobody` when we are root (PostgreSQL refuses
//! root), stopped on drop. Default durability settings: every commit waits for its WAL flush.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running server.
pub(crate) struct Server {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<&'static str>,
}

impl Server {
    /// Starts a server, or says why not (no binaries: install `postgresql`).
    pub(crate) fn start() -> Result<Server, String> {
        let bin = find_binaries().ok_or(
            "initdb/pg_ctl not found on PATH or under /usr/lib/postgresql/*/bin (apt-get install postgresql)",
        )?;
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let run_as = root.then_some("nobody");
        // As root, in /tmp: `nobody` must reach the dir, and TMPDIR may not let it.
        let parent = if root {
            PathBuf::from("/tmp")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new()
            .prefix("mux-bench-pg-")
            .tempdir_in(parent)
            .map_err(|e| e.to_string())?;
        if let Some(user) = run_as {
            let status = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(dir.path())
                .status()
                .map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("chown of the server dir to {user} failed"));
            }
        }
        let server = Server { dir, bin, run_as };
        let data = server.data();
        server.run(
            "initdb",
            &[
                "-D",
                &data,
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
        )?;
        let options = format!("-k {} -c listen_addresses=''", server.dir.path().display());
        let log = server.dir.path().join("server.log");
        server.run(
            "pg_ctl",
            &[
                "-D",
                &data,
                "-l",
                &log.to_string_lossy(),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        )?;
        Ok(server)
    }

    /// The URL of the `postgres` database over the unix socket.
    pub(crate) fn url(&self) -> String {
        format!(
            "postgres://postgres@localhost/postgres?host={}",
            self.dir.path().display()
        )
    }

    /// The process ids of the server: the postmaster and its children.
    pub(crate) fn pids(&self) -> Vec<u32> {
        let Ok(text) = std::fs::read_to_string(self.dir.path().join("data/postmaster.pid")) else {
            return Vec::new();
        };
        let Some(main) = text
            .lines()
            .next()
            .and_then(|l| l.trim().parse::<u32>().ok())
        else {
            return Vec::new();
        };
        let children = Command::new("pgrep")
            .args(["-P", &main.to_string()])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        std::iter::once(main)
            .chain(children.lines().filter_map(|l| l.trim().parse().ok()))
            .collect()
    }

    fn data(&self) -> String {
        self.dir.path().join("data").to_string_lossy().into_owned()
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let output = self
            .command(program, args)
            .output()
            .map_err(|e| format!("{program}: {e}"))?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed: {}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let path = self.bin.join(program);
        let mut cmd = match self.run_as {
            Some(user) => {
                let mut cmd = Command::new("runuser");
                cmd.args(["-u", user, "--"]).arg(path);
                cmd
            }
            None => Command::new(path),
        };
        cmd.args(args).current_dir(self.dir.path());
        cmd
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let data = self.data();
        if let Err(err) = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]) {
            eprintln!("stopping the benchmark's PostgreSQL server: {err}");
        }
    }
}

/// The directory holding `initdb` and `pg_ctl` (links resolved): on PATH, else the newest
/// under `/usr/lib/postgresql/*/bin`.
fn find_binaries() -> Option<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|dir| has_both(dir)));
    if let Some(dir) = on_path {
        return std::fs::canonicalize(dir.join("pg_ctl"))
            .ok()
            .and_then(|real| real.parent().map(Path::to_path_buf))
            .or(Some(dir));
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
        .filter(|dir| has_both(dir))
        .collect();
    versions.sort();
    versions.pop()
}
