//! Per-command option models, as data a reviewer can read: which options take a value, which
//! run code or write files, and whether the command's parser accepts abbreviated long options.
//!
//! A model describes one parser (`sort`, `tar`, `git rebase`, …). [`super::scan`] reads a
//! command's arguments the way that parser does: `--long=value`, `--long value`, unique
//! prefixes of long options when the parser abbreviates (getopt_long, git parse-options,
//! argp), and short options clustered with their value (`-vIcmd`).

/// What giving an option does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Effect {
    /// A flag that changes nothing the checker cares about.
    Flag,
    /// Takes a value (attached or the next word); otherwise harmless.
    Value,
    /// Takes an optional value, attached only (`--opt=v`, `-ov`); otherwise harmless.
    OptionalValue,
    /// Takes a value that is a command line, a program or configuration that runs code.
    Runs,
    /// Runs code chosen elsewhere (a pager, a configured tool); a value, if any, is attached.
    RunsOptional,
    /// Takes a value naming a file it writes.
    Writes,
    /// Writes files in place; a value (a backup suffix), if any, is attached.
    WritesOptional,
    /// Takes a script in the command's own language (sed), checked by [`super::scripts`].
    Script,
    /// Takes a file holding a script the checker cannot read.
    ScriptFile,
    /// Takes a file name that, with a `host:` part, is reached through a remote shell (tar's
    /// archive).
    Remote,
}

impl Effect {
    /// Whether the option needs a value, attached or in the next word.
    pub(crate) fn needs_value(self) -> bool {
        matches!(
            self,
            Self::Value
                | Self::Runs
                | Self::Writes
                | Self::Script
                | Self::ScriptFile
                | Self::Remote
        )
    }

    /// Whether the option takes a value only when attached.
    pub(crate) fn optional_value(self) -> bool {
        matches!(
            self,
            Self::OptionalValue | Self::RunsOptional | Self::WritesOptional
        )
    }

    /// Why the option makes a command at most ask, if it does.
    pub(crate) fn danger(self) -> Option<&'static str> {
        match self {
            Self::Flag | Self::Value | Self::OptionalValue | Self::Script | Self::Remote => None,
            Self::Runs | Self::RunsOptional => Some("can run code through an option"),
            Self::Writes | Self::WritesOptional => Some("writes files through an option"),
            Self::ScriptFile => Some("runs a script file the checker cannot read"),
        }
    }
}

/// One option: its long name (without `--`, empty if none), its short letter, its effect.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opt {
    pub(crate) long: &'static str,
    pub(crate) short: Option<char>,
    pub(crate) effect: Effect,
}

pub(crate) const fn o(long: &'static str, short: char, effect: Effect) -> Opt {
    Opt {
        long,
        short: Some(short),
        effect,
    }
}

pub(crate) const fn l(long: &'static str, effect: Effect) -> Opt {
    Opt {
        long,
        short: None,
        effect,
    }
}

pub(crate) const fn s(short: char, effect: Effect) -> Opt {
    Opt {
        long: "",
        short: Some(short),
        effect,
    }
}

use Effect::{
    Flag, OptionalValue, Remote, Runs, RunsOptional, Script, ScriptFile, Value, Writes,
    WritesOptional,
};

/// How one command (or git subcommand) parses its options.
#[derive(Debug)]
pub(crate) struct Model {
    /// The command, or `git SUBCOMMAND`.
    pub(crate) name: &'static str,
    /// The parser accepts unique prefixes of long options.
    pub(crate) abbreviates: bool,
    /// Options the model does not list cannot be vouched for: the command is at most ask.
    pub(crate) strict: bool,
    /// Option parsing stops at the first operand (git's global options stop at the subcommand).
    pub(crate) stops_at_operand: bool,
    /// The first argument is an option cluster even without a `-` (`tar xvf`).
    pub(crate) bundled_first: bool,
    /// The first operand is a script in the command's language unless an option gave one.
    pub(crate) script_operand: bool,
    /// An operand starting with `+` stands for this long option (`git push origin +main` is a
    /// forced push).
    pub(crate) plus_operand: Option<&'static str>,
    /// The options.
    pub(crate) options: &'static [Opt],
}

const fn model(
    name: &'static str,
    abbreviates: bool,
    strict: bool,
    options: &'static [Opt],
) -> Model {
    Model {
        name,
        abbreviates,
        strict,
        stops_at_operand: false,
        bundled_first: false,
        script_operand: false,
        plus_operand: None,
        options,
    }
}

