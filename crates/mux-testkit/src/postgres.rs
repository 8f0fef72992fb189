//! A real PostgreSQL for tests and benchmarks: a throw-away server from the machine's
//! PostgreSQL binaries ([`Server`]), and a database of its own per test ([`TestDatabase`]),
//! on such a server or on the one named by [`DATABASE_URL_VAR`].

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};

/// Set to run the PostgreSQL tests against your own server instead of a throw-away one (the
/// user needs the CREATEDB privilege; each test creates and drops a database of its own).
pub const DATABASE_URL_VAR: &str = "MUX_TEST_DATABASE_URL";

/// What a client of a server whose store is down must never be shown: the driver's and the
/// operating system's words, and the throw-away server's socket and directory.
pub const OUTAGE_LEAKS: [&str; 7] = [
    "os error",
    "Broken pipe",
    "Connection refused",
    "No such file",
    ".s.PGSQL",
    "/tmp",
    "mux-pg-",
];

/// The account the throw-away server runs as when we run as root (PostgreSQL refuses to run
/// as root).
const UNPRIVILEGED_USER: &str = "nobody";

/// Whether the server waits for its disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// `fsync` off and room for 100 connections: the data is thrown away anyway (tests).
    Throwaway,
    /// PostgreSQL's default settings: every commit waits for its WAL flush (benchmarks).
    Default,
}

/// A throw-away PostgreSQL server in a temp dir: a unix socket there, and a loopback TCP port
/// when started with [`start_with_tcp`](Server::start_with_tcp); stopped, and its data
/// directory removed, on drop.
pub struct Server {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<&'static str>,
    /// The server's `-o` options, to start it again after an outage.
    options: String,
    /// The TCP port on 127.0.0.1, if it listens on one.
    tcp_port: Option<u16>,
}

impl Server {
    /// Starts a server on a unix socket only, or says why not (no binaries: install
    /// `postgresql`, as `.ci/run` does).
    pub fn start(durability: Durability) -> Result<Server, String> {
        Self::start_listening(durability, None)
    }

    /// Starts a server that also listens on a free TCP port of 127.0.0.1 (its socket then
    /// carries that port's number: [`url`](Server::url) names it).
    pub fn start_with_tcp(durability: Durability) -> Result<Server, String> {
        // A port the system had free a moment ago; the server fails to start if another
        // process took it since, and says so.
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|e| format!("finding a free TCP port: {e}"))?
            .port();
        Self::start_listening(durability, Some(port))
    }

    fn start_listening(durability: Durability, tcp_port: Option<u16>) -> Result<Server, String> {
        let bin = find_binaries().ok_or_else(|| {
            format!(
                "PostgreSQL's initdb/pg_ctl were not found on PATH or under /usr/lib/postgresql/*/bin: \
                 install them (`apt-get install -y postgresql`, as .ci/run does) or set {DATABASE_URL_VAR}"
            )
        })?;
        let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
        let run_as = root.then_some(UNPRIVILEGED_USER);
        // As root, in /tmp: the unprivileged user must reach the dir, and TMPDIR may not let it.
        let parent = match run_as {
            Some(_) => PathBuf::from("/tmp"),
            None => std::env::temp_dir(),
        };
        let dir = tempfile::Builder::new()
            .prefix("mux-pg-")
            .tempdir_in(parent)
            .map_err(|e| format!("creating the server's temp dir: {e}"))?;
        if let Some(user) = run_as {
            let status = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(dir.path())
                .status()
                .map_err(|e| format!("running chown: {e}"))?;
            if !status.success() {
                return Err(format!("chown of the server dir to {user} failed"));
            }
        }
        let mut server = Server {
            dir,
            bin,
            run_as,
            options: String::new(),
            tcp_port,
        };
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
        let mut options = match tcp_port {
            Some(port) => format!(
                "-k {} -c listen_addresses=127.0.0.1 -p {port}",
                server.dir.path().display()
            ),
            None => format!("-k {} -c listen_addresses=''", server.dir.path().display()),
        };
        if durability == Durability::Throwaway {
            options.push_str(" -F -c max_connections=100");
        }
        server.options = options;
        let args = server.start_args();
        server.run(
            "pg_ctl",
            &args.iter().map(String::as_str).collect::<Vec<_>>(),
        )?;
        Ok(server)
    }

    /// `pg_ctl`'s arguments to start the server.
    fn start_args(&self) -> Vec<String> {
        let log = self.dir.path().join("server.log");
        [
            "-D",
            &self.data(),
            "-l",
            &log.to_string_lossy(),
            "-o",
            &self.options,
            "-w",
            "-t",
            "60",
            "start",
        ]
        .map(str::to_owned)
        .to_vec()
    }

    /// Stops the server at once, as a crash would (`pg_ctl stop -m immediate`), and starts it
    /// again after `down`, in the thread returned.
    pub fn outage(&self, down: std::time::Duration) -> std::thread::JoinHandle<()> {
        let data = self.data();
        if let Err(err) = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]) {
            panic!("stopping the server: {err}");
        }
        let mut start = self.command("pg_ctl", &[]);
        start.args(self.start_args());
        std::thread::spawn(move || {
            std::thread::sleep(down);
            let out = start.output().expect("running pg_ctl");
            assert!(out.status.success(), "starting the server again: {out:?}");
        })
    }

    /// A URL for `database` over the server's unix socket, as the superuser `postgres`.
    pub fn url(&self, database: &str) -> String {
        let port = self.tcp_port.map(|p| format!(":{p}")).unwrap_or_default();
        format!(
            "postgres://postgres@localhost{port}/{database}?host={}",
            self.socket_dir().display()
        )
    }

    /// The directory holding the server's unix socket (`.s.PGSQL.<port>`).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The port: the TCP one on 127.0.0.1 if it listens there, else PostgreSQL's default,
    /// which only names the socket file.
    pub fn port(&self) -> u16 {
        self.tcp_port.unwrap_or(5432)
    }

    /// Whether it listens on TCP (127.0.0.1:[`port`](Server::port)).
    pub fn has_tcp(&self) -> bool {
        self.tcp_port.is_some()
    }

    /// The process ids of the server: the postmaster and its children.
    pub fn pids(&self) -> Vec<u32> {
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

    /// Runs one of the server's programs (as the unprivileged user when we are root); its
    /// output and the server log when it fails.
    fn run(&self, program: &str, args: &[&str]) -> Result<(), String> {
        let output = self
            .command(program, args)
            .output()
            .map_err(|e| format!("{program}: {e}"))?;
        if output.status.success() {
            return Ok(());
        }
        let log = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        Err(format!(
            "{program} failed: {}\n{}\n{}\nserver log:\n{log}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
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
        // Immediate: the data directory is thrown away anyway.
        let data = self.data();
        if let Err(err) = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]) {
            eprintln!("stopping the throw-away PostgreSQL server failed: {err}");
        }
    }
}

