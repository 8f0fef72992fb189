//! awk programs, read token by token as awk reads them ([`lex`]). The inert subset: no
//! `system`, no `getline`, no pipe (`|`, `|&`), no output redirection (`>` or `>>` in a
//! `print` or `printf`, or anywhere in an action outside parentheses), no gawk `@` (indirect
//! calls, `@include`, `@load`), and no `ENVIRON`, `PROCINFO`, `SYMTAB` or `FUNCTAB`. Text
//! inside strings, regular expressions and comments is never read as code, and a program the
//! lexer cannot read with certainty is refused, so a misreading can only refuse, never vouch.
//!
//! A program that runs commands is unreadable (every deny rule on commands applies); the
//! commands whose text is one plain string (`system("cmd")`, `print | "cmd"`, `"cmd" |
//! getline`) are extracted as well, so deny rules read them.

mod lex;

use super::Program;
use lex::{Tok, Unread};

/// Names that read other files or the environment, or reach variables and functions by name.
const OUTSIDE: &[&str] = &["getline", "ENVIRON", "PROCINFO", "SYMTAB", "FUNCTAB"];

/// Reads an awk program.
pub(crate) fn awk(program: &str) -> Program {
    let mut out = Program::default();
    match lex::lex(program) {
        Ok(tokens) => check(&tokens, &mut out),
        Err(Unread(why)) => {
            out.hazards
                .push(format!("the awk program cannot be read: {why}"));
            if could_run(program) {
                out.unreadable = true;
            }
        }
    }
    out
}

/// Whether a program could run a command however it is read: only `system`, a pipe and
/// gawk's `@` (an indirect call) can.
fn could_run(program: &str) -> bool {
    let joined = program.replace("\\\n", "");
    joined.contains("system") || joined.contains('|') || joined.contains('@')
}

/// Finds the hazards among `tokens`.
fn check(tokens: &[Tok], out: &mut Program) {
    let mut braces = 0usize;
    // For each open `(` or `[` (and the level outside them), whether a `print` or `printf`
    // statement is open at that level: a `>` there redirects its output.
    let mut printing: Vec<bool> = vec![false];
    for (i, tok) in tokens.iter().enumerate() {
        match tok {
            Tok::Name(name) if name == "system" => {
                out.hazards
                    .push("the awk program runs a command (`system`)".into());
                let command = match (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3)) {
                    (Some(Tok::Punct("(")), Some(s), Some(Tok::Punct(")"))) => plain(s),
                    _ => None,
                };
                runs(command, out);
            }
            Tok::Name(name) if OUTSIDE.contains(&name.as_str()) => {
                out.hazards.push(format!("the awk program uses `{name}`"));
            }
            Tok::Name(name) if name == "print" || name == "printf" => {
                if let Some(level) = printing.last_mut() {
                    *level = true;
                }
            }
            Tok::Punct(pipe @ ("|" | "|&")) => {
                out.hazards.push(format!(
                    "the awk program pipes to or from a command (`{pipe}`)"
                ));
                runs(piped(tokens, i), out);
            }
            Tok::Punct("@") => {
                out.hazards.push(
                    "the awk program uses gawk's `@` (indirect calls, `@include`, `@load`)".into(),
                );
                out.unreadable = true;
            }
            Tok::Punct(redirect @ (">" | ">>")) => {
                let in_print = printing.last().copied().unwrap_or(false);
                if in_print || (braces > 0 && printing.len() == 1) {
                    out.hazards.push(format!(
                        "the awk program may write a file (`{redirect}` in an action)"
                    ));
                }
            }
            Tok::Punct("(" | "[") => printing.push(false),
            Tok::Punct(")" | "]") if printing.len() > 1 => {
                printing.pop();
            }
            Tok::Punct(end @ ("{" | "}" | ";")) => {
                match *end {
                    "{" => braces += 1,
                    "}" => braces = braces.saturating_sub(1),
                    _ => {}
                }
                if let Some(level) = printing.last_mut() {
                    *level = false;
                }
            }
            _ => {}
        }
    }
}

/// The text of a plain string token: one whose meaning every awk agrees on (no `\`).
fn plain(tok: &Tok) -> Option<String> {
    match tok {
        Tok::Str {
            text,
            escaped: false,
        } => Some(text.clone()),
        _ => None,
    }
}

