//! Compiling the policy to the walls around a command: every path and domain a rule or a
//! `sandbox` setting names, resolved to plain data an enforcer can apply.

use std::path::{Path, PathBuf};

use crate::path::normalize;
use mux_tool::builtin::{DomainRuleError, FilePolicy, NetworkPolicy};
use mux_tool::secrets::SECRET_LOCATIONS;

use crate::sandbox::{SandboxError, SandboxSettings, WallDomain};
use crate::{Family, PathContext, PathPattern, Rule, RuleKind, RuleSet, resolve};

/// What the walls around a sandboxed command are made of: plain data, each entry with
/// where it came from. Built by [`SandboxSettings::walls`] or
/// [`Permissions::walls`](crate::Permissions::walls).
///
/// | list | fed by |
/// |---|---|
/// | `deny_read` | `sandbox.filesystem.denyRead`; `Read(…)` deny and ask rules; the secret locations ([`SECRET_LOCATIONS`]) unless allowed |
/// | `allow_write` | `sandbox.filesystem.allowWrite`; `Edit(…)` and `Write(…)` allow rules |
/// | `deny_write` | `sandbox.filesystem.denyWrite`; `Edit(…)` deny and ask rules |
/// | `allowed_domains` | `sandbox.network.allowedDomains`; `WebFetch(domain:…)` allow rules unless `allowWebFetchDomains` is `false` |
/// | `denied_domains` | `sandbox.network.deniedDomains`; `WebFetch(domain:…)` deny rules |
///
/// A read or edit rule names a place for the file tools and the wall alike, so an ask rule
/// (which a running command cannot stop to ask about) becomes a deny on the wall. A rule
/// without a specifier (`Read`, `WebFetch`) is about the tool, not a place, and builds no
/// wall. Deny lists win over allow lists; the enforcer applies that.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Walls {
    /// Paths hidden from the command.
    pub deny_read: Vec<WallPath>,
    /// Paths it may write besides the project root and its own temp directory.
    pub allow_write: Vec<WallPath>,
    /// Paths it may not write, whatever allows them.
    pub deny_write: Vec<WallPath>,
    /// Hosts it may reach.
    pub allowed_domains: Vec<WallDomain>,
    /// Hosts it may not reach, whatever allows them.
    pub denied_domains: Vec<WallDomain>,
    /// Unix sockets it may connect to (absolute paths).
    pub allow_unix_sockets: Vec<PathBuf>,
    /// Whether it may listen on a local port.
    pub allow_local_binding: bool,
    /// The port of the user's own HTTP proxy, when set.
    pub http_proxy_port: Option<u16>,
    /// The port of the user's own SOCKS5 proxy, when set.
    pub socks_proxy_port: Option<u16>,
}

/// One path of a wall: an absolute place, and below it, when the entry was a glob, the
/// gitignore-style pattern (literal `/`, `**` for any depth) of what it names there. The
/// entry covers what it names and everything beneath it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WallPath {
    /// The absolute, lexically normalised directory or file: the entry's literal part.
    pub path: PathBuf,
    /// The glob below `path`, when the entry has one (`**/.env`, `*.pem`).
    pub glob: Option<String>,
    /// Where the entry came from.
    pub origin: WallOrigin,
}

/// Where a wall entry came from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WallOrigin {
    /// A `sandbox` setting: the key and the entry as written.
    Setting {
        /// The key, such as `sandbox.filesystem.denyRead`.
        key: &'static str,
        /// The entry.
        entry: String,
    },
    /// A permission rule, as written, and the list it sits in.
    Rule {
        /// The rule.
        rule: String,
        /// Allow, ask or deny.
        kind: RuleKind,
    },
    /// One of the secret locations hidden by default ([`SECRET_LOCATIONS`]), relative to the
    /// home directory.
    DefaultSecret(&'static str),
    /// The symlink-resolved location of another entry of a deny list.
    Resolved(Box<WallOrigin>),
}

