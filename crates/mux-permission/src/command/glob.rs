//! Shell pattern matching (`*`, `?`, `[…]`, `\`), to tell which names a glob in command
//! position could expand to.

/// Whether the shell pattern `glob` could match `text`. A brace expansion matches anything:
/// it can produce any word.
pub(crate) fn could_match(glob: &str, text: &str) -> bool {
    if unescaped(glob, '{') {
        return true;
    }
    let glob: Vec<char> = glob.chars().collect();
    let text: Vec<char> = text.chars().collect();
    matches(&glob, &text)
}

/// Whether `word` has an unescaped pattern character (`*`, `?`, `[`, `{`).
pub(crate) fn is_pattern(word: &str) -> bool {
    ['*', '?', '[', '{'].iter().any(|c| unescaped(word, *c))
}

fn unescaped(word: &str, wanted: char) -> bool {
    let mut escaped = false;
    for c in word.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == wanted {
            return true;
        }
    }
    false
}

/// `text` as a pattern that matches only itself.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

fn matches(glob: &[char], text: &[char]) -> bool {
    let (mut g, mut t) = (0, 0);
    // Where to resume after the last `*`: (glob index after it, text index it matched up to).
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        let step = match glob.get(g) {
            Some('*') => {
                star = Some((g + 1, t));
                g += 1;
                continue;
            }
            Some('?') => Some(g + 1),
            Some('[') => bracket(glob, g, text[t]),
            Some('\\') if g + 1 < glob.len() => (glob[g + 1] == text[t]).then_some(g + 2),
            Some(&c) => (c == text[t]).then_some(g + 1),
            None => None,
        };
        match (step, star) {
            (Some(next), _) => {
                g = next;
                t += 1;
            }
            (None, Some((after, from))) => {
                g = after;
                t = from + 1;
                star = Some((after, from + 1));
            }
            (None, None) => return false,
        }
    }
    glob[g..].iter().all(|c| *c == '*')
}

/// Matches `c` against the bracket expression starting at `glob[at]`; the index after it when
/// it matches. An unclosed `[` is a literal.
fn bracket(glob: &[char], at: usize, c: char) -> Option<usize> {
    let mut i = at + 1;
    let negated = matches!(glob.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let mut hit = false;
    let mut first = true;
    while i < glob.len() && (first || glob[i] != ']') {
        first = false;
        let low = glob[i];
        if glob.get(i + 1) == Some(&'-') && glob.get(i + 2).is_some_and(|h| *h != ']') {
            let high = glob[i + 2];
            hit |= low <= c && c <= high;
            i += 3;
        } else {
            hit |= low == c;
            i += 1;
        }
    }
    if i >= glob.len() {
        return (c == '[').then_some(at + 1);
    }
    (hit != negated).then_some(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_patterns() {
        assert!(could_match("c[u]rl", "curl"));
        assert!(could_match("cur?", "curl"));
        assert!(could_match("c*", "curl"));
        assert!(could_match("*", "rm"));
        assert!(could_match("??", "rm"));
        assert!(could_match("cu[!x]l", "curl"));
        assert!(could_match("[a-z]url", "curl"));
        assert!(could_match("{a,b}", "rm"));
        assert!(!could_match("l?", "rm"));
        assert!(!could_match("c[!u]rl", "curl"));
        assert!(!could_match("g?t", "curl"));
        assert!(could_match("\\*", "*"));
        assert!(!could_match("\\*", "rm"));
    }
}
