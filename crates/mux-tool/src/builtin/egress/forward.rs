//! One plain HTTP request forwarded to its origin: the request head rewritten to origin form
//! with `Connection: close`, its body copied exactly (by `Content-Length` or chunk by chunk),
//! then the response until the origin closes. One request per connection: nothing the
//! command sends after the body reaches the origin, so a second request cannot ride on a
//! connection the first one opened.

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::head::Head;

/// Headers that concern the hop to the proxy, not the origin.
const HOP_HEADERS: [&str; 7] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "te",
    "upgrade",
];

/// How a request's body ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Body {
    /// No body.
    Empty,
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked.
    Chunked,
}

/// How the body of `head` ends, or why it cannot be told (both framings, several lengths,
/// an unknown transfer coding: the ways to smuggle a second request).
pub(crate) fn body(head: &Head) -> Result<Body, String> {
    let lengths: Vec<&[u8]> = head.values("content-length").collect();
    let codings: Vec<&[u8]> = head.values("transfer-encoding").collect();
    match (lengths.as_slice(), codings.as_slice()) {
        ([], []) => Ok(Body::Empty),
        ([one], []) => std::str::from_utf8(one)
            .ok()
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse().ok())
            .map(Body::Length)
            .ok_or_else(|| "its Content-Length is not a number".into()),
        ([], [one]) if one.eq_ignore_ascii_case(b"chunked") => Ok(Body::Chunked),
        ([], _) => Err("only the chunked transfer coding is proxied".into()),
        ([_], [_, ..]) => Err("it has both Content-Length and Transfer-Encoding".into()),
        _ => Err("it has several Content-Length headers".into()),
    }
}

/// The head sent to the origin: `method target` with the command's headers, less the
/// hop-by-hop ones, and `Connection: close`.
pub(crate) fn origin_head(head: &Head, origin_target: &str) -> Vec<u8> {
    let mut out = format!("{} {} HTTP/1.1\r\n", head.method, origin_target).into_bytes();
    for (name, value) in &head.headers {
        if HOP_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            continue;
        }
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

/// Sends the request (`head_bytes`, then the body from `early` and `client`) to `origin`
/// and the response back, until the origin closes.
pub(crate) async fn forward<C>(
    client: C,
    early: Vec<u8>,
    head_bytes: Vec<u8>,
    body: Body,
    origin: TcpStream,
) -> std::io::Result<()>
where
    C: AsyncRead + AsyncWrite + Unpin,
{
    let (mut from_client, mut to_client) = tokio::io::split(client);
    let (mut from_origin, mut to_origin) = origin.into_split();
    to_origin.write_all(&head_bytes).await?;
    let send = async {
        let mut source = (&early[..]).chain(&mut from_client);
        match body {
            Body::Empty => Ok(()),
            Body::Length(n) => {
                let copied = tokio::io::copy(&mut (&mut source).take(n), &mut to_origin).await?;
                if copied < n {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                Ok(())
            }
            Body::Chunked => copy_chunked(&mut source, &mut to_origin).await,
        }
    };
    let receive = async {
        tokio::io::copy(&mut from_origin, &mut to_client).await?;
        to_client.shutdown().await
    };
    let (sent, received) = tokio::join!(send, receive);
    received.and(sent)
}

/// Copies a chunked body up to its last chunk and trailers, and not a byte further.
async fn copy_chunked<R, W>(source: &mut R, sink: &mut W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    loop {
        let line = read_line(source).await?;
        sink.write_all(&line).await?;
        let text = std::str::from_utf8(&line).map_err(|_| invalid("chunk size"))?;
        let size = text.trim_end().split(';').next().unwrap_or_default().trim();
        let size = u64::from_str_radix(size, 16).map_err(|_| invalid("chunk size"))?;
        if size == 0 {
            // Trailers, up to an empty line.
            loop {
                let line = read_line(source).await?;
                sink.write_all(&line).await?;
                if line == b"\r\n" || line == b"\n" {
                    return Ok(());
                }
            }
        }
        let copied = tokio::io::copy(&mut (&mut *source).take(size), sink).await?;
        if copied < size {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let end = read_line(source).await?;
        if end != b"\r\n" && end != b"\n" {
            return Err(invalid("chunk end"));
        }
        sink.write_all(&end).await?;
    }
}

/// One line, with its end, at most 4 KiB.
async fn read_line<R: AsyncRead + Unpin>(source: &mut R) -> std::io::Result<Vec<u8>> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 4096 {
        if source.read(&mut byte).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        line.push(byte[0]);
        if byte[0] == b'\n' {
            return Ok(line);
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        "chunk line too long",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(headers: &[(&str, &str)]) -> Head {
        Head {
            method: "POST".into(),
            target: "/".into(),
            headers: headers
                .iter()
                .map(|(n, v)| ((*n).into(), v.as_bytes().to_vec()))
                .collect(),
        }
    }

    #[test]
    fn framing() {
        assert_eq!(body(&head(&[])), Ok(Body::Empty));
        assert_eq!(
            body(&head(&[("Content-Length", "12")])),
            Ok(Body::Length(12))
        );
        assert_eq!(
            body(&head(&[("transfer-encoding", "Chunked")])),
            Ok(Body::Chunked)
        );
        for smuggle in [
            &[("Content-Length", "1"), ("Transfer-Encoding", "chunked")][..],
            &[("Content-Length", "1"), ("Content-Length", "2")][..],
            &[("Content-Length", "-1")][..],
            &[("Content-Length", "1, 1")][..],
            &[("Transfer-Encoding", "gzip, chunked")][..],
        ] {
            assert!(body(&head(smuggle)).is_err(), "{smuggle:?}");
        }
    }

    #[tokio::test]
    async fn a_chunked_body_stops_at_its_end() {
        let input = b"4\r\nWiki\r\n0\r\nX-T: 1\r\n\r\nGET /second HTTP/1.1\r\n\r\n".to_vec();
        let mut source = &input[..];
        let mut out = Vec::new();
        copy_chunked(&mut source, &mut out)
            .await
            .unwrap_or_else(|e| unreachable!("{e}"));
        assert_eq!(out, b"4\r\nWiki\r\n0\r\nX-T: 1\r\n\r\n");
        assert_eq!(source, b"GET /second HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn hop_headers_are_replaced() {
        let h = head(&[
            ("Host", "a.test"),
            ("Proxy-Connection", "keep-alive"),
            ("Connection", "keep-alive"),
        ]);
        let out = String::from_utf8(origin_head(&h, "/x")).unwrap_or_default();
        assert_eq!(
            out,
            "POST /x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
        );
    }
}
