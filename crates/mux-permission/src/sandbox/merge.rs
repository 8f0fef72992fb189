//! Merging the `sandbox` settings of every scope, as permissions merge: lists join, and a
//! single value comes from the highest scope that sets it.

use super::{FilesystemSettings, NetworkSettings, SandboxSettings};

impl SandboxSettings {
    /// Merges scopes given highest first: every list holds the entries of all of them (each
    /// once, in that order), and each single value is that of the first scope that sets it.
    ///
    /// ```
    /// use mux_permission::sandbox::SandboxSettings;
    ///
    /// let mut managed = SandboxSettings::new();
    /// managed.allow_unsandboxed_commands = Some(false);
    /// managed.network.denied_domains = vec!["evil.example".into()];
    /// let mut project = SandboxSettings::new();
    /// project.allow_unsandboxed_commands = Some(true);
    /// project.network.denied_domains = vec!["other.example".into(), "evil.example".into()];
    /// let merged = SandboxSettings::merged([&managed, &project]);
    /// assert_eq!(merged.allow_unsandboxed_commands, Some(false));
    /// assert_eq!(merged.network.denied_domains, ["evil.example", "other.example"]);
    /// ```
    pub fn merged<'a>(scopes: impl IntoIterator<Item = &'a SandboxSettings>) -> SandboxSettings {
        scopes
            .into_iter()
            .fold(SandboxSettings::new(), |high, low| high.over(low))
    }

    /// These settings over `lower`'s.
    fn over(self, lower: &SandboxSettings) -> SandboxSettings {
        SandboxSettings {
            enabled: self.enabled.or(lower.enabled),
            auto_allow_bash_if_sandboxed: self
                .auto_allow_bash_if_sandboxed
                .or(lower.auto_allow_bash_if_sandboxed),
            excluded_commands: join(self.excluded_commands, &lower.excluded_commands),
            allow_unsandboxed_commands: self
                .allow_unsandboxed_commands
                .or(lower.allow_unsandboxed_commands),
            network: NetworkSettings {
                allowed_domains: join(self.network.allowed_domains, &lower.network.allowed_domains),
                denied_domains: join(self.network.denied_domains, &lower.network.denied_domains),
                allow_unix_sockets: join(
                    self.network.allow_unix_sockets,
                    &lower.network.allow_unix_sockets,
                ),
                allow_local_binding: self
                    .network
                    .allow_local_binding
                    .or(lower.network.allow_local_binding),
                http_proxy_port: self
                    .network
                    .http_proxy_port
                    .or(lower.network.http_proxy_port),
                socks_proxy_port: self
                    .network
                    .socks_proxy_port
                    .or(lower.network.socks_proxy_port),
                allow_web_fetch_domains: self
                    .network
                    .allow_web_fetch_domains
                    .or(lower.network.allow_web_fetch_domains),
            },
            filesystem: FilesystemSettings {
                allow_write: join(self.filesystem.allow_write, &lower.filesystem.allow_write),
                deny_write: join(self.filesystem.deny_write, &lower.filesystem.deny_write),
                deny_read: join(self.filesystem.deny_read, &lower.filesystem.deny_read),
                allow_default_secrets: self
                    .filesystem
                    .allow_default_secrets
                    .or(lower.filesystem.allow_default_secrets),
            },
        }
    }
}

fn join(mut high: Vec<String>, low: &[String]) -> Vec<String> {
    for entry in low {
        if !high.contains(entry) {
            high.push(entry.clone());
        }
    }
    high
}
