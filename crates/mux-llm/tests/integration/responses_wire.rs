//! The Responses API provider against a local server replaying recorded OpenAI traffic
//! (`tests/fixtures/responses/README.md` names the source of each file): the whole pipeline
//! from bytes on a socket to a `Response`, the request bodies of the follow-up turns, and the
//! decoder under every chunking.
#![cfg(all(feature = "openai-responses", feature = "testing"))]

use crate::common::{fast_retries, fixture, serve, streamed};
use mux_llm::decode::decode_chunks;
use mux_llm::http::HttpOptions;
use mux_llm::responses::{ResponsesClient, ResponsesDecoder};
use mux_llm::testing::{ReplayServer, Reply};
use mux_llm::{
    Accumulator, ContentBlock, LlmClient, LlmError, Message, OutputSchema, Request, Response, Role,
    Secret, StopReason, StreamEvent, Usage,
};
use mux_tool::ToolSpec;
use serde_json::{Value, json};

const KEY: &str = "sk-proj-responses-test-0123456789";

fn client(server: &ReplayServer, retries: u32) -> ResponsesClient {
    let mut options = HttpOptions::new(server.url(), Some(Secret::new(KEY)));
    options.retry = fast_retries(retries);
    ResponsesClient::with_options(options).unwrap()
}

fn weather() -> ToolSpec {
    ToolSpec::new(
        "weather",
        "Get weather information for a location",
        json!({"type": "object", "properties": {"location": {"type": "string", "description": "the city"}}, "required": ["location"]}),
    )
    .unwrap()
}

fn question() -> Request {
    Request::new("gpt-5", 4000)
        .system("You are a helpful assistant")
        .user("What's the weather in Florence,Italy?")
        .tools([weather()])
}

/// The second turn: the question, the model's reply, and the tool's result.
fn follow_up(first: &Response, result: &str) -> Request {
    let (id, _, _) = first.tool_calls().next().unwrap();
    question().message(first.to_message()).message(Message::new(
        Role::User,
        vec![ContentBlock::tool_result(id, result, false)],
    ))
}

fn thinking(response: &Response) -> Vec<(&str, Value)> {
    response
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Thinking {
                thinking,
                signature,
            } => Some((thinking.as_str(), serde_json::from_str(signature).unwrap())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_tool_call_then_its_answer_over_two_recorded_turns() {
    let server = serve(vec![
        Reply::sse(fixture("responses/tool_call.sse")).chunked(7),
        Reply::sse(fixture("responses/tool_followup.sse")).chunked(3),
    ])
    .await;
    let client = client(&server, 0);

    let first = streamed(&client, question()).await.unwrap();
    assert_eq!(first.stop_reason, StopReason::ToolUse);
    assert_eq!(
        first.id.as_deref(),
        Some("resp_0967f4efea4061d0016a3c122223dc81a08195678f441ec027")
    );
    let calls: Vec<_> = first.tool_calls().collect();
    assert_eq!(
        calls,
        vec![(
            "call_nYgMM3oZuxort2H8Ky4uP5RE",
            "weather",
            &json!({"location": "Florence, Italy"})
        )]
    );
    // The reasoning item (no summary asked for) is kept as an empty thinking block whose
    // signature names the item.
    assert_eq!(
        thinking(&first),
        vec![(
            "",
            json!({"type": "openai.reasoning", "id": "rs_0967f4efea4061d0016a3c122284b881a0ba3b13e24047d7ce"})
        )]
    );
    assert_eq!(
        first.usage,
        Usage {
            input_tokens: 63,
            output_tokens: 77,
            ..Usage::default()
        }
    );

    let second = streamed(&client, follow_up(&first, "40 C")).await.unwrap();
    assert_eq!(second.stop_reason, StopReason::EndTurn);
    assert!(
        second
            .text()
            .starts_with("Florence, Italy is currently about 40°C (104°F). It’s very hot—"),
        "{}",
        second.text()
    );
    assert_eq!(second.usage.reasoning_tokens, 128);

    let requests = server.requests();
    assert_eq!(requests[0].path, "/responses");
    assert_eq!(
        requests[0].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = requests[1].json();
    assert_eq!(body["instructions"], "You are a helpful assistant");
    assert_eq!(body["stream"], true);
    assert_eq!(body["max_output_tokens"], 4000);
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "name": "weather", "description": "Get weather information for a location",
            "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "the city"}}, "required": ["location"]},
            "strict": false}])
    );
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What's the weather in Florence,Italy?"}]},
            {"type": "reasoning", "id": "rs_0967f4efea4061d0016a3c122284b881a0ba3b13e24047d7ce", "summary": []},
            {"type": "function_call", "call_id": "call_nYgMM3oZuxort2H8Ky4uP5RE", "name": "weather", "arguments": "{\"location\":\"Florence, Italy\"}"},
            {"type": "function_call_output", "call_id": "call_nYgMM3oZuxort2H8Ky4uP5RE", "output": "40 C"},
        ])
    );
}

