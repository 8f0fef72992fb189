//! Models of the text tools whose first operand is a program or pattern: grep, rg, sed, awk
//! and jq. Their programs are checked with the language's own grammar (see
//! [`super::super::scripts`]).

use super::opt::Effect::{Flag, OptionalValue, Runs, Script, ScriptFile, Value, WritesOptional};
use super::opt::{Opt, l, o, s};
use super::parse::check;
use super::spec::Arg;
use super::{Kind, Lang, Model, Operands, Style, model};

const GREP: &[Opt] = &[
    o("extended-regexp", 'E', Flag),
    o("fixed-strings", 'F', Flag),
    o("basic-regexp", 'G', Flag),
    o("perl-regexp", 'P', Flag),
    o("regexp", 'e', Value),
    o("file", 'f', Value),
    o("ignore-case", 'i', Flag),
    l("no-ignore-case", Flag),
    o("invert-match", 'v', Flag),
    o("word-regexp", 'w', Flag),
    o("line-regexp", 'x', Flag),
    s('y', Flag),
    o("count", 'c', Flag),
    l("color", OptionalValue),
    l("colour", OptionalValue),
    o("files-without-match", 'L', Flag),
    o("files-with-matches", 'l', Flag),
    o("max-count", 'm', Value),
    o("only-matching", 'o', Flag),
    o("quiet", 'q', Flag),
    l("silent", Flag),
    o("no-messages", 's', Flag),
    o("byte-offset", 'b', Flag),
    o("with-filename", 'H', Flag),
    o("no-filename", 'h', Flag),
    l("label", Value),
    o("line-number", 'n', Flag),
    l("line-buffered", Flag),
    o("initial-tab", 'T', Flag),
    o("null", 'Z', Flag),
    o("after-context", 'A', Value),
    o("before-context", 'B', Value),
    o("context", 'C', Value),
    l("group-separator", Value),
    l("no-group-separator", Flag),
    o("text", 'a', Flag),
    l("binary-files", Value),
    o("devices", 'D', Value),
    o("directories", 'd', Value),
    l("exclude", Value),
    l("exclude-from", Value),
    l("exclude-dir", Value),
    s('I', Flag),
    l("include", Value),
    o("recursive", 'r', Flag),
    o("dereference-recursive", 'R', Flag),
    o("binary", 'U', Flag),
    o("null-data", 'z', Flag),
    l("help", Flag),
    o("version", 'V', Flag),
];

