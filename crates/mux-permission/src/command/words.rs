//! Turning shell word syntax into the words a command receives.

/// Removes the backslashes of an unquoted word: `\x` becomes `x` and a backslash-newline
/// disappears, as bash does.
pub(crate) fn unescape_bare(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('\n') | None => {}
                Some(next) => out.push(next),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Removes the backslashes bash removes inside double quotes: before `$`, `` ` ``, `"`, `\`
/// and newline.
pub(crate) fn unescape_double_quoted(inner: &str) -> String {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&next @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    out.push(next);
                }
                _ => out.push(c),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Decodes the body of an ANSI-C quoted string (`$'…'`). `None` when it uses an escape this
/// decoder does not know, so the caller treats the word as unknown.
pub(crate) fn decode_ansi_c(inner: &str) -> Option<String> {
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let escaped = chars.next()?;
        let decoded = match escaped {
            'n' => '\n',
            't' => '\t',
            'r' => '\r',
            'a' => '\u{7}',
            'b' => '\u{8}',
            'e' | 'E' => '\u{1b}',
            'f' => '\u{c}',
            'v' => '\u{b}',
            '\\' | '\'' | '"' | '?' => escaped,
            'x' => char::from_u32(take_radix(&mut chars, 16, 2)?)?,
            'u' => char::from_u32(take_radix(&mut chars, 16, 4)?)?,
            'U' => char::from_u32(take_radix(&mut chars, 16, 8)?)?,
            '0'..='7' => {
                let mut value = escaped.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|d| d.to_digit(8)) {
                        Some(d) => {
                            value = value * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                char::from_u32(value)?
            }
            _ => return None,
        };
        out.push(decoded);
    }
    Some(out)
}

fn take_radix(
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    radix: u32,
    max: usize,
) -> Option<u32> {
    let mut value = 0u32;
    let mut taken = 0;
    while taken < max {
        match chars.peek().and_then(|d| d.to_digit(radix)) {
            Some(d) => {
                value = value.checked_mul(radix)?.checked_add(d)?;
                chars.next();
                taken += 1;
            }
            None => break,
        }
    }
    (taken > 0).then_some(value)
}

/// Whether an unquoted word contains a pattern bash expands: `*`, `?`, a bracket expression
/// `[…]`, or a brace expansion `{a,b}` / `{1..3}`.
pub(crate) fn has_expansion_chars(raw: &str) -> bool {
    if raw.contains(['*', '?']) {
        return true;
    }
    let closed_after = |open: char, close: char, needs: Option<&[&str]>| {
        raw.match_indices(open).any(|(at, _)| {
            let rest = &raw[at + 1..];
            rest.find(close).is_some_and(|end| {
                needs.is_none_or(|marks| marks.iter().any(|m| rest[..end].contains(m)))
            })
        })
    };
    closed_after('[', ']', None) || closed_after('{', '}', Some(&[",", ".."]))
}

/// Whether the text holds characters that can disguise what a reader sees: control
/// characters other than tab and newline, zero-width and bidirectional formatting characters.
pub(crate) fn has_deceptive_chars(text: &str) -> bool {
    text.chars().any(|c| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c,
                '\u{200B}'..='\u{200F}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2060}'..='\u{2064}'
                | '\u{2066}'..='\u{2069}'
                | '\u{FEFF}'
                | '\u{00AD}')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_words_lose_backslashes() {
        assert_eq!(unescape_bare(r"\rm"), "rm");
        assert_eq!(unescape_bare("r\\\nm"), "rm");
        assert_eq!(unescape_bare(r"a\\b"), r"a\b");
    }

    #[test]
    fn double_quotes_keep_other_backslashes() {
        assert_eq!(unescape_double_quoted(r#"a\"b\n"#), r#"a"b\n"#);
        assert_eq!(unescape_double_quoted(r"\$HOME"), "$HOME");
    }

    #[test]
    fn ansi_c_decodes_hex_and_octal() {
        assert_eq!(decode_ansi_c(r"\x72m").as_deref(), Some("rm"));
        assert_eq!(decode_ansi_c(r"\162m").as_deref(), Some("rm"));
        assert_eq!(decode_ansi_c(r"\u0072m").as_deref(), Some("rm"));
        assert_eq!(decode_ansi_c(r"\q"), None);
    }

    #[test]
    fn expansion_patterns() {
        for word in ["*.rs", "a?", "[ab].txt", "{a,b}", "x{1..3}"] {
            assert!(has_expansion_chars(word), "{word}");
        }
        for word in ["{}", "HEAD@{1}", "[", "--format={h}", "a]b"] {
            assert!(!has_expansion_chars(word), "{word}");
        }
    }

    #[test]
    fn deceptive_characters_are_spotted() {
        assert!(has_deceptive_chars("git\u{200B} status"));
        assert!(has_deceptive_chars("ls \u{202E}txt.exe"));
        assert!(!has_deceptive_chars("ls -la\n"));
    }
}
