//! Cutting strings to a size on UTF-8 boundaries: the text primitives under
//! [`crate::truncate`] and the presentations' diffs.

use std::borrow::Cow;

/// The largest index `<= max` that is a char boundary of `s`.
pub fn floor_char_boundary(s: &str, max: usize) -> usize {
    if max >= s.len() {
        return s.len();
    }
    (0..=max)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0)
}

/// `s` cut to at most `max` bytes on a char boundary, with `…` appended when cut.
pub fn truncate_str(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("{}…", &s[..floor_char_boundary(s, max)]))
    }
}