/// ripgrep (clap: long options only as spelled). `--pre`, `--hostname-bin` and
/// `--search-zip` start other programs.
const RG: &[Opt] = &[
    o("regexp", 'e', Value),
    o("file", 'f', Value),
    l("files", Flag),
    l("type-list", Flag),
    o("ignore-case", 'i', Flag),
    o("case-sensitive", 's', Flag),
    o("smart-case", 'S', Flag),
    o("word-regexp", 'w', Flag),
    o("line-regexp", 'x', Flag),
    o("invert-match", 'v', Flag),
    o("fixed-strings", 'F', Flag),
    l("no-fixed-strings", Flag),
    o("multiline", 'U', Flag),
    l("multiline-dotall", Flag),
    o("pcre2", 'P', Flag),
    l("engine", Value),
    o("line-number", 'n', Flag),
    o("no-line-number", 'N', Flag),
    o("with-filename", 'H', Flag),
    o("no-filename", 'I', Flag),
    o("count", 'c', Flag),
    l("count-matches", Flag),
    o("files-with-matches", 'l', Flag),
    l("files-without-match", Flag),
    o("only-matching", 'o', Flag),
    o("replace", 'r', Value),
    o("after-context", 'A', Value),
    o("before-context", 'B', Value),
    o("context", 'C', Value),
    l("context-separator", Value),
    l("no-context-separator", Flag),
    o("max-count", 'm', Value),
    o("max-depth", 'd', Value),
    l("maxdepth", Value),
    l("max-filesize", Value),
    o("glob", 'g', Value),
    l("iglob", Value),
    l("glob-case-insensitive", Flag),
    o("type", 't', Value),
    o("type-not", 'T', Value),
    l("type-add", Value),
    l("type-clear", Value),
    o("unrestricted", 'u', Flag),
    l("hidden", Flag),
    s('.', Flag),
    l("no-hidden", Flag),
    l("no-ignore", Flag),
    l("no-ignore-vcs", Flag),
    l("no-ignore-dot", Flag),
    l("no-ignore-parent", Flag),
    l("no-ignore-global", Flag),
    l("no-ignore-exclude", Flag),
    l("no-ignore-files", Flag),
    l("ignore-file", Value),
    l("ignore-file-case-insensitive", Flag),
    o("follow", 'L', Flag),
    o("text", 'a', Flag),
    l("binary", Flag),
    l("json", Flag),
    l("vimgrep", Flag),
    l("heading", Flag),
    l("no-heading", Flag),
    l("color", Value),
    l("colors", Value),
    o("pretty", 'p', Flag),
    o("quiet", 'q', Flag),
    l("stats", Flag),
    l("sort", Value),
    l("sortr", Value),
    l("sort-files", Flag),
    o("threads", 'j', Value),
    l("trim", Flag),
    o("null", '0', Flag),
    l("null-data", Flag),
    l("column", Flag),
    l("no-column", Flag),
    o("byte-offset", 'b', Flag),
    l("no-messages", Flag),
    l("max-columns", Value),
    s('M', Value),
    l("max-columns-preview", Flag),
    l("passthru", Flag),
    l("no-config", Flag),
    l("path-separator", Value),
    l("line-buffered", Flag),
    l("block-buffered", Flag),
    l("mmap", Flag),
    l("no-mmap", Flag),
    l("no-unicode", Flag),
    l("crlf", Flag),
    o("encoding", 'E', Value),
    l("one-file-system", Flag),
    l("include-zero", Flag),
    l("debug", Flag),
    l("trace", Flag),
    o("help", 'h', Flag),
    o("version", 'V', Flag),
    l("pre", Runs),
    l("pre-glob", Value),
    l("hostname-bin", Runs),
    o("search-zip", 'z', Runs),
];

/// awk (gawk's options; mawk's `-W` and anything else are not vouched for). A program read
/// from a file (`-f`, `-E`, `-i`) is one the checker cannot see.
const AWK: &[Opt] = &[
    o("field-separator", 'F', Value),
    o("assign", 'v', Value),
    o("file", 'f', ScriptFile),
    o("source", 'e', Script),
    o("exec", 'E', ScriptFile),
    o("include", 'i', ScriptFile),
    o("load", 'l', Runs),
    o("debug", 'D', Runs),
    o("dump-variables", 'd', WritesOptional),
    o("pretty-print", 'o', WritesOptional),
    o("profile", 'p', WritesOptional),
    o("characters-as-bytes", 'b', Flag),
    o("traditional", 'c', Flag),
    o("lint", 'L', OptionalValue),
    o("bignum", 'M', Flag),
    o("use-lc-numeric", 'N', Flag),
    o("non-decimal-data", 'n', Flag),
    o("optimize", 'O', Flag),
    o("posix", 'P', Flag),
    o("re-interval", 'r', Flag),
    o("no-optimize", 's', Flag),
    o("sandbox", 'S', Flag),
    o("lint-old", 't', Flag),
    o("help", 'h', Flag),
    o("version", 'V', Flag),
];

/// jq (long options only as spelled). `--arg NAME VALUE` and its kin take two words; they are
/// modelled as two options in a row by [`JQ_PAIRS`].
const JQ: &[Opt] = &[
    o("null-input", 'n', Flag),
    o("raw-input", 'R', Flag),
    o("slurp", 's', Flag),
    o("compact-output", 'c', Flag),
    o("raw-output", 'r', Flag),
    l("raw-output0", Flag),
    o("join-output", 'j', Flag),
    o("ascii-output", 'a', Flag),
    o("sort-keys", 'S', Flag),
    o("color-output", 'C', Flag),
    o("monochrome-output", 'M', Flag),
    l("tab", Flag),
    l("indent", Value),
    l("unbuffered", Flag),
    l("stream", Flag),
    l("stream-errors", Flag),
    l("seq", Flag),
    o("exit-status", 'e', Flag),
    o("from-file", 'f', ScriptFile),
    s('L', Value),
    l("args", Flag),
    l("jsonargs", Flag),
    o("help", 'h', Flag),
    o("version", 'V', Flag),
];

