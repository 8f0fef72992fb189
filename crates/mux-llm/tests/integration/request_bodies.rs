//! Wire request bodies, snapshotted per provider: a multi-turn conversation with a system
//! prompt, tools (given out of order), thinking, tool results and cache hints.
#![cfg(all(feature = "anthropic", feature = "openai", feature = "gemini"))]

use mux_llm::openai::{Preset, WireOptions};
use mux_llm::{
    CacheHint, CachePolicy, ContentBlock, ImageSource, Message, Request, Role, ToolChoice,
};
use mux_tool::ToolSpec;
use serde_json::json;

fn conversation() -> Request {
    let weather = ToolSpec::new(
        "weather",
        "Get weather information for a location",
        json!({"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}),
    )
    .unwrap();
    let clock = ToolSpec::new(
        "clock",
        "The current time",
        json!({"type": "object", "properties": {}}),
    )
    .unwrap();
    Request::new("model-x", 2048)
        .system("You are a helpful assistant")
        .tools([weather, clock])
        .tool_choice(ToolChoice::Auto)
        .thinking(4000)
        .temperature(0.5)
        .stop_sequence("END")
        .metadata("user_id", "user-42")
        .cache(CachePolicy::all(CacheHint::Ephemeral))
        .message(Message::new(
            Role::User,
            vec![
                ContentBlock::text("What's the weather in Florence, and what time is it?"),
                ContentBlock::Image {
                    source: ImageSource::Base64 {
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    },
                },
            ],
        ))
        .message(Message::new(
            Role::Assistant,
            vec![
                ContentBlock::Thinking {
                    thinking: "I need both tools.".into(),
                    signature: "EsQDsig==".into(),
                },
                ContentBlock::RedactedThinking {
                    data: "EmwKAhgBEgy3va3pzix==".into(),
                },
                ContentBlock::text("Checking."),
                ContentBlock::tool_use(
                    "toolu_1",
                    "weather",
                    json!({"location": "Florence, Italy"}),
                ),
                ContentBlock::tool_use("toolu_2", "clock", json!({})),
            ],
        ))
        .message(Message::new(
            Role::User,
            vec![
                ContentBlock::tool_result("toolu_1", "40 C", false),
                ContentBlock::tool_result("toolu_2", "clock unavailable", true),
                ContentBlock::text("Thanks!"),
            ],
        ))
}

#[test]
fn anthropic_request_body() {
    insta::assert_json_snapshot!(mux_llm::anthropic::request_body(&conversation(), true));
}

#[test]
fn openai_request_body() {
    insta::assert_json_snapshot!(mux_llm::openai::request_body(
        &conversation(),
        WireOptions::default(),
        true
    ));
}

#[test]
fn ollama_request_body() {
    insta::assert_json_snapshot!(mux_llm::openai::request_body(
        &conversation(),
        Preset::Ollama.wire_options(),
        true
    ));
}

#[test]
fn gemini_request_body() {
    insta::assert_json_snapshot!(mux_llm::gemini::request_body(&conversation()));
}

#[test]
fn tool_order_is_stable_whatever_the_insertion_order() {
    let request = conversation();
    let mut reversed = request.clone();
    reversed.tools.reverse();
    assert_eq!(
        mux_llm::anthropic::request_body(&request, true)["tools"],
        mux_llm::anthropic::request_body(&reversed, true)["tools"]
    );
    assert_eq!(
        mux_llm::openai::request_body(&request, WireOptions::default(), true)["tools"],
        mux_llm::openai::request_body(&reversed, WireOptions::default(), true)["tools"]
    );
}

/// Structured output maps to each provider's own mechanism.
#[test]
fn structured_output_per_provider() {
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
        "required": ["city", "temp"],
        "additionalProperties": false,
    });
    let request = Request::new("model-x", 256)
        .user("Weather in Florence?")
        .output(mux_llm::OutputSchema::new("weather report", schema.clone()));

    let openai = mux_llm::openai::request_body(&request, WireOptions::default(), false);
    assert_eq!(
        openai["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "weather_report", "schema": schema, "strict": true}})
    );

    let gemini = mux_llm::gemini::request_body(&request);
    assert_eq!(
        gemini["generationConfig"]["responseMimeType"],
        "application/json"
    );
    assert_eq!(gemini["generationConfig"]["responseJsonSchema"], schema);

    let anthropic = mux_llm::anthropic::request_body(&request, false);
    assert_eq!(anthropic["tools"][0]["name"], "final_result");
    assert_eq!(anthropic["tools"][0]["input_schema"], schema);
    assert_eq!(
        anthropic["tool_choice"],
        json!({"type": "tool", "name": "final_result"})
    );

    // With tools of its own, the model may call them or answer: any tool, not one.
    let with_tools = conversation().output(mux_llm::OutputSchema::new("r", schema.clone()));
    let anthropic = mux_llm::anthropic::request_body(&with_tools, false);
    assert_eq!(anthropic["tools"].as_array().map(Vec::len), Some(3));
    // Extended thinking allows no forced tool choice.
    assert_eq!(anthropic["tool_choice"], json!({"type": "auto"}));

    // A schema strict mode cannot take (an optional property) is sent without `strict`.
    let loose = json!({"type": "object", "properties": {"a": {"type": "string"}}});
    let request = Request::new("m", 10).output(mux_llm::OutputSchema::new("x", loose));
    let openai = mux_llm::openai::request_body(&request, WireOptions::default(), false);
    assert_eq!(openai["response_format"]["json_schema"]["strict"], false);
}
