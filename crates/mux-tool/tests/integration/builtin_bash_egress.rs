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
    for name in [
        "allowed.test",
        "denied.test",
        "unknown.test",
        "other.test",
        "a.wild.test",
    ] {
        policy = policy.resolve_for_tests(name, peers.addr());
    }
    policy
}

/// [`policy`], with `name` also mapped to `peers` and allowed.
fn policy_with(peers: &Peers, name: &str) -> NetworkPolicy {
    policy(peers)
        .resolve_for_tests(name, peers.addr())
        .allow_domains([name])
        .unwrap()
}

/// The output is an error that the proxy refused with 403.
fn refused(output: &ToolOutput) {
    assert!(
        output.is_error && text(output).contains("403"),
        "{}",
        text(output)
    );
}

/// The output's text contains `needle`.
fn says(output: &ToolOutput, needle: &str) {
    assert!(text(output).contains(needle), "{}", text(output));
}

fn walled(root: &Path, policy: NetworkPolicy) -> Bash {
    bash(root, SandboxPolicy::WorkspaceWrite).network_policy(policy)
}

fn text(output: &ToolOutput) -> String {
    output.to_text()
}

const ATTACKS: &str = include_str!("../support/egress_attacks.py");

/// Runs the attack script with `args` inside the wall; its one line.
async fn inside(bash: &Bash, root: &Path, args: &[&str]) -> String {
    let script = root.join("attacks.py");
    std::fs::write(&script, ATTACKS).unwrap();
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let out = run(bash, &format!("python3 attacks.py {}", quoted.join(" "))).await;
    text(&out).trim().to_owned()
}