#[tokio::test]
async fn reasoning_summaries_and_encrypted_content_are_carried_to_the_next_turn() {
    let server = serve(vec![
        Reply::sse(fixture("responses/reasoning_tool_call.sse")).chunked(11),
        Reply::sse(fixture("responses/reasoning_followup.sse")).chunked(13),
    ])
    .await;
    let client = client(&server, 0)
        .encrypted_reasoning(true)
        .reasoning_summary("auto");
    let ask = || {
        let mut request = question();
        request.thinking = Some(mux_llm::Thinking {
            budget_tokens: 16_000,
            effort: Some(mux_llm::ReasoningEffort::High),
        });
        request
    };

    let first = streamed(&client, ask()).await.unwrap();
    let reasoning = thinking(&first);
    assert_eq!(reasoning.len(), 1);
    let (summary, signature) = &reasoning[0];
    assert!(
        summary.starts_with("**Getting weather info**\n\nI need to respond to the user's qu"),
        "{summary}"
    );
    assert_eq!(
        signature["id"],
        "rs_017e85da2ae23b69016a3c1251dcec819daf72930a854fd4d1"
    );
    let encrypted = signature["encrypted_content"].as_str().unwrap();
    assert!(encrypted.starts_with("gAAAAABqPBJWAIvEAmUT"), "{encrypted}");
    assert_eq!(first.usage.reasoning_tokens, 64);

    let (id, _, _) = first.tool_calls().next().unwrap();
    let second_request = ask().message(first.to_message()).message(Message::new(
        Role::User,
        vec![ContentBlock::tool_result(id, "40 C", false)],
    ));
    let second = streamed(&client, second_request).await.unwrap();
    assert!(second.text().contains("40°C (104°F)"), "{}", second.text());
    assert_eq!(thinking(&second).len(), 1);

    let body = server.requests()[1].json();
    assert_eq!(body["store"], false);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    let item = &body["input"][1];
    assert_eq!(item["type"], "reasoning");
    assert_eq!(item["encrypted_content"], encrypted);
    assert_eq!(item["summary"][0]["text"], *summary);
}

#[tokio::test]
async fn structured_output_goes_out_as_text_format_and_comes_back_as_json_text() {
    let server = serve(vec![
        Reply::sse(fixture("responses/structured_output.sse")).chunked(2),
    ])
    .await;
    let schema = json!({"type": "object", "additionalProperties": false,
        "properties": {"age": {"type": "integer"}, "city": {"type": "string"}, "name": {"type": "string"}},
        "required": ["name", "age", "city"]});
    let request = Request::new("gpt-4o-mini", 4000)
        .user("Generate information about a person named Alice who is 30 years old and lives in Paris.")
        .output(OutputSchema::new("Person", schema.clone()));
    let reply = streamed(&client(&server, 0), request).await.unwrap();
    let answer: Value = serde_json::from_str(&reply.text()).unwrap();
    assert_eq!(answer, json!({"name": "Alice", "age": 30, "city": "Paris"}));
    assert_eq!(reply.stop_reason, StopReason::EndTurn);
    assert_eq!(
        server.requests()[0].json()["text"],
        json!({"format": {"type": "json_schema", "name": "Person", "schema": schema, "strict": true}})
    );
}

