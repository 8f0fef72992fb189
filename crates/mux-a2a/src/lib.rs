#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod answer;
mod card;
mod config;
mod contexts;
mod methods;
mod router;
pub mod rpc;
mod runner;
mod security;
mod server;
mod stored;
mod task;
mod tasks;
mod time;
pub mod wire;

pub use card::{CARD_PATH, PROTOCOL_VERSION, RPC_PATH};
pub use config::A2aConfig;
pub use server::{A2aError, A2aServer, Running};
