//! The built-in evaluators.

pub mod bounds;
pub mod events;
pub mod judge;
pub mod output;
pub mod trajectory;

/// Cuts `text` to `max` characters for a reason, marking the cut.
pub(crate) fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
