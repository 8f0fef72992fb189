//! Decoding and accumulating a large SSE stream from memory (≥ 5 MB, built from recorded
//! Anthropic and OpenAI events), against the bare cost of `serde_json` parsing the same data
//! lines into `Value`s in the same run.

use std::time::Duration;

use mux_llm::anthropic::AnthropicDecoder;
use mux_llm::decode::{EventMapper, decode_chunks};
use mux_llm::openai::OpenAiDecoder;
use mux_llm::{Accumulator, StreamEvent};

use crate::harness::{Row, per_iter};

const TARGET_BYTES: usize = 5 * 1024 * 1024 + 1;
const CHUNK: usize = 16 * 1024;
const SAMPLES: usize = 11;
const ITERS: u32 = 3;

/// Recorded Anthropic events (anthropic-sdk-python fixtures), text deltas repeated.
fn anthropic_stream() -> Vec<u8> {
    let mut body = String::from(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_019Q1hrJbZG26Fb9BQhrkHEr\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4-20250514\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":377,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":1,\"service_tier\":\"standard\"}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    ));
    let delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\" weather in Florence, Italy is 40°C (104°F).\"}}\n\n";
    while body.len() < TARGET_BYTES {
        body.push_str(delta);
        body.push_str("event: ping\ndata: {\"type\": \"ping\"}\n\n");
    }
    body.push_str(concat!(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":65}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    ));
    body.into_bytes()
}

/// Recorded OpenAI chunks (openai-python fixtures): content deltas repeated, then the finish
/// and usage chunks.
fn openai_stream() -> Vec<u8> {
    let mut body = String::new();
    let delta = "data: {\"id\":\"chatcmpl-9tXjg9DdaOfymTPDrSLfxslQEH0C2\",\"object\":\"chat.completion.chunk\",\"created\":1723024748,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_845eaabc1f\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" weather\"},\"logprobs\":null,\"finish_reason\":null}]}\n\n";
    while body.len() < TARGET_BYTES {
        body.push_str(delta);
    }
    body.push_str(concat!(
        "data: {\"id\":\"chatcmpl-9tXjg9DdaOfymTPDrSLfxslQEH0C2\",\"object\":\"chat.completion.chunk\",\"created\":1723024748,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_845eaabc1f\",\"choices\":[{\"index\":0,\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\"}]}\n\n",
        "data: {\"id\":\"chatcmpl-9tXjg9DdaOfymTPDrSLfxslQEH0C2\",\"object\":\"chat.completion.chunk\",\"created\":1723024748,\"model\":\"gpt-4o-2024-08-06\",\"system_fingerprint\":\"fp_845eaabc1f\",\"choices\":[],\"usage\":{\"prompt_tokens\":14,\"completion_tokens\":47,\"total_tokens\":61}}\n\n",
        "data: [DONE]\n\n",
    ));
    body.into_bytes()
}

fn data_lines(body: &[u8]) -> Result<Vec<&str>, String> {
    let text = std::str::from_utf8(body).map_err(|err| err.to_string())?;
    Ok(text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .collect())
}

fn decode_and_accumulate<M: EventMapper>(mapper: M, body: &[u8]) -> Result<usize, String> {
    let events: Vec<StreamEvent> =
        decode_chunks(mapper, body.chunks(CHUNK)).map_err(|err| err.to_string())?;
    let mut acc = Accumulator::new("bench");
    for event in &events {
        acc.push(event).map_err(|err| err.to_string())?;
    }
    let response = acc.finish().map_err(|err| err.to_string())?;
    Ok(response.text().len())
}

fn measure<M: EventMapper>(name: &str, body: &[u8], make: impl Fn() -> M) -> Result<Row, String> {
    let lines = data_lines(body)?;
    decode_and_accumulate(make(), body)?;
    let mut failure = None;
    let subject = per_iter(SAMPLES, ITERS, |iters| {
        for _ in 0..iters {
            if let Err(err) = decode_and_accumulate(make(), body) {
                failure = Some(err);
            }
        }
    });
    if let Some(err) = failure {
        return Err(err);
    }
    let baseline = per_iter(SAMPLES, ITERS, |iters| {
        for _ in 0..iters {
            for line in &lines {
                let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
                std::hint::black_box(value);
            }
        }
    });
    let mb = body.len() as f64 / (1024.0 * 1024.0);
    let rate = |d: Duration| mb / d.as_secs_f64();
    println!(
        "llm decode {name}: {mb:.1} MB of SSE, {:.0} MB/s decoded + accumulated, {:.0} MB/s bare serde_json",
        rate(subject),
        rate(baseline)
    );
    Ok(Row {
        name: format!(
            "llm decode+accumulate {name} {mb:.1} MB ({:.0} MB/s)",
            rate(subject)
        ),
        value: subject.as_secs_f64() * 1000.0,
        unit: "ms",
        baseline: format!("serde_json Value parse ({:.0} MB/s)", rate(baseline)),
        baseline_value: baseline.as_secs_f64() * 1000.0,
    })
}

/// Runs both providers' decoders.
pub(crate) fn run() -> Result<Vec<Row>, String> {
    Ok(vec![
        measure("anthropic", &anthropic_stream(), AnthropicDecoder::new)?,
        measure("openai", &openai_stream(), || OpenAiDecoder::new("openai"))?,
    ])
}
