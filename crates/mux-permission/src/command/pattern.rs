//! Command specifiers: exact (`git status`), word-boundary prefix (`git diff:*`) and wildcard
//! (`npm run *`). They match parsed words, never raw text.

/// A compiled command specifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandPattern {
    /// The command's words equal these.
    Exact(Vec<String>),
    /// The command's words start with these.
    Prefix(Vec<String>),
    /// Word-wise glob: a lone `*` matches any number of words, a `*` inside a word matches
    /// any characters of that one word.
    Wildcard(Vec<String>),
}

/// Why a command specifier cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CommandPatternError {
    /// Nothing to match.
    #[error("the command pattern is empty")]
    Empty,
    /// A quote is not closed.
    #[error("the command pattern has an unclosed quote")]
    UnclosedQuote,
    /// `:*` appears somewhere other than the end.
    #[error("`:*` may only end a command pattern")]
    MisplacedPrefix,
}

impl CommandPattern {
    /// Compiles a specifier.
    pub fn parse(specifier: &str) -> Result<Self, CommandPatternError> {
        let (body, prefix) = match specifier.strip_suffix(":*") {
            Some(body) => (body, true),
            None => (specifier, false),
        };
        if body.contains(":*") {
            return Err(CommandPatternError::MisplacedPrefix);
        }
        let words = split_words(body)?;
        if words.is_empty() {
            return Err(CommandPatternError::Empty);
        }
        Ok(if prefix {
            Self::Prefix(words)
        } else if words.iter().any(|w| w.contains('*')) {
            Self::Wildcard(words)
        } else {
            Self::Exact(words)
        })
    }

    /// Whether a command made of `words` matches.
    pub fn matches(&self, words: &[String]) -> bool {
        match self {
            Self::Exact(expected) => words == expected.as_slice(),
            Self::Prefix(prefix) => {
                words.len() >= prefix.len() && words[..prefix.len()] == prefix[..]
            }
            Self::Wildcard(pattern) => match_words(pattern, words),
        }
    }

    /// Like [`matches`](Self::matches), also trying the command name without its directory
    /// (`/bin/rm` as `rm`). Deny and ask rules use it; allow rules do not.
    pub fn matches_any_path(&self, words: &[String]) -> bool {
        if self.matches(words) {
            return true;
        }
        match words.split_first() {
            Some((name, rest)) if name.contains('/') => {
                let mut renamed = Vec::with_capacity(words.len());
                renamed.push(super::wrappers::base_name(name).to_owned());
                renamed.extend_from_slice(rest);
                self.matches(&renamed)
            }
            _ => false,
        }
    }
}

impl CommandPattern {
    /// Whether a deny or ask rule could match `words`: as written, by base name, or read the
    /// way the command's option parser reads them (global options before the subcommand,
    /// options in any position, abbreviated, clustered, by short or long name).
    pub fn could_match(&self, words: &[String]) -> bool {
        self.matches_any_path(words)
            || match self {
                Self::Exact(rule) => super::deny_match::options_could_match(rule, words, true),
                Self::Prefix(rule) => super::deny_match::options_could_match(rule, words, false),
                Self::Wildcard(_) => false,
            }
    }

    /// Whether a command this pattern matches could be made of `words`, words found inside
    /// arguments (`rm` in `make --eval='x:;@rm -rf ~'`): its program is one of them (as
    /// written or by base name), and so is each of its other words that is no option (an
    /// option may be spelled many ways; a subcommand such as `push` may not). A pattern whose
    /// program is a lone `*` names no program in particular: `false`.
    pub(crate) fn could_be_among(&self, words: &[String]) -> bool {
        let (Self::Exact(rule) | Self::Prefix(rule) | Self::Wildcard(rule)) = self;
        let Some((program, rest)) = rule.split_first() else {
            return false;
        };
        if program == "*" {
            return false;
        }
        let named = |pattern: &str| {
            words.iter().any(|word| {
                glob_word(pattern, word) || glob_word(pattern, super::wrappers::base_name(word))
            })
        };
        named(program)
            && rest
                .iter()
                .filter(|word| !word.starts_with('-') && *word != "*")
                .all(|word| named(word))
    }

