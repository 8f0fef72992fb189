//! The HTTP proxy: `CONNECT host:port` opens a tunnel (module `tunnel`), an absolute-URI
//! request (`GET http://host/path`) is forwarded once its `Host` header names the URI's host.

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::forward;
use super::gate::Gate;
use super::head::{self, Head, HeadError};
use super::refusal::Refusal;
use super::rule::Host;
use super::tunnel;

/// Serves one HTTP proxy connection whose first bytes are in `buf`.
pub(crate) async fn serve(
    gate: &Gate,
    mut client: TcpStream,
    mut buf: Vec<u8>,
) -> Result<(), String> {
    let (request, rest) = match head::read(&mut client, &mut buf).await {
        Ok(read) => read,
        Err(HeadError::Closed) => return Ok(()),
        Err(HeadError::Bad(why)) => {
            bad_request(&mut client, &why).await;
            return Err(why);
        }
    };
    if request.method.eq_ignore_ascii_case("CONNECT") {
        let Some((host, port)) = Host::parse_authority(&request.target) else {
            let why = format!(
                "CONNECT needs host:port, not `{}`",
                request.target.escape_default()
            );
            bad_request(&mut client, &why).await;
            return Err(why);
        };
        if let Err(refusal) = gate.admit(&host, port).await {
            let _ = tunnel::write_refusal(&mut client, &refusal).await;
            return Err(refusal.to_string());
        }
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await
            .map_err(|err| err.to_string())?;
        return tunnel::carry(gate, client, rest, &host, port)
            .await
            .map_err(|refusal| refusal.to_string());
    }
    absolute(gate, client, rest, &request).await
}

/// Forwards an absolute-URI request.
async fn absolute(
    gate: &Gate,
    mut client: TcpStream,
    rest: Vec<u8>,
    request: &Head,
) -> Result<(), String> {
    let Some((host, port, path)) = split_uri(&request.target) else {
        let why = format!(
            "this proxy takes CONNECT or an absolute http:// URI, not `{}` (for https, use CONNECT)",
            request.target.escape_default()
        );
        bad_request(&mut client, &why).await;
        return Err(why);
    };
    let checked = tunnel::host_matches(request, &host, port).and_then(|()| {
        forward::body(request).map_err(|why| format!("the request's body cannot be framed: {why}"))
    });
    let body = match checked {
        Ok(body) => body,
        Err(why) => {
            let refusal = Refusal::mismatch(&host, port, why);
            let _ = tunnel::write_refusal(&mut client, &refusal).await;
            return Err(refusal.to_string());
        }
    };
    tunnel::plain(gate, client, rest, request, path, body, &host, port)
        .await
        .map_err(|refusal| refusal.to_string())
}

/// `http://host[:port]/path?query` → host, port, `/path?query`. No user info, no other
/// scheme.
fn split_uri(uri: &str) -> Option<(Host, u16, String)> {
    let scheme_end = uri.find("://")?;
    if !uri[..scheme_end].eq_ignore_ascii_case("http") {
        return None;
    }
    let rest = &uri[scheme_end + 3..];
    let cut = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(cut);
    if authority.contains('@') {
        return None;
    }
    let (host, port) =
        Host::parse_authority(authority).or_else(|| Host::parse(authority).map(|h| (h, 80)))?;
    let path = path.split('#').next().unwrap_or_default();
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    Some((host, port, path))
}

async fn bad_request(client: &mut TcpStream, why: &str) {
    let body = format!("{why}\n");
    let response = format!(
        "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = client.write_all(response.as_bytes()).await;
    let _ = client.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris() {
        let name = |h: &str| Host::parse(h).unwrap_or_else(|| unreachable!());
        assert_eq!(
            split_uri("http://A.test/x?y#z"),
            Some((name("a.test"), 80, "/x?y".into()))
        );
        assert_eq!(
            split_uri("HTTP://a.test:8080"),
            Some((name("a.test"), 8080, "/".into()))
        );
        assert_eq!(
            split_uri("http://[::1]:81/"),
            Some((name("[::1]"), 81, "/".into()))
        );
        assert_eq!(split_uri("https://a.test/"), None);
        assert_eq!(split_uri("http://user@a.test/"), None);
        assert_eq!(split_uri("/relative"), None);
    }
}
