//! awk's lexer, as mawk and gawk read a program: strings, regular expressions, comments, line
//! continuations, names, numbers and operators.
//!
//! A `/` opens a regular expression wherever the previous token cannot end an operand (the
//! POSIX grammar's rule, which mawk applies to the previous token and gawk to its parser
//! state), and divides after one. Where the awks read a spelling differently (`/` after
//! `++`, `--`, `length`, `getline` or a name only gawk reserves; a `/` inside a bracket
//! expression, which POSIX awk and busybox end the regular expression at; a number running
//! into letters, `0x1system`), or where the text is not awk at all, lexing stops with an
//! [`Unread`] instead of guessing.

/// One awk token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A name: a keyword, a built-in function or a variable.
    Name(String),
    /// A numeric constant.
    Number,
    /// A string constant: its text between the quotes, and whether it holds a `\` (whose
    /// meaning differs between awks).
    Str { text: String, escaped: bool },
    /// A regular expression constant.
    Regex,
    /// An operator or punctuation, as spelled.
    Punct(&'static str),
    /// A newline (a statement terminator, or skipped after `,`, `{`, `&&`, …).
    Newline,
}

/// Why a program could not be read with certainty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unread(pub(crate) String);

/// Operators, longest first so the longest spelling wins.
const PUNCT: &[&str] = &[
    "**=", "&&", "||", "|&", ">>", "++", "--", "+=", "-=", "*=", "/=", "%=", "^=", "==", "<=",
    ">=", "!=", "!~", "**", "{", "}", "(", ")", "[", "]", ";", ",", "+", "-", "*", "/", "%", "^",
    "!", ">", "<", "|", "?", ":", "~", "$", "=", "@",
];

/// Keywords after which an expression starts, so a `/` opens a regular expression.
const BEFORE_OPERAND: &[&str] = &[
    "BEGIN", "END", "function", "if", "else", "while", "for", "do", "break", "continue", "next",
    "nextfile", "exit", "return", "delete", "in", "print", "printf",
];

/// Names after which the awks disagree on `/`: mawk opens a regular expression after
/// `length` and after built-ins, gawk divides; gawk reserves names that mawk and POSIX awk
/// read as variables; mawk and gawk divide after `getline` but the grammar could go either
/// way.
const AMBIGUOUS: &[&str] = &[
    "length",
    "getline",
    "substr",
    "index",
    "split",
    "sub",
    "gsub",
    "match",
    "sprintf",
    "sin",
    "cos",
    "atan2",
    "exp",
    "log",
    "sqrt",
    "int",
    "rand",
    "srand",
    "tolower",
    "toupper",
    "system",
    "close",
    "fflush",
    "func",
    "switch",
    "case",
    "default",
    "BEGINFILE",
    "ENDFILE",
    "and",
    "or",
    "xor",
    "lshift",
    "rshift",
    "compl",
    "strftime",
    "systime",
    "mktime",
    "gensub",
    "patsplit",
    "asort",
    "asorti",
    "isarray",
    "typeof",
    "strtonum",
    "bindtextdomain",
    "dcgettext",
    "dcngettext",
];

/// Keywords whose parenthesized header is followed by a statement, so a `/` after its `)`
/// opens a regular expression (gawk; mawk rejects the program).
const HEADERS: &[&str] = &["if", "while", "for", "switch"];

/// What the previous token lets a `/` be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slash {
    Regex,
    Divide,
    Ambiguous,
}

