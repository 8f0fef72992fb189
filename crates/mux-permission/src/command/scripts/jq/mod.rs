//! jq programs. jq cannot run commands or write files; what it can do beyond its input is
//! read the environment (`env`, `$ENV`) and load modules (`import`, `include`, from search
//! paths the caller does not see). Those are refused, wherever they appear (string
//! interpolation `"\(env.X)"` included: every identifier in the text counts).

use super::Program;

/// Names outside the inert subset.
const FORBIDDEN: &[&str] = &[
    "env",
    "$ENV",
    "import",
    "include",
    "modulemeta",
    "get_search_list",
    "get_prog_origin",
    "get_jq_origin",
    "$__prog_args",
];

/// Reads a jq program.
pub(crate) fn jq(program: &str) -> Program {
    let mut out = Program::default();
    let words = program.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '$'));
    for word in words {
        if FORBIDDEN.contains(&word) {
            out.hazards.push(format!(
                "the jq program uses `{word}` (the environment or modules)"
            ));
            return out;
        }
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
        ] {
            assert_eq!(jq(program), Program::default(), "{program}");
        }
        for program in [
            "env.HOME",
            "$ENV.PATH",
            "\"\\(env.SECRET)\"",
            "import \"x\" as x; .",
        ] {
            assert!(!jq(program).hazards.is_empty(), "{program}");
        }
    }
}
