//! The server name a TLS ClientHello asks for (its SNI), read from the first bytes a command
//! sends through a tunnel, before anything reaches the destination.

/// The largest ClientHello read (several records).
pub(crate) const MAX_HELLO: usize = 64 * 1024;

/// What the first bytes of a tunnel are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Hello {
    /// Not complete yet: read more.
    Partial,
    /// Not a TLS ClientHello (or a malformed one), with what was wrong.
    NotTls(&'static str),
    /// A ClientHello with no server name.
    NoName,
    /// A ClientHello with an encrypted inner hello (ECH), whose real name the proxy cannot
    /// see.
    Encrypted,
    /// The one server name, lower case.
    Name(String),
}

/// Reads the ClientHello at the start of `buf`.
pub(crate) fn read(buf: &[u8]) -> Hello {
    // Handshake bytes, gathered from the records.
    let mut handshake = Vec::new();
    let mut rest = buf;
    loop {
        if rest.len() < 5 {
            return Hello::Partial;
        }
        if rest[0] != 0x16 || rest[1] != 0x03 {
            return Hello::NotTls("the first bytes are not a TLS handshake record");
        }
        let len = usize::from(u16::from_be_bytes([rest[3], rest[4]]));
        if len == 0 || len > 16_384 + 256 {
            return Hello::NotTls("a TLS record has an invalid length");
        }
        let Some(body) = rest.get(5..5 + len) else {
            return Hello::Partial;
        };
        handshake.extend_from_slice(body);
        rest = &rest[5 + len..];
        if handshake.len() >= 4 {
            if handshake[0] != 0x01 {
                return Hello::NotTls("the first handshake message is not a ClientHello");
            }
            let need =
                4 + u32::from_be_bytes([0, handshake[1], handshake[2], handshake[3]]) as usize;
            if need > MAX_HELLO {
                return Hello::NotTls("the ClientHello is too large");
            }
            if handshake.len() >= need {
                return parse_hello(&handshake[4..need]);
            }
        }
    }
}

/// A cursor over the ClientHello's bytes.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = (self.0.get(..n)?, self.0.get(n..)?);
        self.0 = tail;
        Some(head)
    }

    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|b| usize::from(b[0]))
    }

    fn u16(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
    }

    fn vec8(&mut self) -> Option<&'a [u8]> {
        let n = self.u8()?;
        self.take(n)
    }

    fn vec16(&mut self) -> Option<&'a [u8]> {
        let n = self.u16()?;
        self.take(n)
    }
}

const MALFORMED: Hello = Hello::NotTls("the ClientHello is malformed");

fn parse_hello(body: &[u8]) -> Hello {
    let mut c = Cursor(body);
    let Some(extensions) = (|| {
        c.take(2 + 32)?; // version, random
        c.vec8()?; // session id
        c.vec16()?; // cipher suites
        c.vec8()?; // compression methods
        if c.0.is_empty() {
            return Some(&[][..]);
        }
        c.vec16()
    })() else {
        return MALFORMED;
    };
    let mut exts = Cursor(extensions);
    let mut name = None;
    while !exts.0.is_empty() {
        let (Some(kind), Some(data)) = (exts.u16(), exts.vec16()) else {
            return MALFORMED;
        };
        match kind {
            0x0000 => {
                if name.is_some() {
                    return Hello::NotTls("the ClientHello has two server_name extensions");
                }
                match server_name(data) {
                    Some(found) => name = Some(found),
                    None => return Hello::NotTls("the ClientHello's server_name is malformed"),
                }
            }
            0xfe0d => return Hello::Encrypted,
            _ => {}
        }
    }
    match name {
        Some(name) => Hello::Name(name),
        None => Hello::NoName,
    }
}

/// The one `host_name` of a server_name extension.
fn server_name(data: &[u8]) -> Option<String> {
    let mut c = Cursor(data);
    let mut list = Cursor(c.vec16()?);
    if !c.0.is_empty() {
        return None;
    }
    let mut found = None;
    while !list.0.is_empty() {
        let kind = list.u8()?;
        let name = list.vec16()?;
        if kind == 0 {
            if found.is_some() {
                return None;
            }
            let text = std::str::from_utf8(name).ok()?;
            found = Some(text.trim_end_matches('.').to_ascii_lowercase());
        }
    }
    found
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal ClientHello with `names` as host_name entries and `extra` extensions.
    pub(crate) fn hello(names: &[&str], extra: &[(u16, &[u8])]) -> Vec<u8> {
        let mut exts = Vec::new();
        if !names.is_empty() {
            let mut list = Vec::new();
            for name in names {
                list.push(0u8);
                list.extend_from_slice(&(name.len() as u16).to_be_bytes());
                list.extend_from_slice(name.as_bytes());
            }
            let mut data = (list.len() as u16).to_be_bytes().to_vec();
            data.extend_from_slice(&list);
            exts.extend_from_slice(&[0, 0]);
            exts.extend_from_slice(&(data.len() as u16).to_be_bytes());
            exts.extend_from_slice(&data);
        }
        for (kind, data) in extra {
            exts.extend_from_slice(&kind.to_be_bytes());
            exts.extend_from_slice(&(data.len() as u16).to_be_bytes());
            exts.extend_from_slice(data);
        }
        let mut body = vec![3, 3];
        body.extend_from_slice(&[7; 32]);
        body.push(0);
        body.extend_from_slice(&[0, 2, 0x13, 0x01]);
        body.extend_from_slice(&[1, 0]);
        body.extend_from_slice(&(exts.len() as u16).to_be_bytes());
        body.extend_from_slice(&exts);
        let mut hs = vec![1];
        hs.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
        hs.extend_from_slice(&body);
        let mut record = vec![0x16, 3, 1];
        record.extend_from_slice(&(hs.len() as u16).to_be_bytes());
        record.extend_from_slice(&hs);
        record
    }

    #[test]
    fn reads_the_name_byte_by_byte() {
        let bytes = hello(&["Example.COM"], &[(10, &[0, 2, 0, 29])]);
        for cut in 0..bytes.len() {
            assert_eq!(read(&bytes[..cut]), Hello::Partial, "cut at {cut}");
        }
        assert_eq!(read(&bytes), Hello::Name("example.com".into()));
    }

    #[test]
    fn a_hello_split_over_two_records() {
        let one = hello(&["split.test"], &[]);
        let hs = &one[5..];
        let (a, b) = hs.split_at(10);
        let mut two = Vec::new();
        for part in [a, b] {
            two.extend_from_slice(&[0x16, 3, 1]);
            two.extend_from_slice(&(part.len() as u16).to_be_bytes());
            two.extend_from_slice(part);
        }
        assert_eq!(read(&two), Hello::Name("split.test".into()));
    }

    #[test]
    fn refusals() {
        assert_eq!(read(&hello(&[], &[])), Hello::NoName);
        assert!(matches!(
            read(&hello(&["a.test", "b.test"], &[])),
            Hello::NotTls(_)
        ));
        assert_eq!(
            read(&hello(&["a.test"], &[(0xfe0d, &[1, 2])])),
            Hello::Encrypted
        );
        assert!(matches!(read(b"GET / HTTP/1.1\r\n\r\n"), Hello::NotTls(_)));
        let mut truncated = hello(&["a.test"], &[]);
        truncated[4] = truncated[4].wrapping_sub(3);
        truncated.truncate(truncated.len() - 3);
        assert!(matches!(
            read(&truncated),
            Hello::NotTls(_) | Hello::Partial
        ));
    }
}
