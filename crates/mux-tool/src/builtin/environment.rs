//! The environment of a `bash` command: built from an allow-list, never inherited whole, so
//! API keys and tokens in the agent's environment do not reach a command unless named.

use std::ffi::{OsStr, OsString};

/// The variables a command gets from the agent's environment by default (see
/// [`Bash::scrub_env`](super::Bash::scrub_env)); a trailing `*` matches any suffix.
/// `TMPDIR`, `TMP` and `TEMP` are always the call's own temp dir, and `PWD` the root.
pub const DEFAULT_KEPT_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
];

/// Which variables of the agent's environment a command gets.
#[derive(Clone, Debug)]
pub(crate) struct EnvPolicy {
    /// Names (or `PREFIX*`) kept unless they look secret.
    kept: Vec<String>,
    /// Names passed on even when they look secret.
    passed: Vec<String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        Self {
            kept: DEFAULT_KEPT_ENV
                .iter()
                .map(|name| (*name).to_owned())
                .collect(),
            passed: Vec::new(),
        }
    }
}

impl EnvPolicy {
    /// Replaces the allow-list.
    pub(crate) fn keep(&mut self, names: Vec<String>) {
        self.kept = names;
    }

    /// Passes `name` on, secret or not.
    pub(crate) fn pass(&mut self, name: String) {
        self.passed.push(name);
    }

    /// The variables of `vars` a command gets.
    pub(crate) fn select(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        vars.into_iter()
            .filter(|(name, _)| self.admits(name))
            .collect()
    }

    fn admits(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            return false;
        };
        if self.passed.iter().any(|passed| passed == name) {
            return true;
        }
        self.kept.iter().any(|kept| matches(kept, name)) && !looks_secret(name)
    }
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Whether `name` looks like it holds a secret: `*_KEY`, `*TOKEN*`, `*SECRET*`,
/// `*PASSWORD*`, `*PASSWD*`, `*CREDENTIAL*`, `*AUTH*`, or a model provider's variable.
pub(crate) fn looks_secret(name: &str) -> bool {
    const PROVIDERS: [&str; 12] = [
        "OPENAI_",
        "ANTHROPIC_",
        "GEMINI_",
        "GOOGLE_API",
        "AZURE_",
        "AWS_",
        "MISTRAL_",
        "GROQ_",
        "DEEPSEEK_",
        "OPENROUTER_",
        "XAI_",
        "COHERE_",
    ];
    let upper = name.to_ascii_uppercase();
    upper.ends_with("_KEY")
        || upper == "KEY"
        || [
            "TOKEN",
            "SECRET",
            "PASSWORD",
            "PASSWD",
            "CREDENTIAL",
            "AUTH",
        ]
        .iter()
        .any(|word| upper.contains(word))
        || PROVIDERS.iter().any(|prefix| upper.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(names: &[&str]) -> Vec<(OsString, OsString)> {
        names
            .iter()
            .map(|name| (OsString::from(name), OsString::from("v")))
            .collect()
    }

    fn names(selected: Vec<(OsString, OsString)>) -> Vec<String> {
        selected
            .into_iter()
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn secrets_stay_out_unless_passed_on_by_name() {
        let all = vars(&[
            "PATH",
            "LC_TIME",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "GITHUB_TOKEN",
            "MY_SECRET",
            "DB_PASSWORD",
            "CARGO_PKG_NAME",
            "BASH_ENV",
            "GIT_CONFIG_PARAMETERS",
        ]);
        let mut policy = EnvPolicy::default();
        assert_eq!(names(policy.select(all.clone())), ["PATH", "LC_TIME"]);
        policy.pass("GITHUB_TOKEN".into());
        assert_eq!(
            names(policy.select(all.clone())),
            ["PATH", "LC_TIME", "GITHUB_TOKEN"]
        );
        policy.keep(vec!["AWS_*".into(), "PATH".into()]);
        let aws = vars(&["AWS_SECRET_ACCESS_KEY", "AWS_REGION", "PATH"]);
        assert_eq!(
            names(policy.select(aws)),
            ["PATH"],
            "AWS_ is a provider prefix"
        );
    }
}
