//! The SOCKS5 proxy (RFC 1928): no authentication, the CONNECT command, IPv4, IPv6 and
//! domain addresses. A refused destination gets reply 2, "connection not allowed by
//! ruleset"; an allowed one a tunnel (module `tunnel`).

use std::net::{Ipv4Addr, Ipv6Addr};

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::gate::Gate;
use super::head::{self, HeadError};
use super::rule::Host;
use super::tunnel;

const NOT_ALLOWED: u8 = 2;
const UNREACHABLE: u8 = 4;
const BAD_COMMAND: u8 = 7;
const BAD_ADDRESS: u8 = 8;

/// Serves one SOCKS5 connection whose first bytes are in `buf`.
pub(crate) async fn serve(
    gate: &Gate,
    mut client: TcpStream,
    mut buf: Vec<u8>,
) -> Result<(), String> {
    let greeting = |b: &[u8]| b.len() >= 2 && b.len() >= 2 + usize::from(b[1]);
    head::fill(&mut client, &mut buf, 300, greeting)
        .await
        .map_err(describe)?;
    let methods = &buf[2..2 + usize::from(buf[1])];
    if !methods.contains(&0) {
        let _ = client.write_all(&[5, 0xff]).await;
        return Err("the SOCKS5 client offers no method without authentication".into());
    }
    let rest = buf.split_off(2 + usize::from(buf[1]));
    client.write_all(&[5, 0]).await.map_err(|e| e.to_string())?;
    let mut buf = rest;
    head::fill(&mut client, &mut buf, 300, |b| request_len(b).is_some())
        .await
        .map_err(describe)?;
    let len = request_len(&buf).unwrap_or(buf.len());
    let early = buf.split_off(len);
    if buf[0] != 5 || buf[1] != 1 {
        reply(&mut client, BAD_COMMAND).await;
        return Err("only the SOCKS5 CONNECT command is served".into());
    }
    let port = u16::from_be_bytes([buf[len - 2], buf[len - 1]]);
    let host = match buf[3] {
        1 => Some(Host::Ip(
            Ipv4Addr::new(buf[4], buf[5], buf[6], buf[7]).into(),
        )),
        4 => {
            let mut octets = [0u8; 16];
            octets.copy_from_slice(&buf[4..20]);
            Some(Host::Ip(Ipv6Addr::from(octets).into()))
        }
        3 => std::str::from_utf8(&buf[5..len - 2])
            .ok()
            .and_then(Host::parse),
        _ => None,
    };
    let Some(host) = host.filter(|_| port != 0) else {
        reply(&mut client, BAD_ADDRESS).await;
        return Err("the SOCKS5 address is not a valid host and port".into());
    };
    if let Err(refusal) = gate.admit(&host, port).await {
        reply(
            &mut client,
            if refusal.is_denial() {
                NOT_ALLOWED
            } else {
                UNREACHABLE
            },
        )
        .await;
        return Err(refusal.to_string());
    }
    client
        .write_all(&[5, 0, 0, 1, 0, 0, 0, 0, 0, 0])
        .await
        .map_err(|e| e.to_string())?;
    tunnel::carry(gate, client, early, &host, port)
        .await
        .map_err(|refusal| refusal.to_string())
}

/// The length of the CONNECT request at the start of `b`, once it is whole.
fn request_len(b: &[u8]) -> Option<usize> {
    let len = match *b.get(3)? {
        1 => 4 + 4 + 2,
        4 => 4 + 16 + 2,
        3 => 4 + 1 + usize::from(*b.get(4)?) + 2,
        _ => return Some(b.len().max(4)),
    };
    (b.len() >= len).then_some(len)
}

async fn reply(client: &mut TcpStream, code: u8) {
    let _ = client.write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0]).await;
    let _ = client.shutdown().await;
}

fn describe(err: HeadError) -> String {
    match err {
        HeadError::Closed => "the SOCKS5 client closed the connection".into(),
        HeadError::Bad(why) => why,
    }
}