#[tokio::test]
async fn parallel_calls_cached_tokens_and_an_incomplete_answer() {
    let server = serve(vec![
        Reply::sse(fixture("responses/parallel_tools.sse")).chunked(9),
        Reply::sse(fixture("responses/cached_usage_utf8.sse")).chunked(1),
        Reply::sse(fixture("responses/incomplete.sse")),
    ])
    .await;
    let client = client(&server, 0);
    let reply = streamed(&client, Request::new("gpt-4o-mini", 4000).user("2 and 3"))
        .await
        .unwrap();
    let calls: Vec<_> = reply
        .tool_calls()
        .map(|(id, name, input)| (id, name, input.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "call_ZckkKeJQwcJPC27VXT61xFLf",
                "add",
                json!({"a": 2, "b": 3})
            ),
            (
                "call_M9h2AZgoLEv6q5gkex1QMtm2",
                "multiply",
                json!({"a": 2, "b": 3})
            ),
        ]
    );

    let reply = streamed(&client, Request::new("gpt-5-mini", 400).user("olá"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Olá, café ☕ e pão 🇵🇹!");
    assert_eq!(
        reply.usage,
        Usage {
            input_tokens: 86,
            output_tokens: 300,
            cache_read_tokens: 1920,
            cache_write_tokens: 0,
            reasoning_tokens: 256,
        }
    );

    let reply = streamed(&client, Request::new("gpt-4o-mini", 16).user("json"))
        .await
        .unwrap();
    assert_eq!(reply.stop_reason, StopReason::MaxTokens);
    assert_eq!(reply.text(), "{\"val");
}

/// The first `n` events of an SSE body.
fn cut_after_events(body: &[u8], n: usize) -> Vec<u8> {
    let mut end = 0;
    for _ in 0..n {
        let rest = &body[end..];
        let at = rest.windows(2).position(|w| w == b"\n\n").unwrap();
        end += at + 2;
    }
    body[..end].to_vec()
}

#[tokio::test]
async fn failures_inside_the_stream_are_typed() {
    let server = serve(vec![
        Reply::sse(fixture("responses/failed.sse")),
        Reply::sse(fixture("responses/error_event.sse")),
        Reply::sse(cut_after_events(&fixture("responses/tool_call.sse"), 8)),
    ])
    .await;
    let client = client(&server, 2);
    let failed = streamed(&client, question()).await.unwrap_err();
    assert_eq!(failed.kind(), "server");
    assert!(failed.message().contains("boom"), "{failed}");

    let error = streamed(&client, question()).await.unwrap_err();
    assert_eq!(error.kind(), "invalid_request");
    assert!(
        error
            .message()
            .contains("Something went wrong (ERR_SOMETHING)"),
        "{error}"
    );

    let cut = streamed(&client, question()).await.unwrap_err();
    assert_eq!(cut.kind(), "transport");
    assert!(cut.message().contains("response.completed"), "{cut}");
    // None of these was retried: each came after the stream's first event.
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn http_errors_are_retried_then_typed_and_never_show_the_key() {
    let server = serve(vec![
        Reply::json(
            429,
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
        )
        .header("retry-after-ms", "1"),
        Reply::json(500, r#"{"error":{"message":"The server had an error","type":"server_error"}}"#),
        Reply::sse(fixture("responses/text.sse")),
        Reply::json(
            401,
            format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#),
        ),
    ]).await;
    let client = client(&server, 3);
    let reply = streamed(
        &client,
        Request::new("gpt-4o-mini", 4000).user("Say hi in Portuguese"),
    )
    .await
    .unwrap();
    assert!(reply.text().contains("Oi"), "{}", reply.text());
    assert_eq!(server.requests().len(), 3);

    let err = streamed(&client, Request::new("gpt-4o-mini", 10).user("x"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), "authentication");
    assert!(!err.to_string().contains(KEY), "{err}");
    assert_eq!(server.requests().len(), 4);
}

#[tokio::test]
async fn a_non_streamed_reply_is_read_whole() {
    let server = serve(vec![Reply::json(200, fixture("responses/tool_call.json"))]).await;
    let reply = client(&server, 0).complete(question()).await.unwrap();
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
    let (_, name, input) = reply.tool_calls().next().unwrap();
    assert_eq!(
        (name, input),
        ("weather", &json!({"location": "Florence, Italy"}))
    );
    assert_eq!(thinking(&reply).len(), 1);
    assert!(server.requests()[0].json().get("stream").is_none());
}

// ---- The decoder under every chunking ----

const VECTORS: &[&str] = &[
    "responses/text.sse",
    "responses/tool_call.sse",
    "responses/tool_followup.sse",
    "responses/parallel_tools.sse",
    "responses/structured_output.sse",
    "responses/reasoning_tool_call.sse",
    "responses/reasoning_followup.sse",
    "responses/cached_usage_utf8.sse",
    "responses/incomplete.sse",
    "responses/failed.sse",
    "responses/error_event.sse",
];

fn decode(chunks: Vec<&[u8]>) -> Result<Vec<StreamEvent>, LlmError> {
    decode_chunks(ResponsesDecoder::new("openai-responses"), chunks)
}

#[test]
fn every_vector_decodes_to_a_whole_message_or_a_typed_error() {
    for path in VECTORS {
        let body = fixture(path);
        match decode(vec![&body]) {
            Ok(events) => {
                assert!(
                    matches!(events.first(), Some(StreamEvent::MessageStart { .. })),
                    "{path}"
                );
                assert_eq!(events.last(), Some(&StreamEvent::MessageStop), "{path}");
                let mut acc = Accumulator::new("t");
                for event in &events {
                    acc.push(event).unwrap();
                }
                assert!(!acc.finish().unwrap().content.is_empty(), "{path}");
            }
            Err(err) => assert!(
                path.ends_with("failed.sse") || path.ends_with("error_event.sse"),
                "{path}: {err}"
            ),
        }
    }
}

#[test]
fn every_split_point_gives_the_same_events() {
    for path in VECTORS {
        let body = fixture(path);
        let reference = decode(vec![&body]);
        // Every byte of the small vectors (the UTF-8 one among them); in the others, every
        // byte within 3 of a non-ASCII byte, of an event boundary (up to 16 KiB) and every
        // 61st byte (one-byte chunks, below, cut everywhere at once).
        let small = body.len() <= 16 * 1024;
        let points: Vec<usize> = if body.len() <= 3 * 1024 {
            (0..=body.len()).collect()
        } else {
            (0..=body.len())
                .filter(|&at| {
                    let lo = at.saturating_sub(3);
                    let hi = (at + 3).min(body.len());
                    at % 61 == 0
                        || body[lo..hi].iter().any(|b| !b.is_ascii())
                        || (small && body[lo..hi].windows(2).any(|w| w == b"\n\n"))
                })
                .collect()
        };
        for at in points {
            assert_eq!(
                decode(vec![&body[..at], &body[at..]]),
                reference,
                "{path} split at byte {at}"
            );
        }
    }
}

#[test]
fn one_byte_chunks_and_crlf_give_the_same_events() {
    for path in VECTORS {
        let body = fixture(path);
        let reference = decode(vec![&body]);
        assert_eq!(decode(body.chunks(1).collect()), reference, "{path}");
        let crlf = String::from_utf8(body.clone())
            .unwrap()
            .replace('\n', "\r\n");
        assert_eq!(decode(vec![crlf.as_bytes()]), reference, "{path} CRLF");
    }
}

#[test]
fn text_that_only_arrives_in_done_events_is_not_lost() {
    // A server that sends no deltas (some Open Responses implementations): the `.done`
    // events and `response.output_item.done` carry everything.
    let events = [
        json!({"type": "response.created", "response": {"id": "r1", "model": "m"}}),
        json!({"type": "response.output_item.added", "output_index": 2, "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": {"id": "rs_1", "type": "reasoning", "summary": [],
            "content": [{"type": "reasoning_text", "text": "think"}]}}),
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"id": "msg_1", "type": "message", "content": []}}),
        json!({"type": "response.output_text.done", "output_index": 0, "content_index": 0, "item_id": "msg_1", "text": "whole"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": {"id": "msg_1", "type": "message", "content": [{"type": "output_text", "text": "whole"}]}}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": ""}}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": "{\"x\":1}"}}),
        json!({"type": "response.completed", "response": {"usage": {"input_tokens": 3, "output_tokens": 2}}}),
    ];
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    let mut acc = Accumulator::new("t");
    for event in decode(vec![body.as_bytes()]).unwrap() {
        acc.push(&event).unwrap();
    }
    let reply = acc.finish().unwrap();
    assert_eq!(reply.text(), "whole");
    assert!(matches!(
        &reply.content[0],
        ContentBlock::Thinking { thinking, signature } if thinking == "think" && signature.contains("rs_1")
    ));
    assert_eq!(
        reply.tool_calls().next(),
        Some(("c1", "f", &json!({"x": 1})))
    );
    assert_eq!(reply.stop_reason, StopReason::ToolUse);
}