/// jq's options that take two words (a name and a value or file); both are inert.
const JQ_PAIRS: &[&str] = &["--arg", "--argjson", "--slurpfile", "--rawfile"];

/// Explains `jq ARGS`: the two-word options are set aside (jq reads them before anything
/// else, as spelled), the rest goes through the model.
pub(crate) fn jq(args: &[Arg<'_>]) -> Result<(), String> {
    let mut rest = Vec::with_capacity(args.len());
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        if arg.text == "--" {
            rest.extend_from_slice(&args[i..]);
            break;
        }
        if JQ_PAIRS.contains(&arg.text) {
            if args
                .get(i + 1..i + 3)
                .is_none_or(|pair| pair.iter().any(|a| a.glob.is_some()))
            {
                return Err(format!("`jq {}` lacks its two values", arg.text));
            }
            i += 3;
            continue;
        }
        rest.push(*arg);
        i += 1;
    }
    let Some(model) = MODELS.iter().find(|m| m.name == "jq") else {
        return Err("jq has no model".to_owned());
    };
    check(model, &rest).map(|_| ())
}

/// A program (in `lang`) first, then paths.
const fn program_then_paths(lang: &'static [Kind; 1]) -> Operands {
    Operands {
        leading: lang,
        rest: Some(Kind::Path),
    }
}

/// `sed` (GNU, getopt_long); `-i` writes, `-e`/`--expression` and the first operand are
/// scripts, `-f` reads a script file.
const SED: &[Opt] = &[
    o("quiet", 'n', Flag),
    l("silent", Flag),
    l("debug", Flag),
    o("expression", 'e', Script),
    o("file", 'f', ScriptFile),
    l("follow-symlinks", Flag),
    o("in-place", 'i', WritesOptional),
    o("line-length", 'l', Value),
    l("posix", Flag),
    o("regexp-extended", 'E', Flag),
    s('r', Flag),
    o("separate", 's', Flag),
    l("sandbox", Flag),
    o("unbuffered", 'u', Flag),
    o("null-data", 'z', Flag),
    l("zero-terminated", Flag),
    l("help", Flag),
    l("version", Flag),
];

const REGEX: &[Kind; 1] = &[Kind::Program(Lang::Regex)];
const SED_PROGRAM: &[Kind; 1] = &[Kind::Program(Lang::Sed)];
const AWK_PROGRAM: &[Kind; 1] = &[Kind::Program(Lang::Awk)];
const JQ_PROGRAM: &[Kind; 1] = &[Kind::Program(Lang::Jq)];

const fn programmed(
    name: &'static str,
    style: Style,
    options: &'static [Opt],
    lang: &'static [Kind; 1],
    program_options: &'static [&'static str],
) -> Model {
    Model {
        program_options,
        numeric: matches!(lang[0], Kind::Program(Lang::Regex)),
        ..model(name, style, options, program_then_paths(lang))
    }
}

/// The models of this family.
pub(crate) const MODELS: &[Model] = &[
    programmed("grep", Style::Gnu, GREP, REGEX, &["regexp", "file"]),
    programmed("egrep", Style::Gnu, GREP, REGEX, &["regexp", "file"]),
    programmed("fgrep", Style::Gnu, GREP, REGEX, &["regexp", "file"]),
    Model {
        numeric: false,
        ..programmed(
            "rg",
            Style::Exact,
            RG,
            REGEX,
            &["regexp", "file", "files", "type-list"],
        )
    },
    Model {
        strict: true,
        ..programmed("sed", Style::Gnu, SED, SED_PROGRAM, &["expression", "file"])
    },
    programmed(
        "awk",
        Style::Gnu,
        AWK,
        AWK_PROGRAM,
        &["file", "source", "exec"],
    ),
    programmed(
        "gawk",
        Style::Gnu,
        AWK,
        AWK_PROGRAM,
        &["file", "source", "exec"],
    ),
    programmed("jq", Style::Exact, JQ, JQ_PROGRAM, &["from-file"]),
];
