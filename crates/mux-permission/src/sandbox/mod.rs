//! The `sandbox` object of a settings file, as Claude Code defines it. What it compiles to,
//! the walls around a command ([`Walls`](crate::Walls)), and whether a command runs inside
//! them, is module `wall`'s.
//!
//! ```json
//! {"sandbox": {
//!   "enabled": true,
//!   "autoAllowBashIfSandboxed": true,
//!   "excludedCommands": ["docker:*"],
//!   "allowUnsandboxedCommands": false,
//!   "network": {"allowedDomains": ["crates.io", "*.npmjs.org:443"], "deniedDomains": ["evil.example"],
//!               "allowUnixSockets": ["/run/user/1000/bus"], "allowLocalBinding": false,
//!               "httpProxyPort": 8080, "socksProxyPort": 8081, "allowWebFetchDomains": false},
//!   "filesystem": {"allowWrite": ["~/.npm"], "denyWrite": ["./dist"], "denyRead": ["~/.config/secret"],
//!                  "allowDefaultSecrets": false}
//! }}
//! ```
//!
//! `network.allowWebFetchDomains` and `filesystem.allowDefaultSecrets` are mux's own keys;
//! every other key is Claude Code's. A key mux does not read is an error that names it.

mod domain;
mod excluded;
mod merge;
mod parse;

pub use domain::{WallDomain, WallDomainError};
pub(crate) use excluded::excluded_pattern;
pub use parse::SandboxError;
pub(crate) use parse::parse;

/// The input key of a `bash` call that asks to run the command outside the OS sandbox, as
/// Claude Code's Bash tool names it.
pub const DANGEROUSLY_DISABLE_SANDBOX: &str = "dangerouslyDisableSandbox";

/// The `sandbox` settings of one settings file, or of every scope merged
/// ([`Permissions::sandbox`](crate::Permissions::sandbox)).
///
/// A value left unset (`None`, an empty list) takes its default, or the value of a lower
/// scope when merged. Lists hold the entries as written; each was checked at load.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxSettings {
    /// `enabled`: turns the OS sandbox of the `bash` tool on. `true` puts the wall up even
    /// where the application chose full access; `false` keeps every command asking as
    /// without a sandbox. Settings never take the wall down (only the application can).
    pub enabled: Option<bool>,
    /// `autoAllowBashIfSandboxed` (default `true`): when the wall is up, a command that would
    /// ask runs without asking; deny and ask rules still hold.
    pub auto_allow_bash_if_sandboxed: Option<bool>,
    /// `excludedCommands`: command patterns, as in `Bash(…)` rules (a program name alone
    /// stands for all its commands), that run outside the wall. A command with one of them
    /// anywhere in it asks in every mode, whatever allows it.
    pub excluded_commands: Vec<String>,
    /// `allowUnsandboxedCommands` (default `true`): `false` refuses every command that would
    /// run outside the wall (an excluded command, or a call asking for it).
    pub allow_unsandboxed_commands: Option<bool>,
    /// `network`.
    pub network: NetworkSettings,
    /// `filesystem`.
    pub filesystem: FilesystemSettings,
}

/// `sandbox.network`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NetworkSettings {
    /// `allowedDomains`: hosts a sandboxed command may reach (`example.com`,
    /// `*.example.com`, `example.com:443`, `*`).
    pub allowed_domains: Vec<String>,
    /// `deniedDomains`: hosts it may not reach, whatever allows them.
    pub denied_domains: Vec<String>,
    /// `allowUnixSockets`: paths of Unix sockets it may connect to.
    pub allow_unix_sockets: Vec<String>,
    /// `allowLocalBinding` (default `false`): it may listen on a local port.
    pub allow_local_binding: Option<bool>,
    /// `httpProxyPort`: the port of an HTTP proxy of the user's own, instead of mux's.
    pub http_proxy_port: Option<u16>,
    /// `socksProxyPort`: the port of a SOCKS5 proxy of the user's own, instead of mux's.
    pub socks_proxy_port: Option<u16>,
    /// mux's `allowWebFetchDomains` (default `true`): the domains `WebFetch(domain:…)` allow
    /// rules name are allowed for sandboxed commands too. `false` keeps them for the fetch
    /// tool only; `WebFetch` deny rules reach commands either way.
    pub allow_web_fetch_domains: Option<bool>,
}

/// `sandbox.filesystem`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilesystemSettings {
    /// `allowWrite`: paths a sandboxed command may write besides the project root.
    pub allow_write: Vec<String>,
    /// `denyWrite`: paths it may not write, whatever allows them.
    pub deny_write: Vec<String>,
    /// `denyRead`: paths hidden from it.
    pub deny_read: Vec<String>,
    /// mux's `allowDefaultSecrets` (default `false`): the secret locations mux hides by
    /// default ([`mux_tool::secrets::SECRET_LOCATIONS`]) are readable.
    pub allow_default_secrets: Option<bool>,
}

impl SandboxSettings {
    /// Settings with nothing set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether `autoAllowBashIfSandboxed` is on (its default is on).
    pub fn auto_allows_bash(&self) -> bool {
        self.auto_allow_bash_if_sandboxed.unwrap_or(true)
    }

    /// Whether commands may run outside the wall (`allowUnsandboxedCommands`, default on).
    pub fn allows_unsandboxed(&self) -> bool {
        self.allow_unsandboxed_commands.unwrap_or(true)
    }

    /// Whether `WebFetch(domain:…)` allow rules open the network of commands too.
    pub fn shares_web_fetch_domains(&self) -> bool {
        self.network.allow_web_fetch_domains.unwrap_or(true)
    }

    /// Whether the default secret locations stay hidden.
    pub fn hides_default_secrets(&self) -> bool {
        !self.filesystem.allow_default_secrets.unwrap_or(false)
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}