/// The same attack outside the wall (the control); its one line.
fn outside(root: &Path, args: &[&str]) -> String {
    let script = root.join("attacks.py");
    std::fs::write(&script, ATTACKS).unwrap();
    let out = Command::new("python3")
        .arg(&script)
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The arguments as `&str`s.
fn strs(args: &[String; 7]) -> [&str; 7] {
    args.each_ref().map(String::as_str)
}

/// A self-signed certificate for `allowed.test` and `other.test`, in `dir`: (cert, key).
fn certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=allowed.test",
        ])
        .args(["-addext", "subjectAltName=DNS:allowed.test,DNS:other.test"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    (cert, key)
}

/// The machine's address on its default route, if it has one.
fn host_address() -> Option<std::net::IpAddr> {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback()).then_some(ip)
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
    assert_eq!(
        text(&wild).trim(),
        "hello from a.wild.test",
        "{}",
        text(&wild)
    );

    let denied = run(
        &bash,
        &format!("curl -sS -i http://denied.test:{port}/hello"),
    )
    .await;
    let out = text(&denied);
    assert!(out.contains("403"), "{out}");
    assert!(
        out.contains(&format!(
            "network access to denied.test:{port} denied by the network deny rule `denied.test`"
        )),
        "{out}"
    );
    let unknown = run(
        &bash,
        &format!("curl -sS -i http://unknown.test:{port}/hello"),
    )
    .await;
    let out = text(&unknown);
    assert!(out.contains("denied by the user's answer"), "{out}");
    assert_eq!(asker.asked(), vec![format!("unknown.test:{port}")]);
    // Through CONNECT, curl prints the refusal's status line.
    let tunnel = run(
        &bash,
        &format!("curl -sS -v -p http://denied.test:{port}/hello 2>&1"),
    )
    .await;
    let out = text(&tunnel);
    assert!(
        tunnel.is_error && out.contains("denied by the network deny rule"),
        "{out}"
    );
    assert!(
        !peers.requests().contains("denied.test"),
        "{}",
        peers.requests()
    );
    assert!(
        !peers.requests().contains("unknown.test"),
        "{}",
        peers.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_asker_an_unknown_domain_is_denied_and_an_allow_once_answer_lets_it_through() {
    let peers = Peers::plain();
    let l = layout();
    let port = peers.port;
    let bash = walled(&l.root, policy(&peers));
    let out = text(
        &run(
            &bash,
            &format!("curl -sS -i http://unknown.test:{port}/hello"),
        )
        .await,
    );
    assert!(out.contains("no allowed domain covers it"), "{out}");

    let asker = Asker::new(DomainAnswer::AllowOnce);
    let bash = walled(&l.root, policy(&peers).asker(asker.clone()));
    let cmd = format!("curl -sS http://unknown.test:{port}/hello http://unknown.test:{port}/hello");
    let out = text(&run(&bash, &cmd).await);
    assert_eq!(out, "hello from unknown.test\nhello from unknown.test\n");
    assert_eq!(asker.asked().len(), 1, "asked once per command");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_urllib_and_curl_over_tls_and_socks5_go_through_the_proxy() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(certs.path());
    let tls = Peers::start(|_| {}, Some((&cert, &key)));
    let plain = Peers::plain();
    let l = layout();
    let mut policy = policy(&plain).resolve_for_tests("secure.test", tls.addr());
    policy = policy
        .allow_domains(["secure.test", "allowed.test"])
        .unwrap();
    let bash = walled(
        &l.root,
        policy.clone().resolve_for_tests("allowed.test", tls.addr()),
    );
    let (p, t) = (plain.port, tls.port);

    let url = |host: &str, port: u16| format!("http://{host}:{port}/hello");
    let plain_bash = walled(&l.root, policy);
    assert_eq!(
        inside(&plain_bash, &l.root, &["fetch", &url("allowed.test", p)]).await,
        "hello from allowed.test"
    );
    let denied = inside(&plain_bash, &l.root, &["fetch", &url("denied.test", p)]).await;
    assert!(
        denied.starts_with("http 403: network access to denied.test"),
        "{denied}"
    );

    // HTTPS through CONNECT: curl checks the certificate, the proxy the SNI.
    let cert = cert.display();
    let https = run(
        &bash,
        &format!("curl -sS --cacert {cert} https://allowed.test:{t}/hello"),
    )
    .await;
    assert_eq!(
        text(&https).trim(),
        "hello from allowed.test",
        "{}",
        text(&https)
    );
    // SOCKS5 with names resolved by the proxy (ALL_PROXY's socks5h), TLS and plain HTTP.
    let socks =
        format!("curl -sS --proxy $ALL_PROXY --cacert {cert} https://allowed.test:{t}/hello");
    assert_eq!(
        text(&run(&bash, &socks).await).trim(),
        "hello from allowed.test"
    );
    let socks_plain = format!("curl -sS --proxy $ALL_PROXY http://allowed.test:{p}/hello");
    assert_eq!(
        text(&run(&plain_bash, &socks_plain).await).trim(),
        "hello from allowed.test"
    );
    let socks_denied = run(
        &plain_bash,
        &format!("curl -sS --proxy $ALL_PROXY http://denied.test:{p}/hello"),
    )
    .await;
    assert!(socks_denied.is_error, "{}", text(&socks_denied));
    assert!(
        !plain.requests().contains("denied.test"),
        "{}",
        plain.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_clones_over_smart_http_through_the_proxy() {
    let peers = Peers::start(
        |dir| {
            let work = dir.join("work");
            let git = |args: &[&str], cwd: &Path| {
                let status = Command::new("git")
                    .args([
                        "-c",
                        "user.name=t",
                        "-c",
                        "user.email=t@t",
                        "-c",
                        "init.defaultBranch=main",
                    ])
                    .args(args)
                    .current_dir(cwd)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .unwrap();
                assert!(status.success(), "git {args:?}");
            };
            std::fs::create_dir_all(dir.join("git")).unwrap();
            git(&["init", "--bare", "repo.git"], &dir.join("git"));
            std::fs::create_dir_all(&work).unwrap();
            git(&["init"], &work);
            std::fs::write(work.join("README"), "cloned through the proxy\n").unwrap();
            git(&["add", "README"], &work);
            git(&["commit", "-m", "one"], &work);
            let bare = dir.join("git/repo.git");
            git(
                &["push", bare.to_str().unwrap(), "HEAD:refs/heads/main"],
                &work,
            );
        },
        None,
    );
    let l = layout();
    let policy = policy_with(&peers, "git.test");
    let bash = walled(&l.root, policy);
    let port = peers.port;
    let out = run(&bash, &format!("git clone -q http://git.test:{port}/git/repo.git \"$TMPDIR/clone\" && cat \"$TMPDIR/clone/README\"")).await;
    assert_eq!(
        text(&out).trim(),
        "cloned through the proxy",
        "{}",
        text(&out)
    );
    assert!(
        peers.requests().contains("/git/repo.git/git-upload-pack"),
        "smart HTTP: {}",
        peers.requests()
    );
    let denied = run(
        &bash,
        &format!("git clone -q http://denied.test:{port}/git/repo.git \"$TMPDIR/d\""),
    )
    .await;
    refused(&denied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn npm_installs_from_a_local_registry_through_the_proxy() {
    let peers = Peers::start(
        |dir| {
            let package = dir.join("src/package");
            std::fs::create_dir_all(&package).unwrap();
            std::fs::write(
                package.join("package.json"),
                r#"{"name":"tiny-pkg","version":"1.0.0","main":"index.js"}"#,
            )
            .unwrap();
            std::fs::write(
                package.join("index.js"),
                "module.exports = 'tiny through the proxy';\n",
            )
            .unwrap();
            std::fs::create_dir_all(dir.join("npm")).unwrap();
            let status = Command::new("tar")
                .arg("czf")
                .arg(dir.join("npm/tiny-pkg-1.0.0.tgz"))
                .arg("package")
                .current_dir(dir.join("src"))
                .status()
                .unwrap();
            assert!(status.success());
        },
        None,
    );
    let l = layout();
    let policy = policy_with(&peers, "registry.test");
    let bash = walled(&l.root, policy);
    let port = peers.port;
    let npm = |host: &str| {
        format!(
            "npm install --no-audit --no-fund --no-update-notifier --cache \"$TMPDIR/npm-cache\" \
             --registry http://{host}:{port}/npm/ tiny-pkg 2>&1"
        )
    };
    let out = run(
        &bash,
        &format!(
            "{} && node -e \"console.log(require('tiny-pkg'))\"",
            npm("registry.test")
        ),
    )
    .await;
    says(&out, "tiny through the proxy");
    let denied = run(&bash, &npm("denied.test")).await;
    refused(&denied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_downloads_from_a_local_simple_index_through_the_proxy() {
    let peers = Peers::start(
        |dir| {
            let wheels = dir.join("wheels");
            std::fs::create_dir_all(&wheels).unwrap();
            let build = "import sys, zipfile\n\
                w = zipfile.ZipFile(sys.argv[1], 'w')\n\
                w.writestr('tiny_wheel/__init__.py', 'VALUE = 1\\n')\n\
                w.writestr('tiny_wheel-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: tiny-wheel\\nVersion: 1.0\\n')\n\
                w.writestr('tiny_wheel-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
                w.writestr('tiny_wheel-1.0.dist-info/RECORD', '')\n\
                w.close()\n";
            let status = Command::new("python3")
                .args(["-c", build])
                .arg(wheels.join("tiny_wheel-1.0-py3-none-any.whl"))
                .status()
                .unwrap();
            assert!(status.success());
        },
        None,
    );
    let l = layout();
    let policy = policy_with(&peers, "pypi.test");
    let bash = walled(&l.root, policy);
    let port = peers.port;
    let pip = |host: &str| {
        format!(
            "python3 -m pip download --no-cache-dir --disable-pip-version-check --no-deps \
             --index-url http://{host}:{port}/simple/ --trusted-host {host} -d \"$TMPDIR/dl\" tiny-wheel 2>&1"
        )
    };
    let out = run(&bash, &format!("{} && ls \"$TMPDIR/dl\"", pip("pypi.test"))).await;
    says(&out, "tiny_wheel-1.0-py3-none-any.whl");
    let denied = run(
        &bash,
        &pip("denied.test").replace("download", "download -vv"),
    )
    .await;
    let out = text(&denied);
    assert!(
        denied.is_error && out.contains("403 Client Error: network access to denied.test"),
        "{out}"
    );
}

// ---- attacks, each with its control outside the wall ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_a_direct_socket_to_an_ip_has_no_route() {
    let peers = Peers::plain();
    let l = layout();
    let bash = walled(&l.root, policy(&peers));
    let port = peers.port.to_string();
    let mut targets = vec!["127.0.0.1".to_owned()];
    targets.extend(host_address().map(|ip| ip.to_string()));
    for ip in &targets {
        let control = outside(&l.root, &["direct", ip, &port]);
        assert_eq!(control, "HTTP/1.1 200 OK", "control to {ip}");
        let attack = inside(&bash, &l.root, &["direct", ip, &port]).await;
        assert!(attack.starts_with("error"), "{ip}: {attack}");
    }
    // A program that ignores the proxy variables has neither a resolver nor a route.
    let ignoring = run(
        &bash,
        &format!("curl -sS --noproxy '*' http://allowed.test:{port}/hello"),
    )
    .await;
    assert!(ignoring.is_error, "{}", text(&ignoring));
    // The proxy's own port is the one thing listening in the namespace.
    let proxied = inside(&bash, &l.root, &["direct", "127.0.0.1", "3128"]).await;
    assert!(proxied.contains("400"), "{proxied}");
    let reached = peers.requests().matches("direct.test").count();
    assert_eq!(
        reached,
        targets.len(),
        "only the controls: {}",
        peers.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_dns_to_an_outside_resolver_has_no_route() {
    // A resolver on this machine's outward address stands for the outside one.
    let resolver = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    let port = resolver.local_addr().unwrap().port().to_string();
    std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while let Ok((n, from)) = resolver.recv_from(&mut buf) {
            let _ = resolver.send_to(&buf[..n], from);
        }
    });
    let peers = Peers::plain();
    let l = layout();
    let bash = walled(&l.root, policy(&peers));
    let mut servers = vec![("127.0.0.1".to_owned(), port.clone())];
    servers.extend(host_address().map(|ip| (ip.to_string(), port.clone())));
    for (server, port) in &servers {
        assert!(
            outside(&l.root, &["dns", server, port]).starts_with("answer"),
            "control {server}"
        );
        let attack = inside(&bash, &l.root, &["dns", server, port]).await;
        assert!(attack.starts_with("error"), "{server}: {attack}");
    }
    for public in ["8.8.8.8", "2001:4860:4860::8888"] {
        let attack = inside(&bash, &l.root, &["dns", public, "53"]).await;
        assert!(attack.contains("unreachable"), "{public}: {attack}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_connect_to_a_denied_domain_and_a_sni_that_differs_from_the_connect_host() {
    let certs = tempfile::tempdir().unwrap();
    let (cert, key) = certificate(certs.path());
    let tls = Peers::start(|_| {}, Some((&cert, &key)));
    let l = layout();
    let mut policy = policy(&tls);
    for name in ["allowed.test", "denied.test", "other.test"] {
        policy = policy.resolve_for_tests(name, tls.addr());
    }
    let bash = walled(&l.root, policy);
    let port = tls.port.to_string();
    let cafile = cert.to_str().unwrap();
    // `sni PROXY 3128 CONNECT-HOST PORT SERVER-NAME CAFILE` (PROXY `-`: straight to the server).
    let sni = |proxy: &'static str, host: &'static str, name: &'static str| {
        ["sni", proxy, "3128", host, &port, name, cafile].map(str::to_owned)
    };

    // The way that works: CONNECT allowed.test, SNI allowed.test.
    let ok = sni("127.0.0.1", "allowed.test", "allowed.test");
    assert_eq!(
        inside(&bash, &l.root, &strs(&ok)).await,
        "hello from allowed.test"
    );

    // CONNECT to a denied domain.
    let denied = sni("127.0.0.1", "denied.test", "denied.test");
    let out = inside(&bash, &l.root, &strs(&denied)).await;
    assert!(
        out.starts_with("HTTP/1.1 403 network access to denied.test"),
        "{out}"
    );

    // CONNECT allowed.test, then a ClientHello for other.test: the control shows the server
    // answers other.test when the hello reaches it.
    let control = sni("-", "-", "other.test");
    assert_eq!(outside(&l.root, &strs(&control)), "hello from other.test");
    let before = tls.requests();
    let attack = sni("127.0.0.1", "allowed.test", "other.test");
    let attack = strs(&attack);
    let out = inside(&bash, &l.root, &attack).await;
    assert!(out.contains("ALERT_ACCESS_DENIED"), "{out}");
    assert_eq!(
        tls.requests(),
        before,
        "the mismatched hello reached the server"
    );
    // A ClientHello with no server name at all; its control reaches the server.
    assert_eq!(
        outside(&l.root, &strs(&sni("-", "allowed.test", "-"))),
        "hello from allowed.test"
    );
    let before = tls.requests();
    let out = inside(
        &bash,
        &l.root,
        &strs(&sni("127.0.0.1", "allowed.test", "-")),
    )
    .await;
    assert!(out.contains("ALERT_ACCESS_DENIED"), "{out}");
    assert_eq!(
        tls.requests(),
        before,
        "the hello without a name reached the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_an_absolute_uri_whose_host_header_differs_and_a_request_smuggled_after_it() {
    let peers = Peers::plain();
    let l = layout();
    let bash = walled(&l.root, policy(&peers));
    let p = peers.port;
    let port = p.to_string();
    // Control: the server answers whatever Host it is sent.
    let control = outside(
        &l.root,
        &[
            "raw",
            "127.0.0.1",
            &port,
            "GET /hello HTTP/1.1\\r\\nHost: denied.test\\r\\nConnection: close\\r\\n\\r\\n",
        ],
    );
    assert!(control.ends_with("hello from denied.test"), "{control}");

    let seen = peers.requests().matches("denied.test").count();
    let fronted = format!(
        "GET http://allowed.test:{p}/hello HTTP/1.1\\r\\nHost: denied.test:{p}\\r\\n\\r\\n"
    );
    let out = inside(&bash, &l.root, &["raw", "127.0.0.1", "3128", &fronted]).await;
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    assert!(out.contains("Host header `denied.test"), "{out}");
    let two_hosts = format!(
        "GET http://allowed.test:{p}/hello HTTP/1.1\\r\\nHost: allowed.test:{p}\\r\\nHost: denied.test\\r\\n\\r\\n"
    );
    let out = inside(&bash, &l.root, &["raw", "127.0.0.1", "3128", &two_hosts]).await;
    assert!(out.contains("2 Host headers"), "{out}");
    // A second request on the same connection, and one hidden in a body: neither reaches the
    // server.
    let smuggled = format!(
        "GET http://allowed.test:{p}/hello HTTP/1.1\\r\\nHost: allowed.test:{p}\\r\\n\\r\\n\
         GET /hello HTTP/1.1\\r\\nHost: denied.test\\r\\n\\r\\n"
    );
    let out = inside(&bash, &l.root, &["raw", "127.0.0.1", "3128", &smuggled]).await;
    assert!(out.ends_with("hello from allowed.test"), "{out}");
    let both = format!(
        "POST http://allowed.test:{p}/hello HTTP/1.1\\r\\nHost: allowed.test:{p}\\r\\nContent-Length: 5\\r\\n\
         Transfer-Encoding: chunked\\r\\n\\r\\n0\\r\\n\\r\\nGET /hello HTTP/1.1\\r\\nHost: denied.test\\r\\n\\r\\n"
    );
    let out = inside(&bash, &l.root, &["raw", "127.0.0.1", "3128", &both]).await;
    assert!(
        out.contains("403") && out.contains("both Content-Length and Transfer-Encoding"),
        "{out}"
    );
    let reached = peers.requests().matches("denied.test").count();
    assert_eq!(reached, seen, "only the control: {}", peers.requests());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_allowed_names_and_ipv6_literals_that_reach_internal_addresses() {
    // No resolver override here: the system resolves these names.
    let peers = Peers::plain();
    let l = layout();
    let p = peers.port;
    let internal = [
        ("127.1", "resolves to 127.0.0.1, a loopback address"),
        (
            "169.254.43518",
            "resolves to 169.254.169.254, a cloud metadata address",
        ),
        ("localhost", "names a loopback host"),
        ("[::1]", "::1 is a loopback address"),
        (
            "[::ffff:127.0.0.1]",
            "::ffff:127.0.0.1 is a loopback address",
        ),
        ("[::ffff:169.254.169.254]", "is a cloud metadata address"),
        ("[64:ff9b::7f00:1]", "is a loopback address"),
        ("[::127.0.0.1]", "is a loopback address"),
        ("[fe80::1]", "is a link-local address"),
        ("[fd00::1]", "is a private address"),
        ("[::]", "is an unspecified address"),
        ("10.1.2.3", "is a private address"),
        ("0.0.0.0", "is an unspecified address"),
    ];
    let rules: Vec<&str> = internal.iter().map(|(host, _)| *host).collect();
    let bash = walled(&l.root, NetworkPolicy::new().allow_domains(&rules).unwrap());
    // Controls: outside, these names and literals reach the local server or resolve to
    // metadata.
    assert_eq!(
        outside(&l.root, &["fetch", &format!("http://127.1:{p}/hello")]),
        "hello from 127.1"
    );
    assert_eq!(
        outside(&l.root, &["direct", "::ffff:127.0.0.1", &p.to_string()]),
        "HTTP/1.1 200 OK"
    );
    assert_eq!(
        outside(&l.root, &["resolve", "169.254.43518"]),
        "169.254.169.254"
    );
    let controls = peers.requests().len();
    for (host, why) in internal {
        // Spelled exactly so (curl would rewrite `127.1`), as an absolute URI and as CONNECT.
        let absolute =
            format!("GET http://{host}:{p}/hello HTTP/1.1\\r\\nHost: {host}:{p}\\r\\n\\r\\n");
        let out = inside(&bash, &l.root, &["raw", "127.0.0.1", "3128", &absolute]).await;
        assert!(
            out.starts_with("HTTP/1.1 403") && out.contains(why),
            "{host}: {out}"
        );
        let connect = format!("CONNECT {host}:{p} HTTP/1.1\\r\\nHost: {host}:{p}\\r\\n\\r\\n");
        let out = inside(&bash, &l.root, &["raw", "127.0.0.1", "3128", &connect]).await;
        assert!(
            out.starts_with("HTTP/1.1 403") && out.contains(why),
            "{host} through CONNECT: {out}"
        );
    }
    // curl, which writes `127.1` as 127.0.0.1.
    let out = text(&run(&bash, &format!("curl -sS -i http://127.1:{p}/hello")).await);
    assert!(out.contains("127.0.0.1 is a loopback address"), "{out}");
    assert_eq!(
        peers.requests().len(),
        controls,
        "only the controls: {}",
        peers.requests()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_a_relay_through_a_unix_socket_to_a_host_process() {
    let peers = Peers::plain();
    let l = layout();
    // The host process: relays what comes in on a Unix socket to the local server.
    let path = l.outside.join("relay.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let port = peers.port;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let Ok(tcp) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            let (mut a, mut b) = (stream.try_clone().unwrap(), tcp.try_clone().unwrap());
            std::thread::spawn(move || std::io::copy(&mut a, &mut { tcp }));
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut b, &mut &stream);
                let _ = stream.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    let socket = path.to_str().unwrap();
    assert_eq!(
        outside(&l.root, &["unix", socket]),
        "hello from relay.test",
        "control"
    );
    let bash = walled(&l.root, policy(&peers));
    let out = inside(&bash, &l.root, &["unix", socket]).await;
    assert!(out.starts_with("error PermissionError"), "{out}");
    // The settings can open Unix sockets.
    let open = walled(&l.root, policy(&peers).allow_unix_socket(&path));
    assert_eq!(
        inside(&open, &l.root, &["unix", socket]).await,
        "hello from relay.test"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_policy_without_the_mount_view_is_a_typed_error_not_an_open_network() {
    let l = layout();
    // Secrets visible, so the only thing that needs the mount view is the network.
    let files = mux_tool::builtin::FilePolicy {
        secrets_visible: true,
        ..Default::default()
    };
    let bash = walled(&l.root, NetworkPolicy::new())
        .file_policy(files)
        .mount_view(false);
    let args: mux_tool::builtin::BashArgs =
        serde_json::from_value(serde_json::json!({"command": "true"})).unwrap();
    let err = mux_tool::TypedTool::call(&bash, args, mux_tool::ToolContext::new("c"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs the mount view"), "{err}");
}
