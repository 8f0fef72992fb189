//! Ids the server makes: 128 random bits in hex, so task ids cannot be guessed.

/// A fresh random id (32 hex digits). Falls back to a time-and-counter id only if the OS
/// has no randomness to give.
pub(crate) fn new_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        return mux_orchestrator::session::new_session_id();
    }
    let mut out = String::with_capacity(32);
    for byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 15)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";