/// `sort` (GNU coreutils, getopt_long).
pub(crate) const SORT: &[Opt] = &[
    o("ignore-leading-blanks", 'b', Flag),
    o("dictionary-order", 'd', Flag),
    o("ignore-case", 'f', Flag),
    o("general-numeric-sort", 'g', Flag),
    o("ignore-nonprinting", 'i', Flag),
    o("month-sort", 'M', Flag),
    o("human-numeric-sort", 'h', Flag),
    o("numeric-sort", 'n', Flag),
    o("random-sort", 'R', Flag),
    l("random-source", Value),
    o("reverse", 'r', Flag),
    l("sort", Value),
    o("version-sort", 'V', Flag),
    l("batch-size", Value),
    s('c', Flag),
    l("check", OptionalValue),
    s('C', Flag),
    l("compress-program", Runs),
    l("debug", Flag),
    l("files0-from", ScriptFile),
    o("key", 'k', Value),
    o("merge", 'm', Flag),
    o("output", 'o', Writes),
    o("stable", 's', Flag),
    o("buffer-size", 'S', Value),
    o("field-separator", 't', Value),
    o("temporary-directory", 'T', Value),
    l("parallel", Value),
    o("unique", 'u', Flag),
    o("zero-terminated", 'z', Flag),
    l("help", Flag),
    l("version", Flag),
];

