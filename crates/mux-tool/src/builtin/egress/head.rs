//! Reading an HTTP/1 request head from a command, with a size cap and a timeout.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest request head read.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// How long a command may take to send a request head or a ClientHello.
pub(crate) const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// The most header lines read.
const MAX_HEADERS: usize = 128;

/// A parsed request head.
#[derive(Clone, Debug)]
pub(crate) struct Head {
    pub(crate) method: String,
    pub(crate) target: String,
    /// Header names and values, as sent.
    pub(crate) headers: Vec<(String, Vec<u8>)>,
}

impl Head {
    /// The values of header `name` (any case).
    pub(crate) fn values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// Why a head could not be read.
#[derive(Debug)]
pub(crate) enum HeadError {
    /// The command closed the connection, or it failed.
    Closed,
    /// Too slow, too large or not HTTP; the text says which.
    Bad(String),
}

/// Whether `buf` starts like an HTTP/1 request (an upper-case token and a space).
pub(crate) fn looks_like_http(buf: &[u8]) -> bool {
    let token = buf.iter().take_while(|b| b.is_ascii_uppercase()).count();
    token > 0 && buf.get(token) == Some(&b' ')
}

/// Reads more of `stream` into `buf` until `done` says the bytes are complete; fails at
/// `cap` bytes or after [`HEAD_TIMEOUT`].
pub(crate) async fn fill<S, F>(
    stream: &mut S,
    buf: &mut Vec<u8>,
    cap: usize,
    mut done: F,
) -> Result<(), HeadError>
where
    S: AsyncRead + Unpin,
    F: FnMut(&[u8]) -> bool,
{
    let read = async {
        let mut chunk = [0u8; 4096];
        while !done(buf) {
            if buf.len() >= cap {
                return Err(HeadError::Bad(format!(
                    "more than {cap} bytes before the request"
                )));
            }
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return Err(HeadError::Closed),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        Ok(())
    };
    tokio::time::timeout(HEAD_TIMEOUT, read)
        .await
        .unwrap_or_else(|_| Err(HeadError::Bad("the request did not arrive in time".into())))
}

/// Reads a request head from `stream` (after the bytes already in `buf`); returns it and the
/// bytes that followed it.
pub(crate) async fn read<S: AsyncRead + Unpin>(
    stream: &mut S,
    buf: &mut Vec<u8>,
) -> Result<(Head, Vec<u8>), HeadError> {
    let mut parsed = None;
    fill(stream, buf, MAX_HEAD, |bytes| match parse(bytes) {
        Ok(Some(done)) => {
            parsed = Some(Ok(done));
            true
        }
        Ok(None) => false,
        Err(err) => {
            parsed = Some(Err(err));
            true
        }
    })
    .await?;
    let (head, len) = parsed
        .unwrap_or_else(|| Err("no request".into()))
        .map_err(HeadError::Bad)?;
    Ok((head, buf[len..].to_vec()))
}

/// The head at the start of `bytes` and its length, `None` while incomplete.
fn parse(bytes: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(bytes) {
        Ok(httparse::Status::Partial) => Ok(None),
        Ok(httparse::Status::Complete(len)) => {
            if req.version != Some(1) {
                return Err("only HTTP/1.1 requests are proxied".into());
            }
            let head = Head {
                method: req.method.unwrap_or_default().to_owned(),
                target: req.path.unwrap_or_default().to_owned(),
                headers: req
                    .headers
                    .iter()
                    .map(|h| (h.name.to_owned(), h.value.to_vec()))
                    .collect(),
            };
            Ok(Some((head, len)))
        }
        Err(err) => Err(format!("the request head is not valid HTTP/1.1: {err}")),
    }
}
