//! jq's lexer, as jq 1.6 reads a program (`src/lexer.l`), made to refuse what jq 1.7 reads
//! differently: comments run from `#` to the end of the line (jq 1.7.1 continues one past a
//! `\` before the newline, so such a comment is refused), strings hold `\(…)`
//! interpolations whose code is lexed like the rest, `.name` is a field, and `$` is a token
//! of its own (jq 1.6 reads `$ ENV`, with blanks or comments between, as `$ENV`).

/// One jq token. The code inside string interpolations is among the tokens, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A name (`env`, `import`, `map`, `mod::f`) or a keyword.
    Ident(String),
    /// `$`, which names a variable with the identifier after it.
    Dollar,
    /// `.name`: a field, not a name.
    Field,
    /// Any other token.
    Other,
}

/// Why a program could not be read with certainty.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Unread(pub(crate) String);

/// Characters that make up jq's operators and punctuation.
const PUNCT: &str = ".?=;,:|+-*/%<>[]{}()!";

/// Reads `program` into tokens.
pub(crate) fn lex(program: &str) -> Result<Vec<Tok>, Unread> {
    let chars: Vec<char> = program.chars().collect();
    let mut out = Vec::new();
    let end = code(&chars, 0, false, &mut out)?;
    debug_assert_eq!(end, chars.len());
    Ok(out)
}

/// Lexes code from `i`; inside an interpolation (`interp`), up to and past the `)` that
/// closes it. The index after what was read.
fn code(chars: &[char], mut i: usize, interp: bool, out: &mut Vec<Tok>) -> Result<usize, Unread> {
    let mut depth = 0usize;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' => i += 1,
            '#' => i = comment(chars, i)?,
            '"' => i = string(chars, i + 1, out)?,
            '$' => {
                out.push(Tok::Dollar);
                i += 1;
            }
            '@' => {
                i += 1;
                while chars
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    i += 1;
                }
                out.push(Tok::Other);
            }
            '.' if chars
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_') =>
            {
                i += 1;
                while chars
                    .get(i)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
                {
                    i += 1;
                }
                out.push(Tok::Field);
            }
            d if d.is_ascii_digit() || d == '.' => {
                i = number(chars, i);
                out.push(Tok::Other);
            }
            a if a.is_ascii_alphabetic() || a == '_' => {
                let start = i;
                i = ident(chars, i);
                out.push(Tok::Ident(chars[start..i].iter().collect()));
            }
            '(' => {
                depth += 1;
                i += 1;
                out.push(Tok::Other);
            }
            ')' if interp && depth == 0 => return Ok(i + 1),
            ')' => {
                depth = depth.saturating_sub(1);
                i += 1;
                out.push(Tok::Other);
            }
            p if PUNCT.contains(p) => {
                i += 1;
                out.push(Tok::Other);
            }
            other => {
                return Err(Unread(format!(
                    "the character {other:?} is not part of a jq program the checker can read"
                )));
            }
        }
    }
    if interp {
        return Err(Unread("the jq program has an unclosed string".into()));
    }
    Ok(i)
}

/// A comment from its `#` at `start`: the index of the newline that ends it.
fn comment(chars: &[char], start: usize) -> Result<usize, Unread> {
    let mut i = start;
    while i < chars.len() && chars[i] != '\n' {
        if chars[i] == '\r' {
            return Err(Unread(
                "a carriage return in a jq comment: jq versions end the comment differently".into(),
            ));
        }
        i += 1;
    }
    if i < chars.len() && chars[i - 1] == '\\' {
        return Err(Unread(
            "a jq comment ends in `\\`: jq 1.7 continues it on the next line, jq 1.6 does not"
                .into(),
        ));
    }
    Ok(i)
}

/// A string from just after its opening quote: the index after its closing quote. The code of
/// each `\(…)` goes into `out`.
fn string(chars: &[char], mut i: usize, out: &mut Vec<Tok>) -> Result<usize, Unread> {
    out.push(Tok::Other);
    loop {
        match chars.get(i) {
            None => return Err(Unread("the jq program has an unclosed string".into())),
            Some('"') => return Ok(i + 1),
            Some('\\') => match chars.get(i + 1) {
                Some('(') => i = code(chars, i + 2, true, out)?,
                Some(_) => i += 2,
                None => return Err(Unread("the jq program has an unclosed string".into())),
            },
            Some(_) => i += 1,
        }
    }
}

/// An identifier, with module qualifiers (`a::b::c`): the index after it.
fn ident(chars: &[char], start: usize) -> usize {
    let word = |mut i: usize| {
        while chars
            .get(i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
        {
            i += 1;
        }
        i
    };
    let mut i = word(start);
    while chars.get(i) == Some(&':')
        && chars.get(i + 1) == Some(&':')
        && chars
            .get(i + 2)
            .is_some_and(|c| c.is_ascii_alphabetic() || *c == '_')
    {
        i = word(i + 2);
    }
    i
}

/// A number (`[0-9.]+([eE][+-]?[0-9]+)?`, jq's rule): the index after it.
fn number(chars: &[char], start: usize) -> usize {
    let mut i = start;
    while chars
        .get(i)
        .is_some_and(|c| c.is_ascii_digit() || *c == '.')
    {
        i += 1;
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            while chars.get(j).is_some_and(char::is_ascii_digit) {
                j += 1;
            }
            i = j;
        }
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idents(program: &str) -> Vec<String> {
        lex(program)
            .unwrap()
            .into_iter()
            .filter_map(|t| match t {
                Tok::Ident(name) => Some(name),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn interpolations_are_code_and_the_rest_of_a_string_is_not() {
        assert_eq!(
            idents("\"env \\(env.X) \\(\"\\(ENV)\") #\" | x"),
            ["env", "ENV", "x"]
        );
        assert_eq!(idents(".env | .a.b"), Vec::<String>::new());
        assert_eq!(idents("1env"), ["env"]);
        assert_eq!(idents("a::b # env\n| c"), ["a::b", "c"]);
    }

    #[test]
    fn disagreements_are_refused() {
        for program in ["# x \\\nenv", "# x\r\n.", "\"abc", "\"\\(1\"", ". \\ ."] {
            assert!(lex(program).is_err(), "{program:?}");
        }
    }
}
