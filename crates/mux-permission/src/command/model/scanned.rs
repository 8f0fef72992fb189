//! Programs the deny scan reads but no model explains for allow rules: tar, man, the pagers
//! and the editors. Their options are listed once, here, with what they run or write.

use super::opt::Effect::{
    Flag, OptionalValue, Remote, Runs, RunsOptional, ScriptFile, Value, Writes,
};
use super::opt::{Opt, l, o, s};
use super::{Model, PATHS, Style, model};

/// `tar` (GNU, argp). Only the options a listing needs are vouched for; anything else is
/// unknown.
const TAR: &[Opt] = &[
    o("list", 't', Flag),
    o("extract", 'x', Flag),
    l("get", Flag),
    o("create", 'c', Writes),
    o("append", 'r', Flag),
    o("update", 'u', Flag),
    o("file", 'f', Remote),
    l("force-local", Flag),
    o("verbose", 'v', Flag),
    o("gzip", 'z', Flag),
    l("gunzip", Flag),
    o("bzip2", 'j', Flag),
    o("xz", 'J', Flag),
    l("zstd", Flag),
    l("lzip", Flag),
    l("lzma", Flag),
    o("compress", 'Z', Flag),
    o("auto-compress", 'a', Flag),
    o("directory", 'C', Value),
    l("wildcards", Flag),
    l("no-wildcards", Flag),
    l("anchored", Flag),
    l("exclude", Value),
    o("exclude-from", 'X', Value),
    o("files-from", 'T', Value),
    l("null", Flag),
    l("numeric-owner", Flag),
    l("utc", Flag),
    l("full-time", Flag),
    o("block-number", 'R', Flag),
    o("ignore-zeros", 'i', Flag),
    o("quiet", 'q', Flag),
    o("to-stdout", 'O', Flag),
    l("show-transformed-names", Flag),
    l("occurrence", OptionalValue),
    l("checkpoint", OptionalValue),
    l("help", Flag),
    l("version", Flag),
    l("to-command", Runs),
    o("use-compress-program", 'I', Runs),
    l("checkpoint-action", Runs),
    o("info-script", 'F', Runs),
    l("new-volume-script", Runs),
    l("rsh-command", Runs),
    l("index-file", Writes),
    l("remove-files", Writes),
    l("overwrite", Writes),
    o("unlink-first", 'U', Writes),
    l("recursive-unlink", Writes),
    o("absolute-names", 'P', Writes),
    l("volno-file", Writes),
    o("listed-incremental", 'g', Writes),
];

/// `man` (man-db, argp): the pager and the browser it runs.
const MAN: &[Opt] = &[
    o("pager", 'P', Runs),
    o("html", 'H', RunsOptional),
    o("preprocessor", 'p', Value),
    o("config-file", 'C', ScriptFile),
];

/// `less`: a lesskey file can bind keys to shell commands; `+CMD` arguments are read apart.
const LESS: &[Opt] = &[
    o("lesskey-file", 'k', ScriptFile),
    l("lesskey-src", ScriptFile),
    o("log-file", 'o', Writes),
    o("LOG-FILE", 'O', Writes),
    o("tag", 't', Value),
    o("pattern", 'p', Value),
];

/// vi and vim: `-c CMD`, `--cmd CMD` and `+CMD` run editor commands, `:!` among them.
const VIM: &[Opt] = &[
    s('c', Runs),
    l("cmd", Runs),
    s('S', ScriptFile),
    s('u', ScriptFile),
];

/// The models of this family: read for what they run, never explained.
pub(crate) const MODELS: &[Model] = &[
    model("man", Style::Gnu, MAN, PATHS),
    model("less", Style::Gnu, LESS, PATHS),
    model("more", Style::Gnu, LESS, PATHS),
    model("vi", Style::Exact, VIM, PATHS),
    model("vim", Style::Exact, VIM, PATHS),
    model("nvim", Style::Exact, VIM, PATHS),
    model("view", Style::Exact, VIM, PATHS),
    model("ex", Style::Exact, VIM, PATHS),
    Model {
        strict: true,
        bundled_first: true,
        ..model("tar", Style::Gnu, TAR, PATHS)
    },
];
