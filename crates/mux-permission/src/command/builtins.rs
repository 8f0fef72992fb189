//! Builtins that evaluate their arguments (array subscripts, arithmetic, word lists) or assign
//! variables the next command obeys, as data.
//!
//! bash evaluates the subscript of a variable name wherever a builtin takes one, so a `$(…)`
//! inside *single quotes* still runs: `printf -v 'a[$(id)]' x`, `test -v 'a[$(id)]'`,
//! `declare 'a[$(id)]=1'`, `let`, `(( ))`. Such a builtin is never allowed, and when its
//! arguments hold anything that expands (`$`, a backtick) what it runs cannot be read.

/// When a builtin evaluates or assigns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum When {
    /// Always.
    Always,
    /// When one of its leading options has one of these letters (`printf -v`, `wait -p`).
    OptionLetter(&'static [char]),
    /// When one of its arguments is exactly one of these words (`test -v`).
    Operator(&'static [&'static str]),
}

/// The builtins that evaluate or assign, and when.
pub(crate) const EVALUATING: &[(&str, When)] = &[
    ("printf", When::OptionLetter(&['v'])),
    ("wait", When::OptionLetter(&['p'])),
    ("test", When::Operator(&["-v", "-R"])),
    ("[", When::Operator(&["-v", "-R"])),
    ("let", When::Always),
    ("declare", When::Always),
    ("typeset", When::Always),
    ("local", When::Always),
    ("readonly", When::Always),
    ("export", When::Always),
    ("unset", When::Always),
    ("read", When::Always),
    ("mapfile", When::Always),
    ("readarray", When::Always),
    ("compgen", When::Always),
    ("complete", When::Always),
    ("getopts", When::Always),
    ("enable", When::Always),
    ("hash", When::Always),
    ("bind", When::Always),
    ("fc", When::Always),
    ("shopt", When::Always),
    ("set", When::Always),
];

/// Operators of `[[ … ]]` that evaluate their operands as variable names or arithmetic.
pub(crate) const EVALUATING_TEST_OPERATORS: &[&str] =
    &["-v", "-R", "-eq", "-ne", "-lt", "-le", "-gt", "-ge"];

/// Whether `name args` evaluates or assigns; the builtin's name for the hazard if so.
pub(crate) fn evaluates(name: &str, args: &[String]) -> bool {
    let Some((_, when)) = EVALUATING.iter().find(|(builtin, _)| *builtin == name) else {
        return false;
    };
    match when {
        When::Always => true,
        When::Operator(operators) => args.iter().any(|a| operators.contains(&a.as_str())),
        When::OptionLetter(letters) => args
            .iter()
            .take_while(|a| a.starts_with('-') && a.as_str() != "--" && a.len() > 1)
            .any(|a| a[1..].chars().any(|c| letters.contains(&c))),
    }
}

/// Whether text a builtin evaluates could expand into something unknown: a `$` or a backtick.
pub(crate) fn expands(text: &str) -> bool {
    text.contains(['$', '`'])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn evaluating_forms() {
        assert!(evaluates("printf", &args(&["-v", "x", "y"])));
        assert!(evaluates("printf", &args(&["-vx", "y"])));
        assert!(!evaluates("printf", &args(&["%s", "-v"])));
        assert!(!evaluates("printf", &args(&["--", "-v"])));
        assert!(evaluates("test", &args(&["-v", "x"])));
        assert!(!evaluates("test", &args(&["-f", "x"])));
        assert!(evaluates("let", &args(&["x=1"])));
        assert!(!evaluates("ls", &args(&["-v"])));
    }
}
