//! A walled `bash` whose network reaches one test host, which the network-question tests of
//! the faces (the editor face's, the web face's, the A2A face's) share, included by path,
//! and an agent whose one tool it is.

use std::path::Path;

use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_tool::ApprovalPolicy;
use mux_tool::builtin::{Bash, NetworkPolicy, Sandbox, SandboxPolicy};

/// `bash` in `sandbox`, walled (it may write in the workspace only), whose network reaches
/// `host`, resolved to 127.0.0.1:`port`, when a destination no rule covers is allowed.
pub(super) fn walled_bash(sandbox: Sandbox, host: &str, port: u16) -> Bash {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    Bash::new(sandbox)
        .sandbox_policy(SandboxPolicy::WorkspaceWrite)
        .network_policy(NetworkPolicy::new().resolve_for_tests(host, vec![addr]))
}

/// An agent on `model`, rooted in `root`, whose one tool is [`walled_bash`] there (reaching
/// `host` at 127.0.0.1:`port`); its calls need approval per `approval`.
pub(super) fn walled_agent(
    model: ScriptedClient,
    root: &Path,
    host: &str,
    port: u16,
    approval: ApprovalPolicy,
) -> Agent {
    Agent::builder(model, "scripted")
        .tool(walled_bash(Sandbox::new(root).unwrap(), host, port))
        .approval(approval)
        .root(root)
        .build()
        .unwrap()
}