/// Reads `program` into tokens.
pub(crate) fn lex(program: &str) -> Result<Vec<Tok>, Unread> {
    let chars: Vec<char> = program.chars().collect();
    let mut out: Vec<Tok> = Vec::new();
    // For each open `(`, whether it opened a statement header (`if (…)`).
    let mut parens: Vec<bool> = Vec::new();
    // The previous token closed a statement header.
    let mut after_header = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' => {
                i += 1;
                continue;
            }
            '\\' if chars.get(i + 1) == Some(&'\n') => {
                i += 2;
                continue;
            }
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            _ => {}
        }
        let slash = slash_after(out.last(), after_header);
        after_header = false;
        match c {
            '\n' => {
                out.push(Tok::Newline);
                i += 1;
            }
            '"' => {
                let (tok, end) = string(&chars, i)?;
                out.push(tok);
                i = end;
            }
            '/' if slash == Slash::Ambiguous => {
                return Err(Unread(format!(
                    "awks disagree whether the `/` after `{}` divides or opens a regular expression",
                    describe(out.last())
                )));
            }
            '/' if slash == Slash::Regex => {
                i = regex(&chars, i)?;
                out.push(Tok::Regex);
            }
            d if d.is_ascii_digit() || (d == '.' && next_is_digit(&chars, i)) => {
                i = number(&chars, i)?;
                out.push(Tok::Number);
            }
            a if a.is_ascii_alphabetic() || a == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                out.push(Tok::Name(chars[start..i].iter().collect()));
            }
            _ => {
                let Some(punct) = PUNCT.iter().find(|p| starts_with(&chars, i, p)) else {
                    return Err(Unread(format!(
                        "the character {c:?} is not part of an awk program the checker can read"
                    )));
                };
                match *punct {
                    "(" => parens.push(matches!(
                        out.last(),
                        Some(Tok::Name(n)) if HEADERS.contains(&n.as_str())
                    )),
                    ")" => after_header = parens.pop().unwrap_or(false),
                    _ => {}
                }
                i += punct.chars().count();
                out.push(Tok::Punct(punct));
            }
        }
    }
    Ok(out)
}

/// What a `/` after `prev` is.
fn slash_after(prev: Option<&Tok>, after_header: bool) -> Slash {
    match prev {
        None | Some(Tok::Newline) => Slash::Regex,
        Some(Tok::Number | Tok::Str { .. } | Tok::Regex) => Slash::Divide,
        Some(Tok::Name(name)) if BEFORE_OPERAND.contains(&name.as_str()) => Slash::Regex,
        Some(Tok::Name(name)) if AMBIGUOUS.contains(&name.as_str()) => Slash::Ambiguous,
        Some(Tok::Name(_)) => Slash::Divide,
        Some(Tok::Punct(")")) if after_header => Slash::Regex,
        Some(Tok::Punct(")" | "]")) => Slash::Divide,
        Some(Tok::Punct("++" | "--")) => Slash::Ambiguous,
        Some(Tok::Punct(_)) => Slash::Regex,
    }
}

/// The previous token, for a message.
fn describe(prev: Option<&Tok>) -> String {
    match prev {
        Some(Tok::Name(name)) => name.clone(),
        Some(Tok::Punct(p)) => (*p).to_owned(),
        _ => "the previous token".to_owned(),
    }
}

fn starts_with(chars: &[char], at: usize, text: &str) -> bool {
    (at..)
        .zip(text.chars())
        .all(|(i, c)| chars.get(i) == Some(&c))
}

fn next_is_digit(chars: &[char], i: usize) -> bool {
    chars.get(i + 1).is_some_and(char::is_ascii_digit)
}

/// A string from its opening quote at `start`: the token and the index after it. A `\`
/// keeps the next character (a newline included) inside the string.
fn string(chars: &[char], start: usize) -> Result<(Tok, usize), Unread> {
    let mut i = start + 1;
    let mut text = String::new();
    let mut escaped = false;
    loop {
        match chars.get(i) {
            None | Some('\n') => {
                return Err(Unread("the awk program has an unclosed string".into()));
            }
            Some('"') => return Ok((Tok::Str { text, escaped }, i + 1)),
            Some('\\') => {
                escaped = true;
                let Some(&next) = chars.get(i + 1) else {
                    return Err(Unread("the awk program has an unclosed string".into()));
                };
                text.push('\\');
                text.push(next);
                i += 2;
            }
            Some(&c) => {
                text.push(c);
                i += 1;
            }
        }
    }
}

