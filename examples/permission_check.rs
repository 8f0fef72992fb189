//! Checks one tool call against permission settings and prints the verdict as JSON.
//!
//! Run: `cargo run --example permission_check -- [--settings FILE]... [--mode MODE] [--root DIR]
//! --tool NAME --input JSON`
//!
//! Prints `{"verdict":"allow|ask|deny","reason":…,"rule":…,"scope":…}` and exits 0; a
//! malformed settings file or rule prints `{"error":…}` and exits 2.

use std::process::ExitCode;

fn main() -> ExitCode {
    let report = mux_examples::permission_check::run(std::env::args().skip(1));
    println!("{}", report.json);
    ExitCode::from(u8::try_from(report.exit_code).unwrap_or(2))
}
