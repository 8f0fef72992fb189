//! `${VAR}` and `${VAR:-default}` expansion in config strings.

/// Why a string could not be expanded.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ExpandProblem {
    Unset(String),
    Unclosed,
    BadName(String),
}

impl ExpandProblem {
    /// What is wrong, to follow a field's name.
    pub(super) fn describe(&self) -> String {
        match self {
            Self::Unset(var) => format!("uses `${{{var}}}`, which is not set"),
            Self::Unclosed => "has a `${` without a closing `}`".into(),
            Self::BadName(name) => format!("uses `${{{name}}}`, which is not a variable name"),
        }
    }
}

/// Expands `${VAR}` and `${VAR:-default}`; `$$` is a literal `$` (so `$${VAR}` is the text
/// `${VAR}`), and any other `$` stays as it is.
pub(super) fn expand_vars(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandProblem> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        out.push_str(&rest[..dollar]);
        let after_dollar = &rest[dollar + 1..];
        if let Some(after) = after_dollar.strip_prefix('$') {
            out.push('$');
            rest = after;
            continue;
        }
        let Some(after) = after_dollar.strip_prefix('{') else {
            out.push('$');
            rest = after_dollar;
            continue;
        };
        let end = after.find('}').ok_or(ExpandProblem::Unclosed)?;
        out.push_str(&expand_one(&after[..end], lookup)?);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The value of one `${...}` body: `VAR` or `VAR:-default`.
fn expand_one(
    body: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandProblem> {
    let (name, default) = match body.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (body, None),
    };
    let valid = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        return Err(ExpandProblem::BadName(name.to_string()));
    }
    match (lookup(name), default) {
        (Some(value), Some(default)) if value.is_empty() => Ok(default.to_string()),
        (Some(value), _) => Ok(value),
        (None, Some(default)) => Ok(default.to_string()),
        (None, None) => Err(ExpandProblem::Unset(name.to_string())),
    }
}