/// A regular expression from its opening `/` at `start`: the index after its closing `/`.
/// mawk and gawk skip a `/` inside a bracket expression, POSIX awk and busybox end the
/// expression there, so a `/` that any of them could see inside brackets is refused.
fn regex(chars: &[char], start: usize) -> Result<usize, Unread> {
    let unclosed = || Unread("the awk program has an unclosed regular expression".into());
    let mut i = start + 1;
    // Inside a bracket expression: the index just after its `[` (and `^`).
    let mut bracket: Option<usize> = None;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(unclosed());
        };
        match c {
            '\n' => return Err(unclosed()),
            '\\' => {
                if chars.get(i + 1).is_none() {
                    return Err(unclosed());
                }
                i += 2;
                continue;
            }
            '/' if bracket.is_some() => {
                return Err(Unread(
                    "a `/` inside a bracket expression: awks disagree where the regular expression ends"
                        .into(),
                ));
            }
            '/' => return Ok(i + 1),
            '[' if bracket.is_none() => {
                let mut first = i + 1;
                if chars.get(first) == Some(&'^') {
                    first += 1;
                }
                bracket = Some(first);
                i = first;
                continue;
            }
            '[' if matches!(chars.get(i + 1), Some(':' | '.' | '=')) => {
                // A class, collating symbol or equivalence class, closed by `:]`, `.]`, `=]`.
                let kind = chars[i + 1];
                let mut j = i + 2;
                loop {
                    match chars.get(j) {
                        None | Some('\n') => return Err(unclosed()),
                        Some('/') => {
                            return Err(Unread(
                                "a `/` inside a bracket expression: awks disagree where the regular expression ends"
                                    .into(),
                            ));
                        }
                        Some(&k) if k == kind && chars.get(j + 1) == Some(&']') => break,
                        _ => j += 1,
                    }
                }
                i = j + 2;
                continue;
            }
            ']' if bracket.is_some_and(|first| first != i) => bracket = None,
            _ => {}
        }
        i += 1;
    }
}

/// A number from `start`: the index after it. Letters or digits running on from it are read
/// differently by the awks (gawk reads `0x1f` as hex, mawk as `0` and a name), so refused.
fn number(chars: &[char], start: usize) -> Result<usize, Unread> {
    let mut i = start;
    let digits = |i: &mut usize| {
        while chars.get(*i).is_some_and(char::is_ascii_digit) {
            *i += 1;
        }
    };
    digits(&mut i);
    if chars.get(i) == Some(&'.') {
        i += 1;
        digits(&mut i);
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            i = j;
            digits(&mut i);
        }
    }
    if chars
        .get(i)
        .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '.')
    {
        return Err(Unread(
            "a number runs into letters: awks read it differently".into(),
        ));
    }
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(program: &str) -> Vec<Tok> {
        lex(program).unwrap_or_else(|e| panic!("{program}: {e:?}"))
    }

    #[test]
    fn slash_after_print_and_at_line_start_opens_a_regex() {
        assert_eq!(
            kinds("{print /#/; x}"),
            [
                Tok::Punct("{"),
                Tok::Name("print".into()),
                Tok::Regex,
                Tok::Punct(";"),
                Tok::Name("x".into()),
                Tok::Punct("}"),
            ]
        );
        assert_eq!(kinds("x\n/a(}/")[2], Tok::Regex);
        assert_eq!(kinds("f(/)/, /,/)").len(), 6);
    }

    #[test]
    fn slash_after_an_operand_divides() {
        for program in [
            "x /2/ 1",
            "(1) /2/ 1",
            "a[1] /2/ 1",
            "\"s\" /2/ 1",
            "$1 /2/ 1",
        ] {
            assert!(
                kinds(program).contains(&Tok::Punct("/")),
                "{program}: {:?}",
                kinds(program)
            );
        }
    }

    #[test]
    fn slash_after_a_statement_header_opens_a_regex() {
        assert!(kinds("{ if (x) /#/ }").contains(&Tok::Regex));
        assert!(!kinds("{ if ((x) /2/ 1) y }").contains(&Tok::Regex));
    }

    #[test]
    fn disagreements_are_refused() {
        for program in [
            "{ print length /2/ 1 }",
            "{ x++ /2/ 1 }",
            "{ getline /2/ 1 }",
            "{ print /a[/]b/ }",
            "{ print /[[:alpha:]/]/ }",
            "{ print 0x1substr(\"ab\", 1) }",
            "{ print \"a }",
            "{ print /a }",
            "{ print \x0c 1 }",
            "{ print \\ 1 }",
        ] {
            assert!(lex(program).is_err(), "{program}");
        }
    }

    #[test]
    fn continuations_and_comments() {
        assert_eq!(kinds("x \\\n/2/ 1")[1], Tok::Punct("/"));
        assert_eq!(kinds("x # c \\\ny"), kinds("x\ny"));
        assert_eq!(kinds("{print \"a#b\"}").len(), 4);
    }
}
