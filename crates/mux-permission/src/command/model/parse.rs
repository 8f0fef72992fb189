//! Reading a command's arguments through its [`Model`], the way its option parser does, and
//! refusing every word the model does not account for.

use super::super::scripts;
use super::opt::{Effect, Opt};
use super::spec::{Arg, Kind, Lang, Model, Parsed, Style};

/// Whether giving an option with this effect is explained: it neither runs code, writes
/// files, reads a program the checker cannot see, nor reaches a remote shell.
fn inert(effect: Effect) -> bool {
    matches!(
        effect,
        Effect::Flag
            | Effect::Value
            | Effect::OptionalValue
            | Effect::AttachedValue
            | Effect::ValueUnlessLast
            | Effect::Script
    )
}

/// Whether `text` is a program in `lang` that does nothing beyond reading and printing.
pub(crate) fn inert_program(lang: Lang, text: &str) -> Result<(), String> {
    let program = match lang {
        Lang::Regex => return Ok(()),
        Lang::Sed => scripts::sed(text),
        Lang::Awk => scripts::awk(text),
        Lang::Jq => scripts::jq(text),
    };
    match program.hazards.first() {
        Some(why) => Err(why.clone()),
        None if program.unreadable || !program.runs.is_empty() => {
            Err("the program runs commands".to_owned())
        }
        None => Ok(()),
    }
}

/// Whether a glob's expansions all start with the same literal character that is not `-`, so
/// none of them can be read as an option.
pub(crate) fn safe_glob(pattern: &str) -> bool {
    pattern
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '/' | '_'))
}

/// The value of an option that takes the next word, `args[at]`: a missing word is an error,
/// except for [`Effect::ValueUnlessLast`], whose parser then uses its default; a glob is never
/// a value (its expansion could be several words).
fn next_value<'a>(
    args: &[Arg<'a>],
    at: usize,
    effect: Effect,
    lacks: impl FnOnce() -> String,
) -> Result<Option<&'a str>, String> {
    match args.get(at) {
        Some(arg) if arg.glob.is_none() => Ok(Some(arg.text)),
        None if effect == Effect::ValueUnlessLast => Ok(None),
        _ => Err(lacks()),
    }
}

