//! Random ids and tokens.

/// 128 random bits as 32 hex digits, from the operating system's generator (falling back to
/// std's randomly keyed SipHash should that fail): an id nobody can guess (an interrupt, a
/// task, a paused call).
pub fn unguessable() -> String {
    let mut bytes = [0u8; 16];
    if let Err(err) = getrandom::fill(&mut bytes) {
        tracing::warn!(%err, "the OS random generator failed; using std's random hash keys");
        use std::hash::{BuildHasher as _, Hasher as _};
        for half in bytes.chunks_mut(8) {
            let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
            hasher.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos())
                    .unwrap_or_default(),
            );
            half.copy_from_slice(&hasher.finish().to_le_bytes());
        }
    }
    hex(&bytes)
}

/// A fresh random bearer token: 128 bits from the operating system's generator, as 32 hex
/// digits. For a server that prints a URL with its token, as the web_agent example does.
/// Fails only when the operating system's generator does (no weaker fallback for a secret).
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(hex(&bytes))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_128_bit_hex_and_differ() {
        let (a, b) = (
            random_token().unwrap_or_default(),
            random_token().unwrap_or_default(),
        );
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
