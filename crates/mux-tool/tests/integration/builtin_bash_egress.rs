//! Network through the agent's own proxy: a sandboxed command has a network namespace with
//! loopback only, and the proxy there lets it reach only what the policy allows. Real
//! programs (curl, Python, git, npm, pip) against local servers under test names; every
//! attack has a control that shows it working outside the wall.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use mux_tool::builtin::{
    Bash, DomainAnswer, DomainAsker, DomainRequest, NetworkPolicy, SandboxPolicy,
};
use mux_tool::{BoxFuture, ToolOutput};

use crate::common::{bash, layout, run};

const PEERS: &str = include_str!("../support/egress_peers.py");

/// The local server, answering as every test site.
struct Peers {
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl Drop for Peers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Peers {
    /// Starts the server over `dir` (filled by `prepare`), over TLS with `tls` (cert, key).
    fn start(prepare: impl FnOnce(&Path), tls: Option<(&Path, &Path)>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("peers.py"), PEERS).unwrap();
        prepare(dir.path());
        let mut command = Command::new("python3");
        command.arg(dir.path().join("peers.py")).arg(dir.path());
        if let Some((cert, key)) = tls {
            command.arg(cert).arg(key);
        }
        let mut child = command.stdout(Stdio::piped()).spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap();
        Self { dir, port, child }
    }

    fn plain() -> Self {
        Self::start(|_| {}, None)
    }

    fn addr(&self) -> Vec<SocketAddr> {
        vec![SocketAddr::from(([127, 0, 0, 1], self.port))]
    }

    /// The requests the server saw, `Host path` per line.
    fn requests(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("requests.log")).unwrap_or_default()
    }
}

/// Answers every unknown domain with `answer`, and records what it was asked.
#[derive(Debug)]
struct Asker {
    answer: DomainAnswer,
    asked: Mutex<Vec<String>>,
}

impl Asker {
    fn new(answer: DomainAnswer) -> Arc<Self> {
        Arc::new(Self {
            answer,
            asked: Mutex::new(Vec::new()),
        })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl DomainAsker for Asker {
    fn ask(&self, request: DomainRequest) -> BoxFuture<'_, DomainAnswer> {
        self.asked.lock().unwrap().push(request.to_string());
        Box::pin(async move { self.answer })
    }
}

/// A policy allowing `allowed.test` and denying `denied.test`, both (and `unknown.test`,
/// `other.test`) mapped to `peers`.
fn policy(peers: &Peers) -> NetworkPolicy {
    let mut policy = NetworkPolicy::new()
        .allow_domains(["allowed.test", "*.wild.test"])
        .unwrap()
        .deny_domains(["denied.test"])
        .unwrap();
    for name in ["allowed.test", "denied.test", "unknown.test", "other.test", "a.wild.test"] {
        policy = policy.resolve_for_tests(name, peers.addr());
    }
    policy
}

fn walled(root: &Path, policy: NetworkPolicy) -> Bash {
    bash(root, SandboxPolicy::WorkspaceWrite).network_policy(policy)
}

fn text(output: &ToolOutput) -> String {
    output.to_text()
}

fn write(root: &Path, name: &str, body: &str) -> PathBuf {
    let path = root.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_reaches_an_allowed_domain_and_is_refused_the_others_with_the_reason() {
    let peers = Peers::plain();
    let l = layout();
    let asker = Asker::new(DomainAnswer::Deny);
    let bash = walled(&l.root, policy(&peers).asker(asker.clone()));
    let port = peers.port;

    let allowed = run(&bash, &format!("curl -sS http://allowed.test:{port}/hello")).await;
    assert!(!allowed.is_error, "{}", text(&allowed));
    assert_eq!(text(&allowed).trim(), "hello from allowed.test");
    let wild = run(&bash, &format!("curl -sS http://a.wild.test:{port}/hello")).await;
    assert_eq!(text(&wild).trim(), "hello from a.wild.test", "{}", text(&wild));

    let denied = run(&bash, &format!("curl -sS -i http://denied.test:{port}/hello")).await;
    let out = text(&denied);
    assert!(out.contains("403"), "{out}");
    assert!(
        out.contains(&format!("network access to denied.test:{port} denied by the network deny rule `denied.test`")),
        "{out}"
    );
    let unknown = run(&bash, &format!("curl -sS -i http://unknown.test:{port}/hello")).await;
    let out = text(&unknown);
    assert!(out.contains("denied by the user's answer"), "{out}");
    assert_eq!(asker.asked(), vec![format!("unknown.test:{port}")]);
    // Through CONNECT, curl prints the refusal's status line.
    let tunnel = run(&bash, &format!("curl -sS -v -p http://denied.test:{port}/hello 2>&1")).await;
    let out = text(&tunnel);
    assert!(tunnel.is_error && out.contains("denied by the network deny rule"), "{out}");
    assert!(!peers.requests().contains("denied.test"), "{}", peers.requests());
    assert!(!peers.requests().contains("unknown.test"), "{}", peers.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_asker_an_unknown_domain_is_denied_and_an_allow_once_answer_lets_it_through() {
    let peers = Peers::plain();
    let l = layout();
    let port = peers.port;
    let bash = walled(&l.root, policy(&peers));
    let out = text(&run(&bash, &format!("curl -sS -i http://unknown.test:{port}/hello")).await);
    assert!(out.contains("no allowed domain covers it"), "{out}");

    let asker = Asker::new(DomainAnswer::AllowOnce);
    let bash = walled(&l.root, policy(&peers).asker(asker.clone()));
    let cmd = format!("curl -sS http://unknown.test:{port}/hello http://unknown.test:{port}/hello");
    let out = text(&run(&bash, &cmd).await);
    assert_eq!(out, "hello from unknown.test\nhello from unknown.test\n");
    assert_eq!(asker.asked().len(), 1, "asked once per command");
}
