//! jq programs, read token by token as jq reads them ([`lex`]). jq cannot run commands or
//! write files; what it can do beyond its input is read the environment (`env`, `$ENV`, also
//! spelled `$ ENV` with blanks or comments between) and load modules (`import`, `include`,
//! from search paths the caller does not see). Those are refused wherever they appear as
//! code, string interpolations (`"\(env.X)"`) included; text inside strings and comments is
//! not code. A program the lexer cannot read with certainty is refused.

mod lex;

use super::Program;
use lex::{Tok, Unread};

/// Names outside the inert subset.
const FORBIDDEN: &[&str] = &[
    "env",
    "import",
    "include",
    "modulemeta",
    "get_search_list",
    "get_prog_origin",
    "get_jq_origin",
];

/// Variables outside the inert subset (after `$`).
const FORBIDDEN_VARIABLES: &[&str] = &["ENV", "__prog_args"];

/// Reads a jq program.
pub(crate) fn jq(program: &str) -> Program {
    let mut out = Program::default();
    let tokens = match lex::lex(program) {
        Ok(tokens) => tokens,
        Err(Unread(why)) => {
            out.hazards
                .push(format!("the jq program cannot be read: {why}"));
            return out;
        }
    };
    let mut previous: Option<&Tok> = None;
    for tok in &tokens {
        let Tok::Ident(name) = tok else {
            previous = Some(tok);
            continue;
        };
        let forbidden = if previous == Some(&Tok::Dollar) {
            FORBIDDEN_VARIABLES
                .contains(&name.as_str())
                .then(|| format!("${name}"))
        } else {
            FORBIDDEN.contains(&name.as_str()).then(|| name.clone())
        };
        if let Some(word) = forbidden {
            out.hazards.push(format!(
                "the jq program uses `{word}` (the environment or modules)"
            ));
        }
        previous = Some(tok);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inert_and_not() {
        for program in [
            ".",
            ".a.b",
            "map(select(.x > 1)) | length",
            "[.[] | {n: .name}]",
            ".env",
            "\"env $ENV\"",
            "# env $ENV\n.",
            "$__loc__",
            ". as $env | $env",
        ] {
            assert_eq!(jq(program), Program::default(), "{program}");
        }
        for program in [
            "env.HOME",
            "$ENV.PATH",
            "\"\\(env.SECRET)\"",
            "import \"x\" as x; .",
            "$ ENV",
            "$\tENV.HOME",
            "$ # c\nENV",
            "$\n__prog_args",
            "\"\\(\"\\($ENV)\")\"",
            "{$ENV}",
            ". as $x | env",
        ] {
            assert!(!jq(program).hazards.is_empty(), "{program}");
        }
    }
}
