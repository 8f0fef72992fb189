//! Tokens that mark a session write, so a commit whose answer was lost can be looked up.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// A token no other write is likely to carry: this process's random prefix and a counter.
pub(crate) fn token() -> String {
    static PREFIX: LazyLock<u64> = LazyLock::new(|| {
        use std::hash::{BuildHasher, Hasher};
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u32(std::process::id());
        if let Ok(now) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            hasher.write_u128(now.as_nanos());
        }
        hasher.finish()
    });
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{:016x}-{:x}",
        *PREFIX,
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_differ() {
        assert_ne!(super::token(), super::token());
    }
}
