//! The OS wall's network: a sandboxed `bash -c true` with its network namespace and the
//! agent's egress proxy against a plain spawn, and 100 MB fetched over TLS through the
//! proxy's CONNECT against the same fetch without the wall.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mux_tool::builtin::{
    Bash, BashArgs, NetworkPolicy, Sandbox, SandboxPolicy, set_placeholder_linger,
};
use mux_tool::{ToolContext, TypedTool};
use tokio::runtime::{Builder, Runtime};

use crate::harness::{Row, per_iter};

/// The local peers of the egress tests (an HTTP(S) server answering as any site).
const PEERS: &str = include_str!("../../../crates/mux-tool/tests/support/egress_peers.py");
const SAMPLES: usize = 11;

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let runtime = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|err| format!("building the runtime: {err}"))?;
    let dir = tempfile::tempdir().map_err(|err| format!("creating a temp dir: {err}"))?;
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).map_err(|err| err.to_string())?;
    let sandbox = Sandbox::new(&root).map_err(|err| err.to_string())?;
    let peers = Peers::start(dir.path())?;
    let policy = NetworkPolicy::new()
        .allow_domains(["bulk.test"])
        .map_err(|err| err.to_string())?
        .resolve_for_tests(
            "bulk.test",
            vec![SocketAddr::from(([127, 0, 0, 1], peers.port))],
        );
    let walled = Bash::new(sandbox.clone())
        .sandbox_policy(SandboxPolicy::WorkspaceWrite)
        .network_policy(policy);
    let mut rows = spawn(&runtime, &sandbox, &walled)?;
    rows.push(fetch(&runtime, &walled, &peers, dir.path())?);
    Ok(rows)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs `command` through `bash`; an error unless it succeeded.
fn call(runtime: &Runtime, bash: &Bash, command: &str) -> Result<(), String> {
    let args: BashArgs = serde_json::from_value(serde_json::json!({ "command": command }))
        .map_err(|err| err.to_string())?;
    let out = runtime
        .block_on(bash.call(args, ToolContext::new("bench")))
        .map_err(|err| err.to_string())?;
    if out.is_error {
        return Err(format!(
            "`{command}` under the wall failed: {}",
            out.to_text()
        ));
    }
    Ok(())
}

/// Times `f` per iteration; the first error, if any.
fn time(
    samples: usize,
    iters: u32,
    mut f: impl FnMut() -> Result<(), String>,
) -> Result<Duration, String> {
    f()?;
    let mut failed = None;
    let took = per_iter(samples, iters, |n| {
        for _ in 0..n {
            if let Err(err) = f() {
                failed = Some(err);
            }
        }
    });
    failed.map_or(Ok(took), Err)
}

/// The default linger of the placeholders of absent protected names (restored after the
/// synchronous row).
const LINGER: Duration = Duration::from_millis(200);

