//! HAProxy really balances per request, and takes a dead backend out.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use mux_testkit::balancer::Balancer;

/// An HTTP/1.1 server answering every request with `name`, keep-alive; stops when the
/// listener is dropped by the returned handle's owner (the thread leaks, as test servers may).
fn named_server(name: &'static str) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let address = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream, name));
        }
    });
    (address, handle)
}

fn serve(stream: TcpStream, name: &str) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    loop {
        let mut line = String::new();
        // Request line and headers up to the blank line.
        loop {
            line.clear();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line == "\r\n" {
                break;
            }
        }
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{name}",
            name.len()
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Sends `count` GETs on one connection and returns the bodies (each one byte long).
fn bodies(address: SocketAddr, count: usize) -> Vec<String> {
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    (0..count)
        .map(|_| {
            stream
                .write_all(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
                .unwrap();
            let mut length = 0;
            let mut line = String::new();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            String::from_utf8(body).unwrap()
        })
        .collect()
}

#[test]
fn requests_on_one_connection_alternate_between_backends() {
    let (a, _a) = named_server("a");
    let (b, _b) = named_server("b");
    let balancer = Balancer::round_robin(&[a, b]).expect("haproxy");
    let seen = bodies(balancer.address(), 6);
    assert!(
        seen.iter().filter(|s| *s == "a").count() == 3
            && seen.iter().filter(|s| *s == "b").count() == 3,
        "requests were not spread per request: {seen:?}\n{}",
        balancer.log()
    );
}

#[test]
fn a_backend_that_refuses_connections_is_skipped() {
    let (a, _a) = named_server("a");
    // A port with nothing listening: connections are refused.
    let dead = TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap();
    let balancer = Balancer::round_robin(&[a, dead]).expect("haproxy");
    let seen = bodies(balancer.address(), 4);
    assert_eq!(seen, ["a", "a", "a", "a"], "{}", balancer.log());
}
