//! `#[mux::tool]`: an async function becomes a typed tool whose doc comments are its
//! description and its arguments' descriptions, whose annotations come from the attribute, and
//! which an agent calls like any other; with `mux` as the only dependency it needs.
#![cfg(all(feature = "orchestrator", feature = "testing"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mux::llm::testing::ScriptedClient;
use mux::orchestrator::Agent;
use mux::tool::{ApprovalPolicy, ToolContext, ToolOutput, TypedTool};
use serde_json::json;

/// Adds two whole numbers.
///
/// Use it for any sum.
#[mux::tool(read_only)]
async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> String {
    (a + b).to_string()
}

/// Looks a city up.
#[mux::tool(name = "city-lookup", destructive, open_world)]
pub async fn lookup(
    /// The city's name.
    city: String,
    /// How many results, at most.
    limit: Option<u32>,
    cx: ToolContext,
) -> Result<ToolOutput, String> {
    if cx.cancellation().is_cancelled() {
        return Err("cancelled".into());
    }
    match city.as_str() {
        "Lima" => Ok(ToolOutput::json(json!({"country": "Peru", "limit": limit}))),
        other => Err(format!("no city named {other}")),
    }
}

#[test]
fn the_spec_comes_from_the_function() {
    assert_eq!(<Add as TypedTool>::NAME, "add");
    assert_eq!(
        Add.description(),
        "Adds two whole numbers.\n\nUse it for any sum."
    );
    let annotations = Add.annotations();
    assert!(annotations.read_only && annotations.idempotent && !annotations.destructive);

    let spec = mux::tool::Typed::new(Add).unwrap();
    let schema = mux::tool::Tool::spec(&spec).input_schema.clone();
    assert_eq!(
        schema["properties"]["a"]["description"],
        "The first number."
    );
    assert_eq!(schema["properties"]["b"]["type"], "integer");
    assert_eq!(schema["required"], json!(["a", "b"]));

    assert_eq!(<Lookup as TypedTool>::NAME, "city-lookup");
    let annotations = Lookup.annotations();
    assert!(annotations.destructive && annotations.open_world && !annotations.read_only);
    let spec = mux::tool::Typed::new(Lookup).unwrap();
    let schema = mux::tool::Tool::spec(&spec).input_schema.clone();
    // The context is not an argument; an `Option` is not required.
    assert_eq!(schema["required"], json!(["city"]));
    assert!(schema["properties"].get("cx").is_none(), "{schema}");
    assert_eq!(
        schema["properties"]["limit"]["description"],
        "How many results, at most."
    );
}

#[tokio::test]
async fn an_agent_calls_it_and_reads_its_answers_and_its_errors() {
    let model = ScriptedClient::new()
        .reply_tool_call("c1", "add", json!({"a": 2, "b": 40}))
        .reply_tool_call("c2", "city-lookup", json!({"city": "Atlantis"}))
        .reply_tool_call("c3", "city-lookup", json!({"city": "Lima", "limit": 3}))
        .reply_tool_call("c4", "add", json!({"a": 1, "b": 2, "c": 3}))
        .reply_text("done");
    let agent = Agent::builder(model, "scripted")
        .tool(Add)
        .tool(Lookup)
        .approval(ApprovalPolicy::Never)
        .build()
        .unwrap();
    let summary = agent.run("go").await.unwrap();
    let outputs: Vec<(String, bool)> = summary
        .tool_calls
        .iter()
        .map(|c| (c.output.to_text(), c.output.is_error))
        .collect();
    assert_eq!(outputs[0], ("42".to_owned(), false));
    assert!(
        outputs[1].1 && outputs[1].0.contains("no city named Atlantis"),
        "{outputs:?}"
    );
    assert!(
        !outputs[2].1 && outputs[2].0.contains("Peru"),
        "{outputs:?}"
    );
    // An argument the function does not take is refused, not ignored.
    assert!(
        outputs[3].1 && outputs[3].0.contains("'c' was unexpected"),
        "{outputs:?}"
    );
    assert_eq!(summary.text, "done");
}