impl SandboxSettings {
    /// Compiles these settings and `rules` to the walls, paths anchored by `context` (the
    /// rule syntax: `/…` and `//…` absolute, `~/…` the home directory, `./…` or a path with a
    /// `/` the project root, a bare name at any depth under the root).
    ///
    /// Every entry of a deny list whose literal part leads through a symlink is listed again
    /// at the resolved location, so naming the link does not leave the target readable.
    ///
    /// ```
    /// use mux_permission::sandbox::SandboxSettings;
    /// use mux_permission::{PathContext, RuleSet};
    /// use std::path::Path;
    ///
    /// let rules = RuleSet::new().with_deny("Read(./.env)")?.with_allow("WebFetch(domain:docs.rs)")?;
    /// let context = PathContext::with_home("/nonexistent/p", Some("/nonexistent/h".into()));
    /// let walls = SandboxSettings::new().walls(&rules, &context)?;
    /// assert!(walls.deny_read.iter().any(|w| w.path == Path::new("/nonexistent/p/.env")));
    /// assert!(walls.deny_read.iter().any(|w| w.path == Path::new("/nonexistent/h/.ssh")));
    /// assert_eq!(walls.allowed_domains[0].to_string(), "docs.rs");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn walls(&self, rules: &RuleSet, context: &PathContext) -> Result<Walls, SandboxError> {
        self.validate()?;
        let mut walls = Walls {
            allow_local_binding: self.network.allow_local_binding.unwrap_or(false),
            http_proxy_port: self.network.http_proxy_port,
            socks_proxy_port: self.network.socks_proxy_port,
            ..Walls::default()
        };
        let fs = &self.filesystem;
        let setting = |key: &'static str, entry: &str| WallOrigin::Setting {
            key,
            entry: entry.to_owned(),
        };
        for entry in &fs.deny_read {
            let origin = setting("sandbox.filesystem.denyRead", entry);
            push_path(&mut walls.deny_read, entry, origin, context, true);
        }
        for entry in &fs.allow_write {
            let origin = setting("sandbox.filesystem.allowWrite", entry);
            push_path(&mut walls.allow_write, entry, origin, context, false);
        }
        for entry in &fs.deny_write {
            let origin = setting("sandbox.filesystem.denyWrite", entry);
            push_path(&mut walls.deny_write, entry, origin, context, true);
        }
        if self.hides_default_secrets() {
            for secret in SECRET_LOCATIONS {
                let origin = WallOrigin::DefaultSecret(secret.path);
                let entry = format!("~/{}", secret.path);
                push_path(&mut walls.deny_read, &entry, origin, context, true);
            }
        }
        for kind in [RuleKind::Deny, RuleKind::Ask, RuleKind::Allow] {
            for rule in rules.list(kind) {
                self.push_rule(&mut walls, rule, kind, context);
            }
        }
        for (list, entries) in [
            (&mut walls.allowed_domains, &self.network.allowed_domains),
            (&mut walls.denied_domains, &self.network.denied_domains),
        ] {
            for entry in entries {
                let domain = WallDomain::parse(entry).map_err(|err| SandboxError::Entry {
                    key: "sandbox.network domains".into(),
                    entry: entry.clone(),
                    problem: err.to_string(),
                })?;
                if !list.contains(&domain) {
                    list.push(domain);
                }
            }
        }
        for socket in &self.network.allow_unix_sockets {
            if let Some(path) = anchored(socket, context) {
                walls.allow_unix_sockets.push(path);
            }
        }
        Ok(walls)
    }

    fn push_rule(&self, walls: &mut Walls, rule: &Rule, kind: RuleKind, context: &PathContext) {
        let Some(specifier) = rule.specifier() else {
            return;
        };
        let origin = || WallOrigin::Rule {
            rule: rule.as_str().to_owned(),
            kind,
        };
        let named = Family::named(rule.tool());
        // A deny or ask rule naming one member reaches its whole family; an allow rule only
        // when it names the family.
        let family = match kind {
            RuleKind::Allow => named,
            _ => named.or_else(|| Family::of_member(rule.tool())),
        };
        match (family, kind) {
            (Some(Family::Read), RuleKind::Deny | RuleKind::Ask) => {
                push_path(&mut walls.deny_read, specifier, origin(), context, true);
            }
            (Some(Family::Edit), RuleKind::Deny | RuleKind::Ask) => {
                push_path(&mut walls.deny_write, specifier, origin(), context, true);
            }
            (Some(Family::Edit), RuleKind::Allow) => {
                push_path(&mut walls.allow_write, specifier, origin(), context, false);
            }
            (Some(Family::WebFetch), RuleKind::Deny) => {
                if let Some(domain) = web_fetch_domain(specifier)
                    && !walls.denied_domains.contains(&domain)
                {
                    walls.denied_domains.push(domain);
                }
            }
            (Some(Family::WebFetch), RuleKind::Allow) if self.shares_web_fetch_domains() => {
                if let Some(domain) = web_fetch_domain(specifier)
                    && !walls.allowed_domains.contains(&domain)
                {
                    walls.allowed_domains.push(domain);
                }
            }
            _ => {}
        }
    }
}

