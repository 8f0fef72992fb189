//! Every recorded stream, re-chunked at every byte boundary (and at random boundaries), decodes
//! to the same events as the whole body.
#![cfg(all(feature = "anthropic", feature = "openai", feature = "gemini"))]

use crate::common::fixture;
use mux_llm::anthropic::AnthropicDecoder;
use mux_llm::decode::{EventMapper, decode_chunks};
use mux_llm::gemini::GeminiDecoder;
use mux_llm::openai::OpenAiDecoder;
use mux_llm::{Accumulator, StreamEvent};
use proptest::prelude::*;

const ANTHROPIC: &[&str] = &[
    "anthropic/basic.sse",
    "anthropic/tool_use.sse",
    "anthropic/refusal.sse",
    "anthropic/thinking_tool_use.sse",
    "anthropic/thinking_followup_utf8.sse",
];
const OPENAI: &[&str] = &[
    "openai/parallel_tools.sse",
    "openai/max_tokens.sse",
    "openai/refusal.sse",
    "openai/vllm_tool_call.sse",
    "openai/ollama_tool_call.sse",
];
const GEMINI: &[&str] = &[
    "gemini/simple.sse",
    "gemini/tool_call.sse",
    "gemini/tool_followup.sse",
];

fn mapper(path: &str) -> Box<dyn Fn() -> Box<dyn MapperBox>> {
    if path.starts_with("anthropic/") {
        Box::new(|| Box::new(AnthropicDecoder::new()) as Box<dyn MapperBox>)
    } else if path.starts_with("gemini/") {
        Box::new(|| Box::new(GeminiDecoder::new()) as Box<dyn MapperBox>)
    } else {
        Box::new(|| Box::new(OpenAiDecoder::new("openai")) as Box<dyn MapperBox>)
    }
}

/// Lets the tests pick a decoder at run time.
trait MapperBox {
    fn run(self: Box<Self>, chunks: Vec<&[u8]>) -> Vec<StreamEvent>;
}

impl<M: EventMapper> MapperBox for M {
    fn run(self: Box<Self>, chunks: Vec<&[u8]>) -> Vec<StreamEvent> {
        decode_chunks(*self, chunks).unwrap()
    }
}

fn whole(path: &str) -> Vec<StreamEvent> {
    let body = fixture(path);
    mapper(path)().run(vec![&body])
}

#[test]
fn every_fixture_decodes_and_accumulates() {
    for path in ANTHROPIC.iter().chain(OPENAI).chain(GEMINI) {
        let events = whole(path);
        assert!(
            matches!(events.last(), Some(StreamEvent::MessageStop)),
            "{path} did not end with MessageStop"
        );
        let mut acc = Accumulator::new("test");
        for event in &events {
            acc.push(event).unwrap();
        }
        let response = acc.finish().unwrap();
        assert!(!response.content.is_empty(), "{path} produced no content");
    }
}

#[test]
fn every_split_point_of_every_fixture_gives_the_same_events() {
    for path in ANTHROPIC.iter().chain(OPENAI).chain(GEMINI) {
        let body = fixture(path);
        let reference = whole(path);
        let make = mapper(path);
        for at in 0..=body.len() {
            let events = make().run(vec![&body[..at], &body[at..]]);
            assert_eq!(events, reference, "{path} split at byte {at}");
        }
    }
}

#[test]
fn one_byte_chunks_give_the_same_events() {
    for path in ANTHROPIC.iter().chain(OPENAI).chain(GEMINI) {
        let body = fixture(path);
        let chunks: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(
            mapper(path)().run(chunks),
            whole(path),
            "{path} in one-byte chunks"
        );
    }
}

#[test]
fn crlf_and_cr_line_endings_give_the_same_events() {
    for path in ANTHROPIC.iter().chain(OPENAI).chain(GEMINI) {
        let text = String::from_utf8(fixture(path)).unwrap();
        for ending in ["\r\n", "\r"] {
            let body = text.replace("\r\n", "\n").replace('\n', ending);
            assert_eq!(
                mapper(path)().run(vec![body.as_bytes()]),
                whole(path),
                "{path} with {ending:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn random_chunkings_give_the_same_events(which in 0usize..13, cuts in proptest::collection::vec(0.0f64..1.0, 0..40)) {
        let path = ANTHROPIC.iter().chain(OPENAI).chain(GEMINI).nth(which).unwrap();
        let body = fixture(path);
        let mut offsets: Vec<usize> = cuts.iter().map(|c| (c * body.len() as f64) as usize).collect();
        offsets.sort_unstable();
        let mut chunks = Vec::new();
        let mut start = 0;
        for offset in offsets {
            chunks.push(&body[start..offset]);
            start = offset;
        }
        chunks.push(&body[start..]);
        prop_assert_eq!(mapper(path)().run(chunks), whole(path));
    }
}
