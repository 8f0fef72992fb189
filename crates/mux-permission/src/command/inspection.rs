//! What one simple command reveals beyond itself, as found by [`super::wrappers::inspect`].

/// What a simple command's words reveal beyond themselves.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    /// Why the command is at most ask.
    pub(crate) hazards: Vec<String>,
    /// Script strings the command runs (`sh -c STRING`, `eval ARGS`, option values that are
    /// command lines), parsed in turn for deny rules.
    pub(crate) inner_scripts: Vec<String>,
    /// Text that runs only in some contexts (values a `git config` write stores): parsed for
    /// deny rules without adding hazards or unreadable parts.
    pub(crate) guessed_scripts: Vec<String>,
    /// The command runs some suffix of its arguments as a command (`sudo`, `xargs`, `find
    /// -exec`); each suffix is checked against deny rules.
    pub(crate) runs_arguments: bool,
    /// Why part of what the command runs cannot be read at all (a shell fed by standard input,
    /// a script held in a substitution): any deny rule on commands could match it.
    pub(crate) unreadable: Option<String>,
    /// Words that stand for text the runner fills in later (`{}` of `xargs -I{}`, `find
    /// -exec`, `parallel`): not known when the inner command is read.
    pub(crate) placeholders: Vec<String>,
    /// The program has no model and is not known not to run its arguments: every suffix of
    /// its words is checked against deny rules.
    pub(crate) runner_like: bool,
}

impl Inspection {
    /// Takes the hazards of an option scan, and reads the values that run code as scripts.
    pub(crate) fn absorb(&mut self, hazards: Vec<String>, runs: &[&str]) {
        self.hazards.extend(hazards);
        for value in runs {
            self.value_scripts(value);
        }
    }

    /// A value that runs code, as scripts: itself, what follows its first `=` (`core.pager=…`,
    /// `exec=…`), without a leading `!` (git aliases).
    pub(crate) fn value_scripts(&mut self, value: &str) {
        let mut add = |text: &str| {
            let text = text.strip_prefix('!').unwrap_or(text);
            if !text.is_empty() && !self.inner_scripts.iter().any(|s| s == text) {
                self.inner_scripts.push(text.to_owned());
            }
        };
        add(value);
        if let Some((_, after)) = value.split_once('=') {
            add(after);
            if let Some((_, again)) = after.split_once('=') {
                add(again);
            }
        }
    }

    pub(crate) fn unreadable(&mut self, why: String) {
        self.hazards.push(why.clone());
        self.unreadable.get_or_insert(why);
    }
}