/// Reads `args` through `model`; the first word the model cannot account for is the error.
pub(crate) fn check<'a>(model: &Model, args: &[Arg<'a>]) -> Result<Parsed<'a>, String> {
    let name = model.name;
    let mut out = Parsed::default();
    let mut operands: Vec<Arg<'a>> = Vec::new();
    let mut only_operands = false;
    let mut i = 0;
    let take = |opt: &'static Opt,
                spelling: &str,
                value: Option<&'a str>,
                out: &mut Parsed<'a>|
     -> Result<(), String> {
        if !inert(opt.effect) {
            return Err(format!(
                "`{name} {spelling}` runs code, writes files or reads a program the checker cannot see"
            ));
        }
        out.options.push((opt, value));
        Ok(())
    };
    let mut script_values: Vec<&'a str> = Vec::new();
    while i < args.len() {
        let arg = args[i];
        i += 1;
        let text = arg.text;
        if only_operands || !text.starts_with('-') || text == "-" {
            operands.push(arg);
            continue;
        }
        if arg.glob.is_some() {
            return Err(format!(
                "the pattern `{text}` could expand to options of `{name}`"
            ));
        }
        if text == "--" {
            only_operands = true;
            continue;
        }
        if !operands.is_empty() {
            out.option_after_operand = true;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (spelled, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let mut candidates = model.read_candidates(spelled);
            if candidates.is_empty() && matches!(model.style, Style::Git | Style::GitExact) {
                // `--no-OPTION` turns an option off: explained when OPTION is, and takes no value.
                if let Some(positive) = spelled.strip_prefix("no-") {
                    let negated = model.read_candidates(positive);
                    if let [opt] = negated.as_slice()
                        && inert(opt.effect)
                        && attached.is_none()
                    {
                        continue;
                    }
                }
            }
            let opt = match candidates.len() {
                0 => {
                    return Err(format!(
                        "`{name} {text}` is an option the model does not know"
                    ));
                }
                1 => candidates.remove(0),
                _ => {
                    return Err(format!("`{name} {text}` is an ambiguous abbreviation"));
                }
            };
            let value = if opt.effect.needs_value() {
                match attached {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        next_value(args, i - 1, opt.effect, || {
                            format!("`{name} {text}` lacks its value")
                        })?
                    }
                }
            } else if opt.effect == Effect::AttachedValue && attached.is_none() {
                return Err(format!(
                    "`{name} {text}` takes its value only as `{text}=VALUE`"
                ));
            } else if opt.effect.optional_value() {
                attached
            } else if attached.is_some() {
                return Err(format!("`{name} {text}` takes no value"));
            } else {
                None
            };
            if opt.effect == Effect::Script
                && let Some(v) = value
            {
                script_values.push(v);
            }
            take(opt, text, value, &mut out)?;
            continue;
        }
        let cluster = &text[1..];
        if model.numeric && cluster.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        for (at, letter) in cluster.char_indices() {
            let Some(opt) = model.all_options().find(|o| o.short == Some(letter)) else {
                return Err(format!(
                    "`{name} -{letter}` is an option the model does not know"
                ));
            };
            let rest = &cluster[at + letter.len_utf8()..];
            let spelling = format!("-{letter}");
            let takes = opt.effect.needs_value() || opt.effect.optional_value();
            if takes && at > 0 && model.style == Style::GitExact {
                // git's revision parser reads a cluster only when parse-options' diff table
                // knows every letter; `-pn` is one unknown word, and the next is not its value.
                return Err(format!(
                    "`{name} {text}`: git's revision parser may not read `-{letter}` inside a cluster"
                ));
            }
            if opt.effect == Effect::AttachedValue && rest.is_empty() {
                return Err(format!("`{name} {spelling}` takes its value only attached"));
            }
            if opt.effect.needs_value() {
                let value = if rest.is_empty() {
                    i += 1;
                    next_value(args, i - 1, opt.effect, || {
                        format!("`{name} {spelling}` lacks its value")
                    })?
                } else {
                    Some(rest)
                };
                if opt.effect == Effect::Script
                    && let Some(value) = value
                {
                    script_values.push(value);
                }
                take(opt, &spelling, value, &mut out)?;
                break;
            }
            if opt.effect.optional_value() {
                take(
                    opt,
                    &spelling,
                    Some(rest).filter(|r| !r.is_empty()),
                    &mut out,
                )?;
                break;
            }
            take(opt, &spelling, None, &mut out)?;
        }
    }
    let program_given = out
        .options
        .iter()
        .any(|(o, _)| !o.long.is_empty() && model.program_options.contains(&o.long));
    let mut kinds = model.operands.leading.iter().copied();
    let program = match model.operands.leading.first() {
        Some(Kind::Program(lang)) => Some(*lang),
        _ => None,
    };
    if let Some(lang) = program {
        if program_given {
            kinds.next();
        }
        // Options may carry the program too (`sed -e`); GNU sed joins them with newlines.
        if !script_values.is_empty() {
            inert_program(lang, &script_values.join("\n"))?;
        }
    }
    for operand in &operands {
        let leading = kinds.next();
        let kind = leading.or(model.operands.rest).ok_or_else(|| {
            format!(
                "`{}` is an operand `{name}` does not take here",
                operand.text
            )
        })?;
        match (kind, operand.glob) {
            (Kind::Path, Some(pattern)) if leading.is_none() && safe_glob(pattern) => {}
            (_, Some(pattern)) => {
                return Err(format!(
                    "the pattern `{pattern}` is not in a position `{name}` reads as paths"
                ));
            }
            (Kind::Program(lang), None) => inert_program(lang, operand.text)?,
            _ => {}
        }
        out.operands.push(operand.text);
    }
    if program.is_some() && !program_given && operands.is_empty() {
        return Err(format!("`{name}` has no program to read"));
    }
    if let Some(form) = model.form {
        form(&out)?;
    }
    Ok(out)
}