/// `sed` (GNU, getopt_long); `-i` writes, `-e`/`--expression` and the first operand are
/// scripts, `-f` reads a script file.
pub(crate) const SED: &[Opt] = &[
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

/// `rg` (ripgrep: no abbreviations); only the options that run programs matter.
const RG: &[Opt] = &[
    l("pre", Runs),
    l("hostname-bin", Runs),
    l("pre-glob", Value),
    o("regexp", 'e', Value),
    o("file", 'f', Value),
    o("glob", 'g', Value),
    o("type", 't', Value),
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

/// git's global options (git.c `handle_options`: exact spellings, stop at the subcommand).
pub(crate) const GIT_GLOBAL: &[Opt] = &[
    s('C', Value),
    o("config", 'c', Runs),
    l("config-env", Runs),
    l("exec-path", RunsOptional),
    l("git-dir", Value),
    l("work-tree", Value),
    l("namespace", Value),
    l("super-prefix", Value),
    l("list-cmds", Value),
    l("attr-source", Value),
    o("paginate", 'p', Flag),
    o("no-pager", 'P', Flag),
    l("bare", Flag),
    l("no-replace-objects", Flag),
    l("literal-pathspecs", Flag),
    l("glob-pathspecs", Flag),
    l("noglob-pathspecs", Flag),
    l("icase-pathspecs", Flag),
    l("no-optional-locks", Flag),
    l("no-lazy-fetch", Flag),
    l("no-advice", Flag),
    l("html-path", Flag),
    l("man-path", Flag),
    l("info-path", Flag),
    o("help", 'h', Flag),
    o("version", 'v', Flag),
];

/// Options every diff-producing git subcommand shares that matter here.
const GIT_DIFF: &[Opt] = &[
    l("output", Writes),
    o("max-count", 'n', Value),
    l("format", Value),
    l("pretty", OptionalValue),
    s('S', Value),
    s('G', Value),
    s('L', Value),
    s('O', Value),
    s('U', Value),
    l("author", Value),
    l("grep", Value),
];
const GIT_FORMAT_PATCH: &[Opt] = &[l("output", Writes), o("output-directory", 'o', Writes)];
const GIT_REBASE: &[Opt] = &[
    o("exec", 'x', Runs),
    o("strategy", 's', Value),
    o("strategy-option", 'X', Value),
    l("onto", Value),
    s('C', Value),
    o("interactive", 'i', Flag),
    l("continue", Flag),
    l("abort", Flag),
    l("skip", Flag),
];
const GIT_GREP: &[Opt] = &[
    o("open-files-in-pager", 'O', RunsOptional),
    o("regexp", 'e', Value),
    s('f', Value),
    l("max-depth", Value),
    s('A', Value),
    s('B', Value),
    s('C', Value),
    s('m', Value),
];
const GIT_DIFFTOOL: &[Opt] = &[o("extcmd", 'x', Runs), o("tool", 't', Value)];
const GIT_FETCH: &[Opt] = &[
    l("upload-pack", Runs),
    o("config", 'c', Runs),
    l("template", Runs),
    o("origin", 'o', Value),
    o("branch", 'b', Value),
    l("depth", Value),
    s('u', Runs),
];
const GIT_PUSH: &[Opt] = &[
    l("receive-pack", Runs),
    l("exec", Runs),
    o("force", 'f', Flag),
    o("delete", 'd', Flag),
    o("dry-run", 'n', Flag),
    o("set-upstream", 'u', Flag),
    o("verbose", 'v', Flag),
    o("quiet", 'q', Flag),
    l("force-with-lease", OptionalValue),
    l("force-if-includes", Flag),
    l("mirror", Flag),
    l("all", Flag),
    l("tags", Flag),
    l("repo", Value),
    o("push-option", 'o', Value),
];
const GIT_RESET: &[Opt] = &[
    l("hard", Flag),
    l("soft", Flag),
    l("mixed", Flag),
    l("merge", Flag),
    l("keep", Flag),
    o("quiet", 'q', Flag),
    o("patch", 'p', Flag),
];
const GIT_ARCHIVE: &[Opt] = &[
    o("output", 'o', Writes),
    l("exec", Runs),
    l("remote", Value),
    l("format", Value),
    l("prefix", Value),
];
const GIT_INIT: &[Opt] = &[l("template", Runs), l("separate-git-dir", Value)];

/// Every option model, looked up by command (or `git SUBCOMMAND`).
pub(crate) const MODELS: &[Model] = &[
    model("sort", true, true, SORT),
    model("rg", false, false, RG),
    model("man", true, false, MAN),
    model("less", true, false, LESS),
    model("more", true, false, LESS),
    model("vi", false, false, VIM),
    model("vim", false, false, VIM),
    model("nvim", false, false, VIM),
    model("view", false, false, VIM),
    model("ex", false, false, VIM),
    Model {
        script_operand: true,
        ..model("sed", true, true, SED)
    },
    Model {
        bundled_first: true,
        ..model("tar", true, true, TAR)
    },
    Model {
        stops_at_operand: true,
        ..model("git", false, true, GIT_GLOBAL)
    },
    model("git log", true, false, GIT_DIFF),
    model("git show", true, false, GIT_DIFF),
    model("git diff", true, false, GIT_DIFF),
    model("git diff-tree", true, false, GIT_DIFF),
    model("git diff-index", true, false, GIT_DIFF),
    model("git diff-files", true, false, GIT_DIFF),
    model("git whatchanged", true, false, GIT_DIFF),
    model("git range-diff", true, false, GIT_DIFF),
    model("git format-patch", true, false, GIT_FORMAT_PATCH),
    model("git rebase", true, false, GIT_REBASE),
    model("git grep", true, false, GIT_GREP),
    model("git difftool", true, false, GIT_DIFFTOOL),
    model("git fetch", true, false, GIT_FETCH),
    model("git pull", true, false, GIT_FETCH),
    model("git clone", true, false, GIT_FETCH),
    model("git ls-remote", true, false, GIT_FETCH),
    model("git submodule", true, false, GIT_FETCH),
    Model {
        plus_operand: Some("force"),
        ..model("git push", true, false, GIT_PUSH)
    },
    model("git send-pack", true, false, GIT_PUSH),
    model("git reset", true, false, GIT_RESET),
    model("git archive", true, false, GIT_ARCHIVE),
    model("git init", true, false, GIT_INIT),
];

/// The model for `name` (`sort`, `git push`).
pub(crate) fn find(name: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.name == name)
}

/// The model for `command subcommand` (`git push`), without building the name.
pub(crate) fn find_sub(command: &str, subcommand: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| {
        m.name
            .strip_prefix(command)
            .and_then(|rest| rest.strip_prefix(' '))
            == Some(subcommand)
    })
}

/// git subcommands vouched for (their options still go through their model, if any). Any
/// other subcommand, an alias included, cannot be vouched for.
pub(crate) const GIT_SUBCOMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "commit-graph",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "difftool",
    "fetch",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "help",
    "init",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "merge",
    "merge-base",
    "mv",
    "name-rev",
    "notes",
    "pull",
    "push",
    "range-diff",
    "rebase",
    "reflog",
    "remote",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "stash",
    "status",
    "submodule",
    "switch",
    "tag",
    "version",
    "whatchanged",
    "worktree",
    "reset",
];