impl Walls {
    /// The file side, for the `bash` tool's mount view: hidden paths, writable and read-only
    /// ones; `hide_secrets` keeps the secret locations hidden (they are already in
    /// `deny_read` when the settings hide them).
    ///
    /// A wall a mount can enforce names a place. An entry with a glob below its place
    /// (`Read(~/keys/*.pem)`) is enforced on that whole place when it denies (the safe side),
    /// unless the place is the project root, the home directory, `/` or holds one of them:
    /// hiding those would hide the project itself, so such an entry binds the file tools and
    /// the command analysis only. An allow entry with a glob grants nothing here.
    pub fn file_policy(&self, hide_secrets: bool, context: &PathContext) -> FilePolicy {
        let whole = |list: &[WallPath], grants: bool| -> Vec<PathBuf> {
            list.iter()
                .filter(|wall| match wall.glob {
                    None => true,
                    Some(_) if grants => false,
                    Some(_) => !holds_a_home(&wall.path, context),
                })
                .map(|wall| wall.path.clone())
                .collect()
        };
        FilePolicy {
            deny_read: whole(&self.deny_read, false),
            allow_read: Vec::new(),
            allow_write: whole(&self.allow_write, true),
            deny_write: whole(&self.deny_write, false),
            secrets_visible: !hide_secrets,
        }
    }

    /// The network side, for the `bash` tool's egress proxy: the allowed and denied domains
    /// (a denied name covers its subdomains, as the policy reads it) and the Unix sockets.
    pub fn network_policy(&self) -> Result<NetworkPolicy, DomainRuleError> {
        let allowed = self.allowed_domains.iter().map(ToString::to_string);
        let denied = self.denied_domains.iter().flat_map(|domain| {
            let exact = domain.to_string();
            match (&domain.host, domain.subdomains_only) {
                (Some(host), false) if crate::domain::normalised_ip(host).is_none() => {
                    let port = domain.port.map(|p| format!(":{p}")).unwrap_or_default();
                    vec![exact, format!("*.{host}{port}")]
                }
                _ => vec![exact],
            }
        });
        let mut policy = NetworkPolicy::new()
            .allow_domains(allowed)?
            .deny_domains(denied)?;
        for socket in &self.allow_unix_sockets {
            policy = policy.allow_unix_socket(socket.clone());
        }
        Ok(policy)
    }
}

/// Whether `place` is the project root, the home directory, `/`, or holds one of them.
fn holds_a_home(place: &Path, context: &PathContext) -> bool {
    [Some(context.root()), context.home()]
        .into_iter()
        .flatten()
        .any(|home| home.starts_with(place))
        || place.parent().is_none()
}

fn web_fetch_domain(specifier: &str) -> Option<WallDomain> {
    let domain = specifier.trim().strip_prefix("domain:")?;
    WallDomain::parse(domain).ok()
}

