#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("docs/crate.md")]
#![forbid(unsafe_code)]

mod catalog;
// Roots and sampling are deprecated in 2026-07-28, but servers on earlier versions use them.
#[allow(deprecated)]
mod client;
mod config;
mod connection;
mod content;
mod coordinator;
mod error;
mod event;
mod log;
mod modes;
mod naming;
mod oauth;
mod policy;
mod proxy;
// Logging, sampling and roots are deprecated in 2026-07-28, but 2025-11-25 clients use them.
#[cfg(feature = "server")]
#[allow(deprecated)]
mod server;
mod standalone;
mod state;
mod sync;
mod tls;

#[allow(deprecated)]
pub use client::{ClientFeatures, ClientHandlers, HandlerError};
pub use config::{
    ConfigError, DEFAULT_INHERITED_ENV, HttpSpec, JwtAlgorithm, OAuthGrant, OAuthSpec,
    PrivateKeyJwt, Secret, ServerSpec, SharedTokenStore, StdioSandbox, StdioSandboxPolicy,
    StdioSpec, TransportSpec, load_config, parse_config, parse_config_with,
};
pub use connection::{
    ConnectionOptions, DEFAULT_AUTHORIZATION_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_SHUTDOWN_GRACE, Lifecycle, MAX_INPUT_ROUNDS, PendingCall, ServerConnection,
};
pub use coordinator::{
    AddServerError, Coordinator, CoordinatorConfig, DEFAULT_TOOL_TIMEOUT, ServerSnapshot, Snapshot,
    StartReport,
};
pub use error::{CallError, CallFailure, ConnectError};
pub use event::{CallEnd, EVENT_BUFFER, Events, McpEvent, Received};
pub use log::{LOG_CAPACITY, LogEntry, LogLevel, LogSource};
pub use modes::{McpFilter, ToolModes, UnknownMode};
pub use naming::{PREFIX, qualified_name};
pub use oauth::token_file::FileTokenStore;
pub use oauth::token_store::{InMemoryTokenStore, StoredCredentials, TokenStore, TokenStoreError};
pub use policy::ReconnectPolicy;
pub use proxy::McpTool;
#[cfg(feature = "server")]
pub use server::{
    APPROVAL_KEY, CALLER_TIMEOUT, CallerAnswer, CallerError, Callers, Catalog, CatalogError,
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_TIMEOUT,
    HttpOptions, HttpServer, MAX_PAUSED, McpServer, Offers, PAUSE_LIMIT, PromptOutcome, ServeError,
};
pub use state::{AuthProgress, ConnectionState, ToolInfo, TransitionError};
pub use sync::{RegistrySync, SyncReport};

// Re-exported so users name the same rmcp version (results, content types).
pub use rmcp;
