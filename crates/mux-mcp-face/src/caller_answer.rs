//! Putting an approval question to an MCP caller, shared by [`crate::AgentTool`] and
//! [`crate::ToolServer`]: the call's arguments quoted within a bound, the answer read as the
//! permission layer's.

use mux_mcp::CallerAnswer;
use mux_permission::Answer;

/// The most of a call's arguments an approval question quotes.
pub(crate) const QUOTED_ARGS: usize = 2_000;

/// `text`, cut at a character boundary to at most `max` bytes and marked with `…` if cut.
pub(crate) fn quote(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The caller's answer as a permission answer: anything but an allow denies.
pub(crate) fn answer_of(answer: CallerAnswer) -> Answer {
    match answer {
        CallerAnswer::Allow => Answer::AllowOnce,
        CallerAnswer::Deny { reason } => Answer::deny(reason),
        _ => Answer::deny("the caller's answer was not understood"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_is_cut_on_a_character_boundary() {
        assert_eq!(quote("abc", 3), "abc");
        assert_eq!(quote("ééé", 3), "é…");
        assert_eq!(quote("abcd", 2), "ab…");
    }
}
