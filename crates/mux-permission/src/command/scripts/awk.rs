//! awk programs, tokenized as awk reads them. The inert subset: no `system`, no `getline`, no
//! pipe (`|`, `|&`), no output redirection (`>` or `>>` outside parentheses inside an action),
//! no gawk `@` (indirect calls, `@include`, `@load`), and no `ENVIRON`, `PROCINFO`, `SYMTAB`
//! or `FUNCTAB`. Regular expressions and strings are skipped only where awk's grammar makes
//! them certain, so a misreading can only refuse, never vouch.

use super::Program;

/// Names that run commands.
const RUNS: &[&str] = &["system"];

/// Names that read other files or the environment, or reach variables and functions by name.
const OUTSIDE: &[&str] = &["getline", "ENVIRON", "PROCINFO", "SYMTAB", "FUNCTAB"];

/// Reads an awk program.
pub(crate) fn awk(program: &str) -> Program {
    let mut out = Program::default();
    let chars: Vec<char> = program.chars().collect();
    let mut i = 0;
    // Whether the previous token ends an operand, so `/` divides instead of opening a regex.
    let mut after_operand = false;
    let mut braces = 0usize;
    let mut parens = 0usize;
    let runs = |why: &str, out: &mut Program| {
        out.hazards.push(format!("the awk program {why}"));
        out.unreadable = true;
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            '#' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
                continue;
            }
            '"' => {
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= chars.len() {
                    out.hazards
                        .push("the awk program has an unclosed string".into());
                    return out;
                }
                i += 1;
                after_operand = true;
                continue;
            }
            '/' if !after_operand => {
                i += 1;
                let mut bracket = false;
                while i < chars.len() && (bracket || chars[i] != '/') {
                    match chars[i] {
                        '\\' => i += 1,
                        '[' => bracket = true,
                        ']' => bracket = false,
                        '\n' => break,
                        _ => {}
                    }
                    i += 1;
                }
                if chars.get(i) != Some(&'/') {
                    out.hazards.push(
                        "the awk program has a regular expression the checker cannot read".into(),
                    );
                    return out;
                }
                i += 1;
                after_operand = true;
                continue;
            }
            '|' => {
                if chars.get(i + 1) == Some(&'|') {
                    i += 2;
                    after_operand = false;
                    continue;
                }
                runs("pipes to or from a command (`|`)", &mut out);
                return out;
            }
            '@' => {
                runs(
                    "uses gawk's `@` (indirect calls, `@include`, `@load`)",
                    &mut out,
                );
                return out;
            }
            '>' => {
                let comparison = chars.get(i + 1) == Some(&'=');
                if braces > 0 && parens == 0 && !comparison {
                    out.hazards
                        .push("the awk program may write a file (`>` in an action)".into());
                    return out;
                }
                i += if comparison { 2 } else { 1 };
                after_operand = false;
                continue;
            }
            '{' => braces += 1,
            '}' => braces = braces.saturating_sub(1),
            '(' | '[' => parens += 1,
            ')' | ']' => parens = parens.saturating_sub(1),
            _ => {}
        }
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if RUNS.contains(&word.as_str()) {
                runs(&format!("uses `{word}`"), &mut out);
                return out;
            }
            if OUTSIDE.contains(&word.as_str()) {
                out.hazards.push(format!("the awk program uses `{word}`"));
                return out;
            }
            after_operand = true;
            continue;
        }
        if !c.is_whitespace() {
            after_operand = matches!(c, ')' | ']' | '$');
        }
        i += 1;
    }
    out
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
}
