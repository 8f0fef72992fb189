#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
// A test kit: a server that cannot start is the test's failure, reported with its reason.
#![allow(clippy::expect_used, clippy::panic)]

pub mod balancer;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod postgres;
pub mod process;
pub mod site;
pub mod temporal;