/// A database for one test, on a server that lives as long as it does.
pub struct TestDatabase {
    /// The URL of the test's database.
    pub url: String,
    admin: PgConnectOptions,
    name: String,
    server: Option<Server>,
}

impl TestDatabase {
    /// A fresh database: on `MUX_TEST_DATABASE_URL`'s server if set, else on a new throw-away
    /// server. Panics with the reason when neither can be had.
    pub async fn new() -> TestDatabase {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "mux_test_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let (admin_url, server) = match std::env::var(DATABASE_URL_VAR) {
            Ok(url) if !url.is_empty() => (url, None),
            _ => {
                let server = Server::start(Durability::Throwaway)
                    .unwrap_or_else(|err| panic!("starting a PostgreSQL server: {err}"));
                (server.url("postgres"), Some(server))
            }
        };
        let admin = PgConnectOptions::from_str(&admin_url).unwrap_or_else(|err| {
            panic!("{DATABASE_URL_VAR} or the server URL is not usable: {err}")
        });
        let mut conn = admin
            .connect()
            .await
            .expect("connecting to the test server");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("creating the test database");
        conn.close().await.ok();
        let url = with_database(&admin_url, &name);
        TestDatabase {
            url,
            admin,
            name,
            server,
        }
    }
}

impl TestDatabase {
    /// Stops the throw-away server at once and starts it again after `down` (see
    /// [`Server::outage`]). Panics on `MUX_TEST_DATABASE_URL`'s server, which the tests do not
    /// own.
    pub fn outage(&self, down: std::time::Duration) -> std::thread::JoinHandle<()> {
        self.server
            .as_ref()
            .expect("an outage needs the throw-away server, not MUX_TEST_DATABASE_URL's")
            .outage(down)
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if self.server.is_some() {
            // The server and its data directory go with it.
            return;
        }
        // Someone else's server: drop the database, from a thread with a runtime of its own
        // (this may run inside a test's runtime).
        let admin = self.admin.clone();
        let name = self.name.clone();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let pool = PgPoolOptions::new()
                    .max_connections(1)
                    .connect_with(admin)
                    .await
                    .ok()?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&pool)
                    .await
                    .ok()
            })
        })
        .join();
        if !matches!(dropped, Ok(Some(_))) {
            eprintln!("could not drop the test database {}", self.name);
        }
    }
}

/// `url` with its database (the path) replaced by `name`, keeping the query.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{name}", &base[..authority_end]);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

/// The directory holding `initdb` and `pg_ctl` (links resolved: `pg_ctl` looks for
/// `postgres` beside itself): on PATH, else the newest under `/usr/lib/postgresql/*/bin`.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_gets_another_database() {
        assert_eq!(
            with_database("postgres://u@localhost/postgres?host=/tmp/x", "d"),
            "postgres://u@localhost/d?host=/tmp/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h:5432", "d"),
            "postgres://u:p@h:5432/d"
        );
        assert_eq!(with_database("postgres:///db", "d"), "postgres:///d");
    }
}
