//! A tunnel the proxy opened (HTTP CONNECT or SOCKS5): its first bytes must be a TLS
//! ClientHello whose server name is the tunnel's host, or a plain HTTP request whose `Host`
//! is; anything else is refused before the destination sees a byte.

use tokio::io::{AsyncWriteExt, copy_bidirectional_with_sizes};
use tokio::net::TcpStream;

use super::forward::{self, Body};
use super::gate::Gate;
use super::head::{self, HeadError};
use super::refusal::Refusal;
use super::rule::Host;
use super::sni::{self, Hello};

/// A TLS alert record: fatal (2), `access_denied` (49).
const ACCESS_DENIED: [u8; 7] = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 49];

/// Buffer size of each direction of a tunnel.
const TUNNEL_BUFFER: usize = 64 * 1024;

/// Carries `client`'s tunnel to `host:port` (already admitted), checking its first bytes.
/// `early` holds what the client sent after its CONNECT or SOCKS request.
pub(crate) async fn carry(
    gate: &Gate,
    mut client: TcpStream,
    mut early: Vec<u8>,
    host: &Host,
    port: u16,
) -> Result<(), Refusal> {
    let closed = |_| {
        Refusal::mismatch(
            host,
            port,
            "the tunnel closed before its first request".into(),
        )
    };
    head::fill(&mut client, &mut early, 1, |b| !b.is_empty())
        .await
        .map_err(closed)?;
    if early[0] == 0x16 {
        let mut hello = Hello::Partial;
        head::fill(&mut client, &mut early, sni::MAX_HELLO, |b| {
            hello = sni::read(b);
            hello != Hello::Partial
        })
        .await
        .map_err(|_| {
            Refusal::mismatch(
                host,
                port,
                "the TLS ClientHello did not arrive whole".into(),
            )
        })?;
        if let Err(refusal) = check_name(host, port, hello) {
            // A fatal `access_denied` alert: TLS clients print "tlsv1 alert access denied".
            let _ = client.write_all(&ACCESS_DENIED).await;
            let _ = client.shutdown().await;
            return Err(refusal);
        }
        let mut origin = gate.connect(host, port).await?;
        let _ = origin.write_all(&early).await;
        let _ =
            copy_bidirectional_with_sizes(&mut client, &mut origin, TUNNEL_BUFFER, TUNNEL_BUFFER)
                .await;
        return Ok(());
    }
    if !head::looks_like_http(&early) {
        return Err(Refusal::mismatch(
            host,
            port,
            "the tunnel carries neither TLS nor HTTP; only those two can be checked against the allowed domains".into(),
        ));
    }
    let (request, rest) = match head::read(&mut client, &mut early).await {
        Ok(read) => read,
        Err(HeadError::Closed) => return Ok(()),
        Err(HeadError::Bad(why)) => return Err(refuse_http(&mut client, host, port, why).await),
    };
    if let Err(why) = host_matches(&request, host, port) {
        return Err(refuse_http(&mut client, host, port, why).await);
    }
    let body = match forward::body(&request) {
        Ok(body) => body,
        Err(why) => {
            return Err(refuse_http(
                &mut client,
                host,
                port,
                format!("the request's body cannot be framed: {why}"),
            )
            .await);
        }
    };
    plain(
        gate,
        client,
        rest,
        &request,
        request.target.clone(),
        body,
        host,
        port,
    )
    .await
}

/// Forwards one plain request (already checked) to `host:port`.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn plain(
    gate: &Gate,
    mut client: TcpStream,
    rest: Vec<u8>,
    request: &head::Head,
    target: String,
    body: Body,
    host: &Host,
    port: u16,
) -> Result<(), Refusal> {
    let origin = match gate.connect(host, port).await {
        Ok(origin) => origin,
        Err(refusal) => {
            let _ = write_refusal(&mut client, &refusal).await;
            return Err(refusal);
        }
    };
    let head_bytes = forward::origin_head(request, &target);
    let _ = forward::forward(client, rest, head_bytes, body, origin).await;
    Ok(())
}

/// Answers `403` with the refusal, and returns it.
async fn refuse_http(client: &mut TcpStream, host: &Host, port: u16, why: String) -> Refusal {
    let refusal = Refusal::mismatch(host, port, why);
    let _ = write_refusal(client, &refusal).await;
    refusal
}

/// Writes `refusal` as an HTTP response: `403` for a denial, `502` when the destination
/// could not be reached; the text is in the reason phrase (which clients print) and the
/// body.
pub(crate) async fn write_refusal(
    client: &mut TcpStream,
    refusal: &Refusal,
) -> std::io::Result<()> {
    let text = refusal.to_string();
    let status = if refusal.is_denial() { 403 } else { 502 };
    let reason: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    let body = format!("{text}\n");
    let response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

/// Whether the ClientHello names `host`.
fn check_name(host: &Host, port: u16, hello: Hello) -> Result<(), Refusal> {
    let what = match hello {
        Hello::Name(name) if Host::parse(&name).as_ref() == Some(host) => return Ok(()),
        Hello::Name(name) => format!("the TLS ClientHello asks for `{name}`, not the tunnel's host"),
        Hello::NoName => "the TLS ClientHello names no server (SNI), so it cannot be checked against the tunnel's host".into(),
        Hello::Encrypted => "the TLS ClientHello hides its server name (encrypted ClientHello), so it cannot be checked".into(),
        Hello::NotTls(why) => why.into(),
        Hello::Partial => "the TLS ClientHello is incomplete".into(),
    };
    Err(Refusal::mismatch(host, port, what))
}

/// Whether the request's one `Host` header names `host:port` (the port may be left out when
/// it is 80).
pub(crate) fn host_matches(request: &head::Head, host: &Host, port: u16) -> Result<(), String> {
    let values: Vec<&[u8]> = request.values("host").collect();
    let [value] = values.as_slice() else {
        return Err(format!(
            "the request has {} Host headers, not one",
            values.len()
        ));
    };
    let text = std::str::from_utf8(value).unwrap_or_default().trim();
    let named = Host::parse_authority(text).or_else(|| Host::parse(text).map(|h| (h, 80)));
    match named {
        Some((named, named_port)) if &named == host && named_port == port => Ok(()),
        _ => Err(format!(
            "the request's Host header `{}` is not {host}:{port}",
            text.escape_default()
        )),
    }
}
