//! What is evaluated: an agent, opened on a fresh conversation for every attempt.

use mux_orchestrator::Agent;

use crate::case::Case;

/// What an attempt's agent is made for.
#[derive(Clone, Copy, Debug)]
pub struct CaseEnv<'a> {
    /// The case.
    pub case: &'a Case,
    /// The attempt, from 0.
    pub attempt: u32,
    /// With cassettes, the base URL of the local server replaying (or recording) this case's
    /// traffic: point the provider client at it.
    pub model_url: Option<&'a str>,
}

/// Makes the agent of each attempt. An [`Agent`] is a target: each attempt runs on
/// [`Agent::new_session`], a new empty conversation of it.
pub trait Target: Send + Sync {
    /// The agent for this attempt, on a conversation of its own; an `Err` fails the attempt
    /// with that message.
    fn agent(&self, env: &CaseEnv<'_>) -> Result<Agent, String>;
}

impl Target for Agent {
    fn agent(&self, _env: &CaseEnv<'_>) -> Result<Agent, String> {
        Ok(self.new_session())
    }
}

/// A target from a function: per case settings (a root, limits, a model per cassette).
///
/// ```
/// use mux_eval::target;
/// use mux_llm::testing::ScriptedClient;
/// use mux_orchestrator::Agent;
///
/// let per_case = target::from_fn(|env| {
///     let model = ScriptedClient::new().reply_text(format!("case {}", env.case.name));
///     Agent::builder(model, "m").build().map_err(|e| e.to_string())
/// });
/// # let _ = per_case;
/// ```
pub fn from_fn<F>(make: F) -> FnTarget<F>
where
    F: Fn(&CaseEnv<'_>) -> Result<Agent, String> + Send + Sync,
{
    FnTarget(make)
}

/// The target [`from_fn`] makes.
pub struct FnTarget<F>(F);

impl<F> Target for FnTarget<F>
where
    F: Fn(&CaseEnv<'_>) -> Result<Agent, String> + Send + Sync,
{
    fn agent(&self, env: &CaseEnv<'_>) -> Result<Agent, String> {
        (self.0)(env)
    }
}