/// Adds the wall path a pattern names (nothing when it names a place under an unknown home
/// directory, or does not parse: settings were checked at load, rules when they were made).
fn push_path(
    list: &mut Vec<WallPath>,
    pattern: &str,
    origin: WallOrigin,
    context: &PathContext,
    resolve_links: bool,
) {
    if PathPattern::parse(pattern).is_err() {
        return;
    }
    let Some((path, glob)) = split(pattern, context) else {
        return;
    };
    if resolve_links
        && let Ok(real) = resolve(&path)
        && real != path
    {
        push_unique(
            list,
            WallPath {
                path: real,
                glob: glob.clone(),
                origin: WallOrigin::Resolved(Box::new(origin.clone())),
            },
        );
    }
    push_unique(list, WallPath { path, glob, origin });
}

fn push_unique(list: &mut Vec<WallPath>, entry: WallPath) {
    if !list
        .iter()
        .any(|have| have.path == entry.path && have.glob == entry.glob)
    {
        list.push(entry);
    }
}

/// The absolute literal part of a path pattern and the glob below it, anchored as the rule
/// syntax anchors it.
fn split(pattern: &str, context: &PathContext) -> Option<(PathBuf, Option<String>)> {
    let spec = pattern.trim();
    let (base, body): (PathBuf, String) = if spec.starts_with('/') {
        (PathBuf::from("/"), spec.trim_start_matches('/').to_owned())
    } else if spec == "~" || spec.starts_with("~/") {
        let home = context.home()?.to_path_buf();
        (
            home,
            spec.trim_start_matches('~')
                .trim_start_matches('/')
                .to_owned(),
        )
    } else if let Some(rest) = spec.strip_prefix("./") {
        (context.root().to_path_buf(), rest.to_owned())
    } else if spec.trim_end_matches('/').contains('/') {
        (context.root().to_path_buf(), spec.to_owned())
    } else {
        (context.root().to_path_buf(), format!("**/{spec}"))
    };
    let body = body.trim_end_matches('/');
    let body = body.strip_suffix("/**").unwrap_or(body);
    let body = if body == "**" { "" } else { body };
    let parts: Vec<&str> = body.split('/').filter(|p| !p.is_empty()).collect();
    let literal = parts
        .iter()
        .position(|part| part.contains(['*', '?', '[', '{', '\\']))
        .unwrap_or(parts.len());
    let mut path = base;
    for part in &parts[..literal] {
        path.push(part);
    }
    let glob = (literal < parts.len()).then(|| parts[literal..].join("/"));
    Some((normalize(&path), glob))
}

/// An absolute socket path from `/…` or `~/…`.
fn anchored(path: &str, context: &PathContext) -> Option<PathBuf> {
    match path.strip_prefix("~/") {
        Some(rest) => Some(normalize(&context.home()?.join(rest))),
        None => Some(normalize(Path::new(path))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> PathContext {
        PathContext::with_home("/nonexistent/p", Some("/nonexistent/h".into()))
    }

    fn split_of(pattern: &str) -> (String, Option<String>) {
        let (path, glob) = split(pattern, &ctx()).unwrap_or_else(|| panic!("{pattern}"));
        (path.display().to_string(), glob)
    }

    #[test]
    fn anchors_and_globs() {
        let s = |p: &str, path: &str, glob: Option<&str>| {
            assert_eq!(
                split_of(p),
                (path.to_owned(), glob.map(str::to_owned)),
                "{p}"
            );
        };
        s("/etc/shadow", "/etc/shadow", None);
        s("//etc/ssl/**", "/etc/ssl", None);
        s("~/.aws", "/nonexistent/h/.aws", None);
        s("~", "/nonexistent/h", None);
        s("./secrets/", "/nonexistent/p/secrets", None);
        s("config/*.key", "/nonexistent/p/config", Some("*.key"));
        s(".env", "/nonexistent/p", Some("**/.env"));
        s("*.pem", "/nonexistent/p", Some("**/*.pem"));
        s("./**", "/nonexistent/p", None);
        s("/a/b/**/c", "/a/b", Some("**/c"));
    }

    #[test]
    fn no_home_no_home_paths() {
        let context = PathContext::with_home("/nonexistent/p", None);
        assert!(split("~/.ssh", &context).is_none());
        assert!(split("./x", &context).is_some());
    }
}