/// git subcommands that always run code or configuration the checker cannot vouch for.
pub(crate) const GIT_RUNNERS: &[&str] = &[
    "filter-branch",
    "filter-repo",
    "send-email",
    "instaweb",
    "web--browse",
    "daemon",
    "hook",
    "upload-pack",
    "receive-pack",
    "upload-archive",
    "shell",
    "credential",
    "credential-cache",
    "credential-store",
    "p4",
    "svn",
    "cvsimport",
    "cvsserver",
    "cvsexportcommit",
    "archimport",
    "quiltimport",
    "mergetool",
    "remote-ext",
    "remote-fd",
    "http-backend",
    "imap-send",
];

/// `git SUBCOMMAND WORD` pairs that run code (`git bisect run CMD`).
pub(crate) const GIT_RUNNING_ACTIONS: &[(&str, &str)] =
    &[("bisect", "run"), ("submodule", "foreach")];

/// `find` primaries that run a command or write and delete files.
pub(crate) const FIND_PRIMARIES: &[(&str, Effect)] = &[
    ("-exec", Runs),
    ("-execdir", Runs),
    ("-ok", Runs),
    ("-okdir", Runs),
    ("-delete", Writes),
    ("-fprint", Writes),
    ("-fprint0", Writes),
    ("-fprintf", Writes),
    ("-fls", Writes),
];

/// Global options that may stand between a command and its subcommand, for prefix rules
/// (`git -C . push` is `git push`): the option and whether it takes a value. Options not
/// listed are read conservatively (their next word may be a value or the subcommand).
pub(crate) const GLOBAL_OPTIONS: &[(&str, &[(&str, bool)])] = &[
    (
        "docker",
        &[
            ("--config", true),
            ("-c", true),
            ("--context", true),
            ("-D", false),
            ("--debug", false),
            ("-H", true),
            ("--host", true),
            ("-l", true),
            ("--log-level", true),
            ("--tls", false),
            ("--tlscacert", true),
            ("--tlscert", true),
            ("--tlskey", true),
            ("--tlsverify", false),
        ],
    ),
    (
        "kubectl",
        &[
            ("-n", true),
            ("--namespace", true),
            ("--context", true),
            ("--kubeconfig", true),
            ("--cluster", true),
            ("--user", true),
            ("-s", true),
            ("--server", true),
            ("--token", true),
            ("--as", true),
            ("--as-group", true),
            ("-v", true),
            ("--request-timeout", true),
            ("--insecure-skip-tls-verify", false),
        ],
    ),
    (
        "npm",
        &[
            ("--prefix", true),
            ("-w", true),
            ("--workspace", true),
            ("-g", false),
            ("--global", false),
            ("--loglevel", true),
            ("--registry", true),
            ("-C", true),
            ("--userconfig", true),
            ("-s", false),
            ("--silent", false),
            ("-q", false),
            ("--yes", false),
            ("-y", false),
        ],
    ),
    (
        "cargo",
        &[
            ("+", false),
            ("--locked", false),
            ("--offline", false),
            ("--frozen", false),
            ("-v", false),
            ("-vv", false),
            ("--verbose", false),
            ("-q", false),
            ("--quiet", false),
            ("--color", true),
            ("-Z", true),
            ("-C", true),
            ("--config", true),
        ],
    ),
];

/// Whether `word` is one of `command`'s global options, and whether it takes the next word as
/// its value. `None` when the command has a table and the word is not in it, or when the
/// command has no table. git's come from its model, [`GIT_GLOBAL`].
pub(crate) fn global_option(command: &str, word: &str) -> Option<bool> {
    if command == "git" {
        let (name, attached) = match word.split_once('=') {
            Some((name, _)) => (name, true),
            None => (word, false),
        };
        let opt = GIT_GLOBAL.iter().find(|o| {
            (!o.long.is_empty() && name.strip_prefix("--") == Some(o.long))
                || o.short
                    .is_some_and(|c| name.len() == 2 && name.starts_with('-') && name.ends_with(c))
        })?;
        return Some(opt.effect.needs_value() && !attached);
    }
    let (_, table) = GLOBAL_OPTIONS.iter().find(|(name, _)| *name == command)?;
    if command == "cargo" && word.starts_with('+') {
        return Some(false);
    }
    let (name, attached) = match word.split_once('=') {
        Some((name, _)) => (name, true),
        None => (word, false),
    };
    table
        .iter()
        .find(|(spelling, _)| *spelling == name)
        .map(|(_, takes)| *takes && !attached)
}
