//! Programs in other commands' languages, read with each language's grammar: sed, awk and jq.
//! Only a small subset that provably only reads and prints is vouched for.

mod awk;
mod jq;
mod sed;

pub(crate) use awk::awk;
pub(crate) use jq::jq;
pub(crate) use sed::sed;

/// What a program does beyond reading its input and printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Program {
    /// Why the program is at most ask.
    pub(crate) hazards: Vec<String>,
    /// Shell commands it runs whose text is known (`sed '1e CMD'`).
    pub(crate) runs: Vec<String>,
    /// It runs shell commands whose text is not known (`s///e`, a bare `e`, awk `system`).
    pub(crate) unreadable: bool,
}
