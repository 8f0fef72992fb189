//! The `ask_user` tool: the model asks the person a question and the run waits for the answer.

use std::sync::{Arc, OnceLock};

use mux_tool::{Registry, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::event::LoopEvent;
use crate::journal::Journal;
use crate::run_state::{RunShared, Waiting};

/// The tool's name.
pub const ASK_USER: &str = "ask_user";

/// What `ask_user` answers when no face can.
pub(crate) const USER_AWAY: &str = "The user is not available to answer.";

/// Arguments of `ask_user`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AskUserArgs {
    /// The question to ask the user, in full.
    pub question: String,
}

/// Asks the user a question; answered through [`LoopInput::UserResponse`](crate::LoopInput).
#[derive(Debug, Default)]
pub struct AskUser;

/// The `ask_user` tool in a registry made once per process: its spec, schema and argument
/// validator are the same for every orchestrator, and a server builds one orchestrator per
/// thread, which takes the entry from here (each built its own, about 5 KB, for as long as the
/// thread's run lived).
pub(crate) fn registry() -> &'static Registry {
    static TOOLS: OnceLock<Registry> = OnceLock::new();
    TOOLS.get_or_init(|| {
        let tools = Registry::new();
        if let Ok(tool) = mux_tool::Typed::new(AskUser) {
            let _ = tools.register(tool);
        }
        tools
    })
}

/// The run an `ask_user` call belongs to, found in the call's resources, with its journal.
pub(crate) struct AskUserLink(pub(crate) Arc<RunShared>, pub(crate) Journal);

impl TypedTool for AskUser {
    type Args = AskUserArgs;
    const NAME: &'static str = ASK_USER;

    fn description(&self) -> String {
        "Ask the user a question and wait for the answer. Use it when you need information or a \
         decision only the user can give."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }

    async fn call(&self, args: AskUserArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let Some(link) = cx.resources().get::<AskUserLink>() else {
            return Err(ToolError::failed(
                "ask_user only works inside an orchestrator run",
            ));
        };
        let run = &link.0;
        if !run.attended {
            return Ok(ToolOutput::text(USER_AWAY));
        }
        // The call that asks is in the store before the question is out.
        link.1.settle().await;
        let answer = run.expect_response(cx.call_id());
        run.emit(LoopEvent::AwaitingInput {
            call_id: cx.call_id().to_owned(),
            question: args.question,
        })
        .await;
        run.begin_wait(Waiting::Input).await;
        let outcome = tokio::select! {
            answer = answer => answer.map_err(|_| ToolError::failed("the user response channel closed")),
            () = cx.cancellation().cancelled() => Err(ToolError::Cancelled),
        };
        run.forget(cx.call_id());
        run.end_wait(Waiting::Input).await;
        outcome.map(ToolOutput::text)
    }
}
