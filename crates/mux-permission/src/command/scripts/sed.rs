//! GNU sed scripts, read with GNU sed's grammar: labels end at whitespace or `;` (so `:a e
//! CMD` is the label `a`, then the command `e`), `v` takes an optional version and is followed
//! by another command, and `e`, `s///e`, `w`, `W`, `r`, `R` and `s///w` run or touch files.

use super::Program;

/// Reads a sed script. Only the commands GNU sed documents as not running code, reading or
/// writing files are vouched for; anything else is a hazard.
pub(crate) fn sed(script: &str) -> Program {
    let mut out = Program::default();
    let chars: Vec<char> = script.chars().collect();
    let mut i = 0;
    let rest_of_line = |i: &mut usize| -> String {
        let start = *i;
        while *i < chars.len() && chars[*i] != '\n' {
            *i += 1;
        }
        chars[start..*i]
            .iter()
            .collect::<String>()
            .trim()
            .to_owned()
    };
    while i < chars.len() {
        while i < chars.len() && (chars[i].is_whitespace() || chars[i] == ';') {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        if !address(&chars, &mut i) {
            out.hazards
                .push("a sed address the checker cannot read".into());
            return out;
        }
        while i < chars.len() && (chars[i] == ' ' || chars[i] == '!') {
            i += 1;
        }
        let Some(&command) = chars.get(i) else {
            break;
        };
        i += 1;
        match command {
            '{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x'
            | 'z' | 'F' => {}
            'q' | 'Q' | 'l' | 'L' => {
                while i < chars.len() && (chars[i] == ' ' || chars[i].is_ascii_digit()) {
                    i += 1;
                }
            }
            '#' => {
                rest_of_line(&mut i);
            }
            ':' | 'b' | 't' | 'T' | 'v' => {
                // GNU sed: blanks, then a label (or `v`'s version) that ends at whitespace,
                // `;`, `}` or `#`; what follows is the next command.
                while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
                    i += 1;
                }
                while i < chars.len()
                    && !chars[i].is_whitespace()
                    && !matches!(chars[i], ';' | '}' | '#')
                {
                    i += 1;
                }
            }
            'a' | 'i' | 'c' => {
                rest_of_line(&mut i);
            }
            's' | 'y' => {
                let Some(&delim) = chars.get(i) else {
                    out.hazards.push("an unfinished sed `s` command".into());
                    return out;
                };
                i += 1;
                for _ in 0..2 {
                    while i < chars.len() && chars[i] != delim {
                        if chars[i] == '\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                }
                if i > chars.len() {
                    out.hazards.push("an unfinished sed `s` command".into());
                    return out;
                }
                if command == 'y' {
                    continue;
                }
                while i < chars.len() && !matches!(chars[i], ';' | '\n' | '}') {
                    match chars[i] {
                        'g' | 'p' | 'i' | 'I' | 'm' | 'M' | ' ' => {}
                        d if d.is_ascii_digit() => {}
                        'e' => {
                            out.hazards
                                .push("the sed flag `s///e` runs a command".into());
                            out.unreadable = true;
                        }
                        'w' => {
                            out.hazards
                                .push("the sed flag `s///w` writes a file".into());
                            rest_of_line(&mut i);
                            break;
                        }
                        other => {
                            out.hazards
                                .push(format!("the sed flag `{other}` is not vouched for"));
                        }
                    }
                    i += 1;
                }
            }
            'e' => {
                let command = rest_of_line(&mut i);
                out.hazards
                    .push("the sed command `e` runs a command".into());
                if command.is_empty() {
                    out.unreadable = true;
                } else {
                    out.runs.push(command);
                }
            }
            'r' | 'R' | 'w' | 'W' => {
                rest_of_line(&mut i);
                out.hazards.push(format!(
                    "the sed command `{command}` reads or writes a file"
                ));
            }
            other => {
                out.hazards
                    .push(format!("the sed command `{other}` is not vouched for"));
                return out;
            }
        }
    }
    out
}

/// Skips one sed address or range (`1`, `$`, `/re/I`, `\%re%`, `1,+3`, `0~2`). `false` when
/// it cannot be read.
fn address(chars: &[char], i: &mut usize) -> bool {
    for part in 0..2 {
        if part == 1 {
            if chars.get(*i) != Some(&',') {
                return true;
            }
            *i += 1;
        }
        match chars.get(*i) {
            Some('$') => *i += 1,
            Some(c) if c.is_ascii_digit() || *c == '+' || *c == '~' => {
                *i += 1;
                while chars
                    .get(*i)
                    .is_some_and(|c| c.is_ascii_digit() || *c == '~')
                {
                    *i += 1;
                }
            }
            Some(&open @ ('/' | '\\')) => {
                let delim = if open == '\\' {
                    *i += 1;
                    match chars.get(*i) {
                        Some(&d) => d,
                        None => return false,
                    }
                } else {
                    '/'
                };
                *i += 1;
                while *i < chars.len() && chars[*i] != delim {
                    if chars[*i] == '\\' {
                        *i += 1;
                    }
                    *i += 1;
                }
                if *i >= chars.len() {
                    return false;
                }
                *i += 1;
                while chars.get(*i).is_some_and(|c| matches!(c, 'I' | 'M')) {
                    *i += 1;
                }
            }
            _ if part == 1 => return false,
            _ => return true,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_sed_scripts_are_vouched_for() {
        for script in [
            "1,5p",
            "/foo/p",
            "s/a/b/gp",
            r"s/(a)/\1/p",
            "$p",
            "p;n",
            "1~2{p;d}",
            "y/ab/cd/",
        ] {
            assert_eq!(sed(script), Program::default(), "{script}");
        }
    }

    #[test]
    fn sed_commands_that_run_or_write_are_not() {
        assert_eq!(sed("1e id").runs, ["id"]);
        assert!(sed("s/x/id/e").unreadable);
        assert!(sed("e").unreadable);
        for script in ["w out", "s/a/b/w out", "1W out", "r /etc/passwd", "1{e id"] {
            assert!(!sed(script).hazards.is_empty(), "{script}");
        }
    }

    #[test]
    fn labels_and_versions_end_where_gnu_sed_ends_them() {
        assert_eq!(sed(":a e id").runs, ["id"]);
        assert_eq!(sed("v 4.2 e id").runs, ["id"]);
        assert_eq!(sed("b end; e id").runs, ["id"]);
        assert_eq!(sed(":a\te id").runs, ["id"]);
        assert!(sed(":a;N;ba").hazards.is_empty());
    }
}
