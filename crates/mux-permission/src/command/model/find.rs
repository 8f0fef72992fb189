//! GNU find: `find [-H|-L|-P] [-D OPTS] [-OLEVEL] [PATH...] [EXPRESSION]`. Every primary of the
//! expression is known with its arity; those that run commands (`-exec`, `-execdir`, `-ok`,
//! `-okdir`), delete (`-delete`) or write files (`-fprint`, `-fprint0`, `-fprintf`, `-fls`) are
//! never explained.

use super::opt::Effect;
use super::spec::Arg;

/// `find` primaries that run a command or write and delete files.
pub(crate) const ACTIONS: &[(&str, Effect)] = &[
    ("-exec", Effect::Runs),
    ("-execdir", Effect::Runs),
    ("-ok", Effect::Runs),
    ("-okdir", Effect::Runs),
    ("-delete", Effect::Writes),
    ("-fprint", Effect::Writes),
    ("-fprint0", Effect::Writes),
    ("-fprintf", Effect::Writes),
    ("-fls", Effect::Writes),
];

/// What a primary of [`ACTIONS`] does, in words.
pub(crate) fn action(primary: &str) -> Option<String> {
    let (name, effect) = ACTIONS.iter().find(|(p, _)| *p == primary)?;
    Some(match effect {
        Effect::Runs => format!("`find {name}` runs a command"),
        _ if *name == "-delete" => "`find -delete` deletes files".to_owned(),
        _ => format!("`find {name}` writes a file"),
    })
}

/// Primaries and operators that take no argument.
pub(super) const NULLARY: &[&str] = &[
    "-empty",
    "-true",
    "-false",
    "-readable",
    "-writable",
    "-executable",
    "-nouser",
    "-nogroup",
    "-depth",
    "-d",
    "-mount",
    "-xdev",
    "-noleaf",
    "-ignore_readdir_race",
    "-noignore_readdir_race",
    "-follow",
    "-daystart",
    "-warn",
    "-nowarn",
    "-print",
    "-print0",
    "-ls",
    "-prune",
    "-quit",
    "-not",
    "-a",
    "-and",
    "-o",
    "-or",
    "!",
    "(",
    ")",
    ",",
    "-help",
    "--help",
    "-version",
    "--version",
];

/// Primaries that take one argument (a pattern, a number, a file compared against, a format).
pub(super) const UNARY: &[&str] = &[
    "-name",
    "-iname",
    "-path",
    "-ipath",
    "-wholename",
    "-iwholename",
    "-lname",
    "-ilname",
    "-regex",
    "-iregex",
    "-regextype",
    "-type",
    "-xtype",
    "-size",
    "-mtime",
    "-mmin",
    "-atime",
    "-amin",
    "-ctime",
    "-cmin",
    "-used",
    "-newer",
    "-anewer",
    "-cnewer",
    "-perm",
    "-user",
    "-group",
    "-uid",
    "-gid",
    "-links",
    "-inum",
    "-samefile",
    "-maxdepth",
    "-mindepth",
    "-fstype",
    "-context",
    "-printf",
    "-files0-from",
];

/// Explains `find ARGS`.
pub(crate) fn explain(args: &[Arg<'_>]) -> Result<(), String> {
    let mut i = 0;
    // Leading options.
    while let Some(arg) = args.get(i) {
        match arg.text {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            o if o.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    // Paths: until the first word that starts an expression.
    while let Some(arg) = args.get(i) {
        let t = arg.text;
        if t.starts_with('-') || matches!(t, "!" | "(" | ")" | ",") {
            break;
        }
        if let Some(pattern) = arg.glob
            && !pattern
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | '/' | '_'))
        {
            return Err(format!(
                "the pattern `{pattern}` could expand to a primary of `find`"
            ));
        }
        i += 1;
    }
    while let Some(arg) = args.get(i) {
        i += 1;
        if let Some(pattern) = arg.glob {
            return Err(format!(
                "the pattern `{pattern}` in a `find` expression expands before find reads it"
            ));
        }
        let t = arg.text;
        if NULLARY.contains(&t) {
            continue;
        }
        if UNARY.contains(&t) || (t.starts_with("-newer") && t.len() == 8) {
            match args.get(i) {
                Some(value) if value.glob.is_none() => i += 1,
                _ => return Err(format!("`find {t}` lacks its argument")),
            }
            continue;
        }
        return Err(
            action(t).unwrap_or_else(|| format!("`find {t}` is not a primary the model knows"))
        );
    }
    Ok(())
}
