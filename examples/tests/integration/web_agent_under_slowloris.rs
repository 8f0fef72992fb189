//! 1,100 half-open connections (partial headers, silent sockets, stalled bodies) against the
//! web_agent example running under `ulimit -n 1024` in its own process: normal requests are
//! still served within 2 s, and every half-open connection is closed within the configured
//! timeouts (or shed earlier to make room).

use std::io::{ErrorKind, Read as _, Write as _};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;

const HALF_OPEN: usize = 1_100;
const TIMEOUT_MS: u64 = 4_000;

/// Raises this test process's own descriptor limit so it can hold the attack's sockets.
fn raise_own_fd_limit(wanted: u64) {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    if limit.current.is_some_and(|soft| soft < wanted) {
        limit.current = Some(wanted.min(hard));
        setrlimit(Resource::Nofile, limit).unwrap();
    }
    let soft = getrlimit(Resource::Nofile).current.unwrap_or(u64::MAX);
    assert!(
        soft >= wanted,
        "the test needs {wanted} descriptors; the hard limit is {hard}"
    );
}

/// The server's open descriptors, from /proc.
fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// One normal request; returns the status and how long it took.
fn timed(url: &str, request: &str) -> (u16, Duration) {
    let started = Instant::now();
    let status = common::raw_status(url, request);
    (status, started.elapsed())
}

/// Whether the server closed the socket: reading gives end-of-file or a reset (a response
/// written before closing is read past).
fn closed_by_server(tcp: &mut TcpStream) -> bool {
    tcp.set_nonblocking(true).unwrap();
    let mut buffer = [0u8; 4096];
    loop {
        match tcp.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

#[test]
fn under_1100_half_open_connections_with_1024_descriptors_normal_requests_are_served() {
    raise_own_fd_limit(4_096);
    let mut shell = Command::new("sh");
    shell
        .args(["-c", "ulimit -n 1024 && exec \"$0\" \"$@\""])
        .arg(common::example("web_agent"));
    let ms = TIMEOUT_MS.to_string();
    let server = common::Example::start_with(
        shell,
        &[
            "--token",
            "slow-token",
            "--header-timeout-ms",
            &ms,
            "--idle-timeout-ms",
            &ms,
            "--body-timeout-ms",
            &ms,
        ],
    );
    let pid = server.child.id();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let nofile = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .to_owned();
    assert!(nofile.split_whitespace().nth(3) == Some("1024"), "{nofile}");

    let address = server.url.trim_start_matches("http://").to_owned();
    let mut half_open = Vec::with_capacity(HALF_OPEN);
    let opened = Instant::now();
    for n in 0..HALF_OPEN {
        let mut tcp = TcpStream::connect(&address).unwrap();
        let partial = match n % 3 {
            // A request head that never ends.
            0 => format!("GET /agui/threads/t{n}/messages HTTP/1.1\r\nHost: {address}\r\nX-Slow: "),
            // Nothing at all.
            1 => String::new(),
            // A complete head, then 10 of the 1,000 body bytes it announced.
            _ => format!(
                "POST /agui HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer slow-token\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"threadId\""
            ),
        };
        // A write to a socket the server already shed may fail: that connection is closed.
        let _ = tcp.write_all(partial.as_bytes());
        half_open.push(tcp);
    }
    let opening = opened.elapsed();
    let fds_under_attack = open_fds(pid);

    let host = &address;
    let page = format!("GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
    let history = format!(
        "GET /agui/threads/none/messages HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer slow-token\r\nConnection: close\r\n\r\n"
    );
    let mut served = Vec::new();
    for request in [&page, &history, &page, &history, &page] {
        let (status, took) = timed(&server.url, request);
        served.push((status, took));
        assert!(
            took < Duration::from_secs(2),
            "a normal request took {took:?} under attack"
        );
    }
    let statuses: Vec<u16> = served.iter().map(|(s, _)| *s).collect();
    assert_eq!(statuses, [200, 404, 200, 404, 200]);

    // Past every configured timeout (plus slack for a loaded machine), nothing is left open.
    std::thread::sleep(Duration::from_millis(TIMEOUT_MS + 2_000));
    let still_open: Vec<usize> = half_open
        .iter_mut()
        .enumerate()
        .filter_map(|(n, tcp)| (!closed_by_server(tcp)).then_some(n))
        .collect();
    assert!(
        still_open.is_empty(),
        "{} half-open connections are still open after {} ms (kinds n % 3: {:?})",
        still_open.len(),
        TIMEOUT_MS + 2_000,
        still_open
            .iter()
            .take(10)
            .map(|n| n % 3)
            .collect::<Vec<_>>()
    );
    drop(half_open);
    let (status, took) = timed(&server.url, &page);
    assert_eq!(status, 200);
    eprintln!(
        "slowloris: {HALF_OPEN} half-open connections opened in {opening:?}; server fds under attack {fds_under_attack} (limit 1024); normal requests {:?}; after the timeouts {took:?}",
        served.iter().map(|(_, t)| *t).collect::<Vec<_>>()
    );
}