    /// Whether a deny or ask rule could match a command whose words are shell patterns.
    pub(crate) fn could_match_pattern(&self, words: &[String]) -> bool {
        match self {
            Self::Exact(rule) => super::deny_match::pattern_could_match(rule, words, true),
            Self::Prefix(rule) | Self::Wildcard(rule) => {
                super::deny_match::pattern_could_match(rule, words, false)
            }
        }
    }
}

fn match_words(pattern: &[String], words: &[String]) -> bool {
    match pattern.split_first() {
        None => words.is_empty(),
        Some((first, rest)) if first == "*" => {
            (0..=words.len()).any(|skip| match_words(rest, &words[skip..]))
        }
        Some((first, rest)) => match words.split_first() {
            Some((word, others)) => glob_word(first, word) && match_words(rest, others),
            None => false,
        },
    }
}

/// `*` matches any run of characters within one word.
fn glob_word(pattern: &str, word: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(head) = parts.next() else {
        return pattern == word;
    };
    let Some(mut rest) = word.strip_prefix(head) else {
        return false;
    };
    let tail: Vec<&str> = parts.collect();
    let Some((last, middle)) = tail.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Splits a specifier into words, honouring single and double quotes and backslashes.
pub(crate) fn split_words(text: &str) -> Result<Vec<String>, CommandPatternError> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(inner) => current.push(inner),
                        None => return Err(CommandPatternError::UnclosedQuote),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(inner) => current.push(inner),
                            None => return Err(CommandPatternError::UnclosedQuote),
                        },
                        Some(inner) => current.push(inner),
                        None => return Err(CommandPatternError::UnclosedQuote),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(inner) = chars.next() {
                    current.push(inner);
                }
            }
            other => {
                in_word = true;
                current.push(other);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        split_words(s).unwrap_or_default()
    }

    fn p(s: &str) -> CommandPattern {
        CommandPattern::parse(s).unwrap_or(CommandPattern::Exact(vec![]))
    }

    #[test]
    fn exact_prefix_and_wildcard() {
        assert!(p("git status").matches(&w("git status")));
        assert!(!p("git status").matches(&w("git status --short")));
        assert!(p("git diff:*").matches(&w("git diff")));
        assert!(p("git diff:*").matches(&w("git diff HEAD~1")));
        assert!(!p("git diff:*").matches(&w("git diff-index")));
        assert!(!p("git diff:*").matches(&w("git")));
        assert!(p("npm run *").matches(&w("npm run test")));
        assert!(!p("npm run *").matches(&w("npm install")));
        assert!(p("ls *.txt").matches(&w("ls a.txt")));
        assert!(!p("ls *.txt").matches(&w("ls a.txt b.txt")));
        assert!(p("git * main").matches(&w("git push origin main")));
    }

    #[test]
    fn path_commands_match_by_base_name_only_when_asked() {
        assert!(!p("rm:*").matches(&w("/bin/rm -rf /")));
        assert!(p("rm:*").matches_any_path(&w("/bin/rm -rf /")));
    }

    #[test]
    fn bad_patterns_are_errors() {
        assert_eq!(CommandPattern::parse("  "), Err(CommandPatternError::Empty));
        assert_eq!(
            CommandPattern::parse("echo 'x"),
            Err(CommandPatternError::UnclosedQuote)
        );
        assert_eq!(
            CommandPattern::parse("a:* b"),
            Err(CommandPatternError::MisplacedPrefix)
        );
    }

    #[test]
    fn glob_words() {
        assert!(glob_word("*", ""));
        assert!(glob_word("a*c", "abc"));
        assert!(!glob_word("a*c", "ab"));
        assert!(glob_word("*.rs", "main.rs"));
        assert!(!glob_word("ab*ba", "aba"));
    }
}