/// `bash -c true` with the namespace and proxy, against the wall without network, a plain
/// spawn, and the same call with its placeholders removed before it returns (the former
/// path: the removal of a former mount point waits out an RCU grace period).
fn spawn(runtime: &Runtime, sandbox: &Sandbox, walled: &Bash) -> Result<Vec<Row>, String> {
    let offline = Bash::new(sandbox.clone()).sandbox_policy(SandboxPolicy::WorkspaceWrite);
    let proxied = time(SAMPLES, 20, || call(runtime, walled, "true"))?;
    let without = time(SAMPLES, 20, || call(runtime, &offline, "true"))?;
    let plain = time(SAMPLES, 20, || {
        let out = runtime
            .block_on(async {
                tokio::process::Command::new("bash")
                    .args(["-c", "true"])
                    .current_dir(sandbox.root())
                    .stdin(Stdio::null())
                    .output()
                    .await
            })
            .map_err(|err| format!("plain spawn: {err}"))?;
        out.status
            .success()
            .then_some(())
            .ok_or_else(|| format!("plain spawn exited with {}", out.status))
    })?;
    set_placeholder_linger(Duration::ZERO);
    let synchronous = time(SAMPLES, 20, || call(runtime, walled, "true"));
    set_placeholder_linger(LINGER);
    let synchronous = synchronous?;
    println!(
        "wall: the namespace and proxy add {:.2} ms per call over a plain spawn ({:.2} ms against {:.2} ms); {:.2} ms over the wall without network; {:.2} ms with the placeholders removed before the call returns",
        ms(proxied) - ms(plain),
        ms(proxied),
        ms(plain),
        ms(proxied) - ms(without),
        ms(synchronous),
    );
    Ok(vec![
        Row {
            name: "bash call, wall with network namespace and proxy".into(),
            value: ms(proxied),
            unit: "ms",
            baseline: "plain spawn of bash -c true, piped".into(),
            baseline_value: ms(plain),
        },
        Row {
            name: "bash call, wall with network namespace and proxy (vs offline wall)".into(),
            value: ms(proxied),
            unit: "ms",
            baseline: "the same call, wall without network".into(),
            baseline_value: ms(without),
        },
        Row {
            name: "bash call, wall with network namespace and proxy, placeholders removed before it returns".into(),
            value: ms(synchronous),
            unit: "ms",
            baseline: "the same call, placeholders removed in the background (default)".into(),
            baseline_value: ms(proxied),
        },
    ])
}

/// 100 MB over TLS from the local server: curl under the wall through CONNECT, against the
/// same curl outside the wall straight to the server. Reported as throughput (MB/s).
fn fetch(runtime: &Runtime, walled: &Bash, peers: &Peers, dir: &Path) -> Result<Row, String> {
    let cert = dir.join("cert.pem");
    let url = format!("https://bulk.test:{}/blob", peers.port);
    let curl = format!(
        "curl -sS --fail -o /dev/null --cacert {} {url}",
        cert.display()
    );
    let through = time(5, 1, || call(runtime, walled, &curl))?;
    let direct = time(5, 1, || {
        let out = Command::new("curl")
            .args(["-sS", "--fail", "-o", "/dev/null", "--cacert"])
            .arg(&cert)
            .args(["--noproxy", "*", "--resolve"])
            .arg(format!("bulk.test:{}:127.0.0.1", peers.port))
            .arg(&url)
            .output()
            .map_err(|err| format!("curl: {err}"))?;
        out.status
            .success()
            .then_some(())
            .ok_or_else(|| format!("curl failed: {}", String::from_utf8_lossy(&out.stderr)))
    })?;
    let rate = |d: Duration| 100.0 / d.as_secs_f64();
    println!(
        "wall: 100 MB through CONNECT at {:.0} MB/s, {:.2}x the fetch without the wall ({:.0} MB/s)",
        rate(through),
        rate(through) / rate(direct),
        rate(direct),
    );
    Ok(Row {
        name: "100 MB over TLS through the egress proxy (CONNECT), under the wall".into(),
        value: rate(through),
        unit: "MB/s",
        baseline: "the same curl fetch without the wall".into(),
        baseline_value: rate(direct),
    })
}

/// The local HTTPS server, killed on drop.
struct Peers {
    child: Child,
    port: u16,
}

impl Drop for Peers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Peers {
    fn start(dir: &Path) -> Result<Self, String> {
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args([
                "-subj",
                "/CN=bulk.test",
                "-addext",
                "subjectAltName=DNS:bulk.test",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .map_err(|err| format!("openssl: {err}"))?;
        if !made.success() {
            return Err("openssl could not make a certificate".into());
        }
        let script = dir.join("peers.py");
        std::fs::write(&script, PEERS).map_err(|err| err.to_string())?;
        let mut child = Command::new("python3")
            .arg(&script)
            .arg(dir)
            .arg(&cert)
            .arg(&key)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|err| format!("starting the local server: {err}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|err| err.to_string())?;
        let port = line
            .trim()
            .parse()
            .map_err(|_| format!("the local server said {line:?}"))?;
        Ok(Self { child, port })
    }
}
