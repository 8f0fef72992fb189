//! Sends one request to a model and prints the assembled response as one JSON object.
//!
//! Run: `cargo run --example llm_call -- --provider anthropic|openai|gemini [--base-url URL]
//! [--model M] [--stream] [--max-retries N] [--tools FILE] "prompt"`
//!
//! The key comes from `ANTHROPIC_API_KEY`, `OPENAI_API_KEY` or `GEMINI_API_KEY` (a dummy key
//! is fine against a local server). On failure it prints
//! `{"error":{"kind","status","message","retry_after_ms"}}` and exits 1.

use mux_examples::llm_call::run;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (value, code) = run(&args, |name| std::env::var(name).ok()).await;
    println!("{value}");
    std::process::exit(code);
}
