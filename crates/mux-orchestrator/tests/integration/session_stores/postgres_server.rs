//! A real PostgreSQL for the tests: a throw-away server from the machine's PostgreSQL binaries
//! (`initdb` into a temp dir, listening only on a unix socket there, stopped on drop), or the
//! server named by `MUX_TEST_DATABASE_URL`. Either way each test gets a database of its own.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, Connection};

/// Set to run the PostgreSQL tests against your own server instead of a throw-away one (the
/// user needs the CREATEDB privilege; each test creates and drops a database of its own).
pub(crate) const DATABASE_URL_VAR: &str = "MUX_TEST_DATABASE_URL";

/// The account the throw-away server runs as when the tests run as root (PostgreSQL refuses
/// to run as root).
const UNPRIVILEGED_USER: &str = "nobody";

/// A database for one test, on a server that lives as long as it does.
pub(crate) struct TestDatabase {
    /// The URL of the test's database.
    pub(crate) url: String,
    admin: PgConnectOptions,
    name: String,
    server: Option<Server>,
}

impl TestDatabase {
    /// A fresh database: on `MUX_TEST_DATABASE_URL`'s server if set, else on a new server.
    pub(crate) async fn new() -> TestDatabase {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "mux_test_{}_{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let (admin_url, server) = match std::env::var(DATABASE_URL_VAR) {
            Ok(url) if !url.is_empty() => (url, None),
            _ => {
                let server = Server::start();
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
    /// Stops the throw-away server at once (`pg_ctl stop -m immediate`, as a crash would) and
    /// starts it again after `down`, in the thread returned. Panics on a server named by
    /// `MUX_TEST_DATABASE_URL`, which the tests do not own.
    pub(crate) fn outage(&self, down: Duration) -> std::thread::JoinHandle<()> {
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

/// A throw-away PostgreSQL server in a temp dir: unix socket only, no TCP port.
struct Server {
    dir: tempfile::TempDir,
    bin: PathBuf,
    run_as: Option<&'static str>,
}

impl Server {
    fn start() -> Server {
        let bin = find_binaries().unwrap_or_else(|| {
            panic!(
                "PostgreSQL's initdb/pg_ctl were not found on PATH or under /usr/lib/postgresql/*/bin: \
                 install them (`apt-get install -y postgresql`, as .ci/run does) or set {DATABASE_URL_VAR}"
            )
        });
        let run_as = running_as_root().then_some(UNPRIVILEGED_USER);
        // As root, in /tmp: the unprivileged user must reach the dir, and TMPDIR may not let it.
        let parent = match run_as {
            Some(_) => PathBuf::from("/tmp"),
            None => std::env::temp_dir(),
        };
        let dir = tempfile::Builder::new()
            .prefix("mux-pg-")
            .tempdir_in(parent)
            .expect("creating the server's temp dir");
        if let Some(user) = run_as {
            let status = Command::new("chown")
                .arg(format!("{user}:"))
                .arg(dir.path())
                .status()
                .expect("running chown");
            assert!(status.success(), "chown of the server dir to {user} failed");
        }
        let server = Server { dir, bin, run_as };
        server.run(
            "initdb",
            &[
                "-D",
                &server.data().to_string_lossy(),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-locale",
                "--no-sync",
            ],
        );
        let options = format!(
            "-k {} -c listen_addresses='' -F -c max_connections=100",
            server.dir.path().display()
        );
        server.run(
            "pg_ctl",
            &[
                "-D",
                &server.data().to_string_lossy(),
                "-l",
                &server.dir.path().join("server.log").to_string_lossy(),
                "-o",
                &options,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        server
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A URL for `database` over the server's unix socket.
    fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost/{database}?host={}",
            self.dir.path().display()
        )
    }

    /// Runs one of the server's programs (as the unprivileged user when we are root); panics
    /// with its output when it fails.
    fn run(&self, program: &str, args: &[&str]) {
        let output = self
            .command(program, args)
            .output()
            .expect("running a PostgreSQL program");
        if !output.status.success() {
            let log =
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
            panic!(
                "{program} failed: {}\n{}\n{}\nserver log:\n{log}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        command(&self.bin, self.run_as, self.dir.path(), program, args)
    }

    /// Stops the server at once, as a crash would (`-m immediate`), and starts it again
    /// after `down`, in a thread.
    fn outage(&self, down: Duration) -> std::thread::JoinHandle<()> {
        let (bin, run_as, dir) = (self.bin.clone(), self.run_as, self.dir.path().to_owned());
        let data = self.data().to_string_lossy().into_owned();
        let log = dir.join("server.log").to_string_lossy().into_owned();
        let options = format!(
            "-k {} -c listen_addresses='' -F -c max_connections=100",
            dir.display()
        );
        let pg_ctl = move |args: &[&str]| {
            let out = command(&bin, run_as, &dir, "pg_ctl", args)
                .output()
                .unwrap();
            assert!(out.status.success(), "pg_ctl {args:?}: {out:?}");
        };
        pg_ctl(&["-D", &data, "-m", "immediate", "-w", "stop"]);
        std::thread::spawn(move || {
            std::thread::sleep(down);
            pg_ctl(&[
                "-D", &data, "-l", &log, "-o", &options, "-w", "-t", "60", "start",
            ]);
        })
    }
}

/// One of the server's programs, run as `run_as` when set, in `dir`.
fn command(
    bin: &Path,
    run_as: Option<&'static str>,
    dir: &Path,
    program: &str,
    args: &[&str],
) -> Command {
    let path = bin.join(program);
    let mut cmd = match run_as {
        Some(user) => {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", user, "--"]).arg(path);
            cmd
        }
        None => Command::new(path),
    };
    cmd.args(args).current_dir(dir);
    cmd
}

impl Drop for Server {
    fn drop(&mut self) {
        // Immediate: the data directory is thrown away anyway.
        let data = self.data();
        let stopped = self
            .command(
                "pg_ctl",
                &[
                    "-D",
                    &data.to_string_lossy(),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
            )
            .output();
        if !matches!(&stopped, Ok(out) if out.status.success()) {
            eprintln!("stopping the test PostgreSQL server failed: {stopped:?}");
        }
    }
}

/// Whether this process runs as root (the owner of `/proc/self` is the effective user).
fn running_as_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The directory holding `initdb` and `pg_ctl`: on PATH, else the newest under
/// `/usr/lib/postgresql/*/bin`.
fn find_binaries() -> Option<PathBuf> {
    let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file();
    let on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).find(|dir| has_both(dir)));
    if let Some(dir) = on_path {
        // Where the links point: pg_ctl looks for `postgres` beside itself.
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