/// Records a command the program runs: its text, when known, for deny rules to read. The
/// program stays unreadable either way (an awk program builds and runs commands at run time,
/// as the earlier suites expect: every deny rule on commands applies).
fn runs(command: Option<String>, out: &mut Program) {
    out.unreadable = true;
    out.runs.extend(command);
}

/// The command of the pipe at `at`: `"cmd" | getline` (one string, at the start of an
/// expression), or `print … | "cmd"` (one string ending the statement).
fn piped(tokens: &[Tok], at: usize) -> Option<String> {
    if matches!(tokens.get(at + 1), Some(Tok::Name(n)) if n == "getline") {
        let before = at.checked_sub(1)?;
        let starts = match before.checked_sub(1) {
            None => true,
            Some(b) => matches!(tokens[b], Tok::Newline | Tok::Punct("{" | "}" | ";" | "(")),
        };
        return if starts { plain(&tokens[before]) } else { None };
    }
    let ends = matches!(
        tokens.get(at + 2),
        None | Some(Tok::Newline | Tok::Punct(";" | "}"))
    );
    if ends {
        plain(tokens.get(at + 1)?)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reading_programs_are_inert() {
        for program in [
            "NR>1",
            "{print $1}",
            "$3 > 100 {print $2}",
            "{ if ($3 > 100) print $2 }",
            "/a|b/ {n++} END {print n}",
            "{ x = a / b / c; print x }",
            "BEGIN { FS = \",\" } { s += $2 } END { printf \"%d\\n\", s }",
            "length($0) >= 80",
            "{ print (a > b) }",
            "$1 == \"x|y\" || $2 ~ /z/",
        ] {
            assert_eq!(awk(program), Program::default(), "{program}");
        }
    }

    #[test]
    fn commands_pipes_and_writes_are_not() {
        for program in [
            "BEGIN{system(\"id\")}",
            "{print | \"sh\"}",
            "BEGIN{\"id\" | getline x}",
            "{print > \"out\"}",
            "{print $1 >> \"out\"}",
            "{printf(\"%s\", $0) > \"f\"}",
            "BEGIN{f = \"sys\" \"tem\"; @f(\"id\")}",
            "BEGIN{print ENVIRON[\"HOME\"]}",
            "BEGIN{getline line < \"/etc/passwd\"}",
            "{print |& \"cat\"}",
            "BEGIN { x = 1 / system(\"id\") / 2 }",
        ] {
            assert!(!awk(program).hazards.is_empty(), "{program}");
        }
    }
    #[test]
    fn text_inside_regexes_and_strings_hides_nothing() {
        for program in [
            "{print /#/; system(\"touch CANARY\")}",
            "/#/ { system(\"touch CANARY\") }",
            "{print /(/ > \"CANARY\"}",
            "{print /}/ > \"CANARY\"}",
            "{ print $/#/; system(\"touch CANARY\") }",
            "{ if (1) /#/; system(\"touch CANARY\") }",
            "{ print \"#\" > \"CANARY\" }",
            "{ print \\\n/#/; system(\"touch CANARY\") }",
        ] {
            assert!(!awk(program).hazards.is_empty(), "{program}");
        }
    }

    #[test]
    fn commands_are_extracted_for_deny_rules() {
        let read = awk("{print /#/; system(\"touch CANARY\")}");
        assert_eq!(read.runs, ["touch CANARY"]);
        let read = awk("{ print | \"sort -r\" } END { while ((\"rm -f x\" | getline l) > 0) n++ }");
        assert_eq!(read.runs, ["sort -r", "rm -f x"]);
        assert!(awk("{print /#/; system(\"touch CANARY\")}").unreadable);
        for program in [
            "BEGIN { system(c) }",
            "BEGIN { system(\"a\" \"b\") }",
            "BEGIN { system(\"r\\m x\") }",
            "{ print | c }",
            "BEGIN { \"a\" \"b\" | getline }",
            "BEGIN { print length /2/; system(\"x\") }",
        ] {
            let read = awk(program);
            assert!(read.unreadable && read.runs.is_empty(), "{program}");
        }
    }

    #[test]
    fn redirection_inside_a_for_header_is_seen() {
        assert!(!awk("{ for (print > \"CANARY\"; 0;) ; }").hazards.is_empty());
        assert!(awk("{ for (i = 0; i > 3;) i++ }").hazards.is_empty());
    }
}
