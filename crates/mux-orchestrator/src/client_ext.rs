//! [`LlmClientExt`]: `client.agent("model")`, the builder reached from the client.

use mux_llm::LlmClient;

use crate::{Agent, AgentBuilder};

/// Starts an [`Agent`] from its client, rig's way round: `client.agent("model")` is
/// [`Agent::builder(client, "model")`](Agent::builder). Either way the model is an argument, so
/// an agent without one does not compile.
///
/// It is an extension trait here rather than a method of [`LlmClient`] because mux-llm sits
/// below this crate and knows nothing of agents. It is in `mux::prelude`, and implemented for
/// every client, an `Arc<dyn LlmClient>` included.
///
/// ```
/// use mux_llm::testing::ScriptedClient;
/// use mux_orchestrator::LlmClientExt;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let agent = ScriptedClient::new()
///     .reply_text("Paris.")
///     .agent("any-model")
///     .instructions("Be brief.")
///     .build()?;
/// assert_eq!(agent.prompt("Capital of France?").await?, "Paris.");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait LlmClientExt {
    /// A builder for an agent on this client with `model` for every turn.
    fn agent(self, model: impl Into<String>) -> AgentBuilder;
}

impl<C: LlmClient + 'static> LlmClientExt for C {
    fn agent(self, model: impl Into<String>) -> AgentBuilder {
        Agent::builder(self, model)
    }
}
