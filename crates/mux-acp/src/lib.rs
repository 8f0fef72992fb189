#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("docs/crate.md")]
#![forbid(unsafe_code)]

/// The crate's README.md (its crates.io page), compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

/// The guide's code (docs/acp.md), compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/acp.md")]
pub struct GuideDoctests;

mod agent;
mod commands;
mod editor_files;
mod error;
mod framing;
mod methods;
mod modes;
mod prompt;
mod replay;
mod roots;
mod run;
mod serve;
mod sessions;
mod time;
mod tool_view;

pub use agent::{AcpAgent, SessionFactory, SessionSetup};
pub use error::AcpError;
pub use roots::CwdRefusal;
