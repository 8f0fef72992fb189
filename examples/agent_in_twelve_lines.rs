//! An agent with one tool of its own, offline on a scripted model: it asks for `add`, the
//! tool runs, and the model answers from the tool's result. Run: `cargo run --example agent_in_twelve_lines`.

use mux::prelude::*;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

struct Add;
impl TypedTool for Add {
    type Args = AddArgs;
    const NAME: &'static str = "add";
    fn description(&self) -> String {
        "Adds two integers".into()
    }
    async fn call(&self, args: AddArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text((args.a + args.b).to_string()))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedClient::new()
        .reply_tool_call("c1", "add", json!({"a": 2, "b": 3}))
        .respond_with(|request| {
            let (_, sum, _) = request.last_tool_results().pop().unwrap_or_default();
            Ok(Response::from_text(format!("2 + 3 = {sum}")))
        });
    let agent = Agent::builder(model, "any")
        .tool(Add)
        .approval(ApprovalPolicy::Never)
        .build()?;
    println!("{}", agent.prompt("What is 2 + 3?").await?);
    Ok(())
}
