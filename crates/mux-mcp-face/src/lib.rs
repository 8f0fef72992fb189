#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod agent_tool;
mod caller_answer;
mod tool_server;

pub use agent_tool::{ASK_TOOL, AgentTool, AskArgs, DEFAULT_ASK_TIMEOUT, DEFAULT_MAX_SESSIONS};
pub use tool_server::ToolServer;
