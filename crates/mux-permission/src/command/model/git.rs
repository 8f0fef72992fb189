//! git: global options as git.c reads them (exact spellings), then a subcommand with a model.
//! Read subcommands are modelled broadly, write subcommands (add, commit, checkout, switch,
//! restore, fetch, pull, clone, rebase) by the options that only change what git itself does.
//! `--output`, `--ext-diff`, `--textconv`, `-c`, `--exec-path` and the like are never
//! explained; neither is a subcommand without a model (an alias may run anything).

use super::opt::Effect::{
    AttachedValue, Flag, OptionalValue, Runs, RunsConfigured, RunsOptional, Value, ValueUnlessLast,
    Writes,
};
use super::opt::{Opt, l, o, s};
use super::parse::check;
use super::spec::{Arg, Parsed};
use super::{Form, Kind, Lang, Model, Operands, PATHS, Style, TEXTS, model};

/// git's global options (git.c `handle_options`: exact spellings, stop at the subcommand). A
/// `Value` option takes the next word or an attached `=value`; `--list-cmds=` and
/// `--exec-path[=DIR]` only an attached one. The one list: the allow side explains the flags
/// and values here, and the deny scan reads the same list.
pub(crate) const GLOBAL: &[Opt] = &[
    s('C', Value),
    s('c', Runs),
    l("config-env", Runs),
    l("exec-path", RunsOptional),
    l("git-dir", Value),
    l("work-tree", Value),
    l("namespace", Value),
    l("list-cmds", AttachedValue),
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

/// Options of every command that shows diffs.
const DIFF: &[Opt] = &[
    o("patch", 'p', Flag),
    s('u', Flag),
    o("no-patch", 's', Flag),
    o("unified", 'U', OptionalValue),
    l("output", Writes),
    l("output-indicator-new", Value),
    l("output-indicator-old", Value),
    l("output-indicator-context", Value),
    l("raw", Flag),
    l("patch-with-raw", Flag),
    s('t', Flag),
    l("indent-heuristic", Flag),
    l("minimal", Flag),
    l("patience", Flag),
    l("histogram", Flag),
    l("anchored", Value),
    l("diff-algorithm", Value),
    l("stat", OptionalValue),
    l("stat-width", Value),
    l("stat-name-width", Value),
    l("stat-graph-width", Value),
    l("stat-count", Value),
    l("compact-summary", Flag),
    l("numstat", Flag),
    l("shortstat", Flag),
    s('X', OptionalValue),
    l("dirstat", OptionalValue),
    l("cumulative", Flag),
    l("dirstat-by-file", OptionalValue),
    l("summary", Flag),
    l("patch-with-stat", Flag),
    s('z', Flag),
    l("name-only", Flag),
    l("name-status", Flag),
    l("submodule", OptionalValue),
    l("color", OptionalValue),
    l("color-moved", OptionalValue),
    l("color-moved-ws", Value),
    l("word-diff", OptionalValue),
    l("word-diff-regex", Value),
    l("color-words", OptionalValue),
    l("no-renames", Flag),
    l("rename-empty", Flag),
    l("check", Flag),
    l("ws-error-highlight", Value),
    l("full-index", Flag),
    l("binary", Flag),
    l("abbrev", OptionalValue),
    o("break-rewrites", 'B', OptionalValue),
    o("find-renames", 'M', OptionalValue),
    o("find-copies", 'C', OptionalValue),
    l("find-copies-harder", Flag),
    o("irreversible-delete", 'D', Flag),
    s('l', Value),
    l("diff-filter", Value),
    s('S', Value),
    s('G', Value),
    l("find-object", Value),
    l("pickaxe-all", Flag),
    l("pickaxe-regex", Flag),
    s('O', Value),
    l("skip-to", Value),
    l("rotate-to", Value),
    s('R', Flag),
    l("relative", OptionalValue),
    o("text", 'a', Flag),
    l("ignore-cr-at-eol", Flag),
    l("ignore-space-at-eol", Flag),
    o("ignore-space-change", 'b', Flag),
    o("ignore-all-space", 'w', Flag),
    l("ignore-blank-lines", Flag),
    o("ignore-matching-lines", 'I', Value),
    l("inter-hunk-context", Value),
    o("function-context", 'W', Flag),
    l("exit-code", Flag),
    l("quiet", Flag),
    l("ext-diff", RunsConfigured),
    l("textconv", RunsConfigured),
    l("ignore-submodules", OptionalValue),
    l("src-prefix", Value),
    l("dst-prefix", Value),
    l("no-prefix", Flag),
    l("default-prefix", Flag),
    l("line-prefix", Value),
    l("ita-invisible-in-index", Flag),
    l("ita-visible-in-index", Flag),
    s('1', Flag),
    s('2', Flag),
    s('3', Flag),
    s('0', Flag),
];

/// Options of `git diff` itself.
const DIFF_ONLY: &[Opt] = &[
    l("cached", Flag),
    l("staged", Flag),
    l("merge-base", Flag),
    l("no-index", Flag),
    l("base", Flag),
    l("ours", Flag),
    l("theirs", Flag),
    o("help", 'h', Flag),
];

/// Revision walking and commit formatting: log, show, shortlog, rev-list, reflog. They share
/// git's revision parser, which would take `--output` through [`DIFF`] only where listed.
const REVS: &[Opt] = &[
    o("max-count", 'n', Value),
    l("skip", Value),
    l("since", Value),
    l("after", Value),
    l("since-as-filter", Value),
    l("until", Value),
    l("before", Value),
    l("max-age", Value),
    l("min-age", Value),
    l("author", Value),
    l("committer", Value),
    l("grep-reflog", Value),
    l("grep", Value),
    l("all-match", Flag),
    l("invert-grep", Flag),
    o("regexp-ignore-case", 'i', Flag),
    l("basic-regexp", Flag),
    o("extended-regexp", 'E', Flag),
    o("fixed-strings", 'F', Flag),
    o("perl-regexp", 'P', Flag),
    l("remove-empty", Flag),
    l("merges", Flag),
    l("no-merges", Flag),
    l("min-parents", AttachedValue),
    l("max-parents", AttachedValue),
    l("first-parent", Flag),
    l("exclude-first-parent-only", Flag),
    l("not", Flag),
    l("all", Flag),
    l("branches", OptionalValue),
    l("tags", OptionalValue),
    l("remotes", OptionalValue),
    l("glob", AttachedValue),
    l("exclude", AttachedValue),
    l("exclude-hidden", AttachedValue),
    l("reflog", Flag),
    l("alternate-refs", Flag),
    l("ignore-missing", Flag),
    l("bisect", Flag),
    l("cherry-mark", Flag),
    l("cherry-pick", Flag),
    l("left-only", Flag),
    l("right-only", Flag),
    l("cherry", Flag),
    o("walk-reflogs", 'g', Flag),
    l("merge", Flag),
    l("boundary", Flag),
    l("simplify-by-decoration", Flag),
    l("show-pulls", Flag),
    l("full-history", Flag),
    l("dense", Flag),
    l("sparse", Flag),
    l("simplify-merges", Flag),
    l("ancestry-path", OptionalValue),
    l("date-order", Flag),
    l("author-date-order", Flag),
    l("topo-order", Flag),
    l("reverse", Flag),
    l("no-walk", OptionalValue),
    l("do-walk", Flag),
    l("pretty", OptionalValue),
    l("format", AttachedValue),
    l("abbrev-commit", Flag),
    l("no-abbrev-commit", Flag),
    l("oneline", Flag),
    l("encoding", Value),
    l("expand-tabs", OptionalValue),
    l("no-expand-tabs", Flag),
    l("notes", OptionalValue),
    l("no-notes", Flag),
    l("show-notes-by-default", Flag),
    l("relative-date", Flag),
    l("date", Value),
    l("parents", Flag),
    l("children", Flag),
    l("left-right", Flag),
    l("graph", Flag),
    l("show-linear-break", OptionalValue),
    s('c', Flag),
    l("cc", Flag),
    l("dd", Flag),
    s('m', Flag),
    l("diff-merges", Value),
    l("no-diff-merges", Flag),
    l("combined-all-paths", Flag),
    l("remerge-diff", Flag),
    l("full-diff", Flag),
    l("log-size", Flag),
    l("follow", Flag),
    l("count", Flag),
    l("objects", Flag),
    l("objects-edge", Flag),
    l("in-commit-order", Flag),
    o("help", 'h', Flag),
];

/// Options only `git rev-list` takes (git log refuses them), and the pseudo-revisions it
/// shares with log (shortlog refuses them).
const REV_LIST_ONLY: &[Opt] = &[
    l("timestamp", Flag),
    l("header", Flag),
    l("stdin", Flag),
    l("single-worktree", Flag),
];

/// The options of `git log`, `git show` and `git reflog` beyond the revision walk (shortlog,
/// rev-list and format-patch refuse them).
const LOG_ONLY: &[Opt] = &[
    l("decorate", OptionalValue),
    l("no-decorate", Flag),
    l("decorate-refs", Value),
    l("decorate-refs-exclude", Value),
    l("clear-decorations", Flag),
    l("source", Flag),
    l("mailmap", Flag),
    l("use-mailmap", Flag),
    l("no-mailmap", Flag),
    l("no-use-mailmap", Flag),
    s('L', Value),
    l("stdin", Flag),
    l("single-worktree", Flag),
];

/// `git status`.
const STATUS: &[Opt] = &[
    o("short", 's', Flag),
    o("branch", 'b', Flag),
    l("show-stash", Flag),
    l("porcelain", OptionalValue),
    l("long", Flag),
    o("verbose", 'v', Flag),
    o("untracked-files", 'u', OptionalValue),
    l("ignore-submodules", OptionalValue),
    l("ignored", OptionalValue),
    s('z', Flag),
    l("column", OptionalValue),
    l("ahead-behind", Flag),
    l("renames", Flag),
    l("find-renames", OptionalValue),
];

const BRANCH: &[Opt] = &[
    o("all", 'a', Flag),
    o("remotes", 'r', Flag),
    o("verbose", 'v', Flag),
    o("list", 'l', Flag),
    l("show-current", Flag),
    l("contains", ValueUnlessLast),
    l("no-contains", ValueUnlessLast),
    l("merged", ValueUnlessLast),
    l("no-merged", ValueUnlessLast),
    l("points-at", Value),
    l("sort", Value),
    l("format", Value),
    l("color", OptionalValue),
    l("column", OptionalValue),
    o("ignore-case", 'i', Flag),
    l("omit-empty", Flag),
    l("abbrev", OptionalValue),
    o("quiet", 'q', Flag),
];

const TAG: &[Opt] = &[
    o("list", 'l', Flag),
    s('n', OptionalValue),
    l("contains", ValueUnlessLast),
    l("no-contains", ValueUnlessLast),
    l("merged", ValueUnlessLast),
    l("no-merged", ValueUnlessLast),
    l("points-at", ValueUnlessLast),
    l("sort", Value),
    l("format", Value),
    l("color", OptionalValue),
    o("ignore-case", 'i', Flag),
    l("column", OptionalValue),
    l("omit-empty", Flag),
];

const CONFIG: &[Opt] = &[
    l("global", Flag),
    l("system", Flag),
    l("local", Flag),
    l("worktree", Flag),
    o("file", 'f', Value),
    l("blob", Value),
    l("get", Flag),
    l("get-all", Flag),
    l("get-regexp", Flag),
    l("get-urlmatch", Flag),
    o("list", 'l', Flag),
    l("show-origin", Flag),
    l("show-scope", Flag),
    o("null", 'z', Flag),
    l("name-only", Flag),
    l("includes", Flag),
    l("type", Value),
    l("bool", Flag),
    l("int", Flag),
    l("bool-or-int", Flag),
    l("path", Flag),
    l("expiry-date", Flag),
    l("default", Value),
    l("value", Value),
    l("fixed-value", Flag),
    l("all", Flag),
    l("regexp", Flag),
    l("url", Value),
];

const REV_PARSE: &[Opt] = &[
    l("short", OptionalValue),
    l("abbrev-ref", OptionalValue),
    l("verify", Flag),
    o("quiet", 'q', Flag),
    l("show-toplevel", Flag),
    l("show-prefix", Flag),
    l("show-cdup", Flag),
    l("git-dir", Flag),
    l("git-common-dir", Flag),
    l("absolute-git-dir", Flag),
    l("is-inside-work-tree", Flag),
    l("is-inside-git-dir", Flag),
    l("is-bare-repository", Flag),
    l("is-shallow-repository", Flag),
    l("show-superproject-working-tree", Flag),
    l("shared-index-path", Flag),
    l("show-object-format", OptionalValue),
    l("show-ref-format", Flag),
    l("local-env-vars", Flag),
    l("symbolic", Flag),
    l("symbolic-full-name", Flag),
    l("all", Flag),
    l("branches", OptionalValue),
    l("tags", OptionalValue),
    l("remotes", OptionalValue),
    l("glob", AttachedValue),
    l("exclude", AttachedValue),
    l("disambiguate", AttachedValue),
    l("sq", Flag),
    l("sq-quote", Flag),
    l("default", Value),
    l("revs-only", Flag),
    l("no-revs", Flag),
    l("flags", Flag),
    l("no-flags", Flag),
    l("git-path", Value),
    l("resolve-git-dir", Value),
    l("since", AttachedValue),
    l("after", AttachedValue),
    l("until", AttachedValue),
    l("before", AttachedValue),
    l("path-format", Value),
];

const LS_FILES: &[Opt] = &[
    o("cached", 'c', Flag),
    o("deleted", 'd', Flag),
    o("modified", 'm', Flag),
    o("others", 'o', Flag),
    o("ignored", 'i', Flag),
    o("stage", 's', Flag),
    o("unmerged", 'u', Flag),
    o("killed", 'k', Flag),
    s('z', Flag),
    o("exclude", 'x', Value),
    o("exclude-from", 'X', Value),
    l("exclude-per-directory", Value),
    l("exclude-standard", Flag),
    l("error-unmatch", Flag),
    l("with-tree", Value),
    s('t', Flag),
    s('v', Flag),
    s('f', Flag),
    l("full-name", Flag),
    l("recurse-submodules", Flag),
    l("abbrev", OptionalValue),
    l("debug", Flag),
    l("eol", Flag),
    l("deduplicate", Flag),
    l("directory", Flag),
    l("no-empty-directory", Flag),
    l("sparse", Flag),
    l("format", Value),
];

const LS_TREE: &[Opt] = &[
    s('d', Flag),
    s('r', Flag),
    s('t', Flag),
    o("long", 'l', Flag),
    s('z', Flag),
    l("name-only", Flag),
    l("name-status", Flag),
    l("object-only", Flag),
    l("full-name", Flag),
    l("full-tree", Flag),
    l("abbrev", OptionalValue),
    l("format", Value),
];

const BLAME: &[Opt] = &[
    s('b', Flag),
    l("root", Flag),
    l("show-stats", Flag),
    s('L', Value),
    s('l', Flag),
    s('t', Flag),
    s('S', Value),
    l("reverse", Flag),
    l("first-parent", Flag),
    o("porcelain", 'p', Flag),
    l("line-porcelain", Flag),
    l("incremental", Flag),
    l("encoding", Value),
    l("contents", Value),
    l("date", Value),
    l("progress", Flag),
    s('M', OptionalValue),
    s('C', OptionalValue),
    l("ignore-rev", Value),
    l("ignore-revs-file", Value),
    l("color-lines", Flag),
    l("color-by-age", Flag),
    s('c', Flag),
    s('s', Flag),
    o("show-email", 'e', Flag),
    o("show-name", 'f', Flag),
    o("show-number", 'n', Flag),
    s('w', Flag),
    l("abbrev", OptionalValue),
];

const DESCRIBE: &[Opt] = &[
    l("all", Flag),
    l("tags", Flag),
    l("contains", Flag),
    l("abbrev", OptionalValue),
    l("candidates", Value),
    l("exact-match", Flag),
    l("debug", Flag),
    l("long", Flag),
    l("match", Value),
    l("exclude", Value),
    l("always", Flag),
    l("first-parent", Flag),
    l("dirty", OptionalValue),
    l("broken", OptionalValue),
];

const SHORTLOG: &[Opt] = &[
    o("numbered", 'n', Flag),
    o("summary", 's', Flag),
    o("email", 'e', Flag),
    s('w', OptionalValue),
    l("group", Value),
    o("committer", 'c', Flag),
];

const GREP: &[Opt] = &[
    l("cached", Flag),
    l("untracked", Flag),
    l("no-index", Flag),
    l("no-exclude-standard", Flag),
    l("exclude-standard", Flag),
    l("recurse-submodules", Flag),
    o("text", 'a', Flag),
    l("textconv", RunsConfigured),
    o("ignore-case", 'i', Flag),
    s('I', Flag),
    l("max-depth", Value),
    o("recursive", 'r', Flag),
    o("word-regexp", 'w', Flag),
    o("invert-match", 'v', Flag),
    s('h', Flag),
    s('H', Flag),
    l("full-name", Flag),
    o("extended-regexp", 'E', Flag),
    o("basic-regexp", 'G', Flag),
    o("perl-regexp", 'P', Flag),
    o("fixed-strings", 'F', Flag),
    o("line-number", 'n', Flag),
    l("column", Flag),
    o("files-with-matches", 'l', Flag),
    l("name-only", Flag),
    o("files-without-match", 'L', Flag),
    o("open-files-in-pager", 'O', RunsOptional),
    o("null", 'z', Flag),
    o("only-matching", 'o', Flag),
    o("count", 'c', Flag),
    l("color", OptionalValue),
    l("break", Flag),
    l("heading", Flag),
    o("show-function", 'p', Flag),
    o("after-context", 'A', Value),
    o("before-context", 'B', Value),
    o("context", 'C', Value),
    o("function-context", 'W', Flag),
    o("max-count", 'm', Value),
    l("threads", Value),
    s('f', Value),
    s('e', Value),
    l("and", Flag),
    l("or", Flag),
    l("not", Flag),
    l("all-match", Flag),
    o("quiet", 'q', Flag),
];

const REMOTE: &[Opt] = &[
    o("verbose", 'v', Flag),
    s('n', Flag),
    l("push", Flag),
    l("all", Flag),
];

const WORKTREE: &[Opt] = &[
    l("porcelain", Flag),
    o("verbose", 'v', Flag),
    s('z', Flag),
    l("expire", Value),
];

const STASH_SHOW: &[Opt] = &[o("include-untracked", 'u', Flag), l("only-untracked", Flag)];

const ADD: &[Opt] = &[
    o("dry-run", 'n', Flag),
    o("verbose", 'v', Flag),
    o("force", 'f', Flag),
    o("update", 'u', Flag),
    o("all", 'A', Flag),
    l("ignore-removal", Flag),
    o("intent-to-add", 'N', Flag),
    l("refresh", Flag),
    l("ignore-errors", Flag),
    l("ignore-missing", Flag),
    l("sparse", Flag),
    l("renormalize", Flag),
    l("chmod", Value),
    l("pathspec-from-file", Value),
    l("pathspec-file-nul", Flag),
];

const COMMIT: &[Opt] = &[
    o("all", 'a', Flag),
    o("reuse-message", 'C', Value),
    l("fixup", Value),
    l("squash", Value),
    l("reset-author", Flag),
    l("short", Flag),
    l("branch", Flag),
    l("porcelain", Flag),
    l("long", Flag),
    o("null", 'z', Flag),
    o("file", 'F', Value),
    l("author", Value),
    l("date", Value),
    o("message", 'm', Value),
    o("template", 't', Value),
    o("signoff", 's', Flag),
    l("trailer", Value),
    o("no-verify", 'n', Flag),
    l("verify", Flag),
    l("allow-empty", Flag),
    l("allow-empty-message", Flag),
    l("cleanup", Value),
    l("amend", Flag),
    l("no-post-rewrite", Flag),
    o("include", 'i', Flag),
    o("only", 'o', Flag),
    l("pathspec-from-file", Value),
    l("pathspec-file-nul", Flag),
    o("untracked-files", 'u', OptionalValue),
    o("verbose", 'v', Flag),
    o("quiet", 'q', Flag),
    l("dry-run", Flag),
    l("status", Flag),
];

const CHECKOUT: &[Opt] = &[
    o("quiet", 'q', Flag),
    o("force", 'f', Flag),
    l("ours", Flag),
    l("theirs", Flag),
    s('b', Value),
    s('B', Value),
    o("track", 't', OptionalValue),
    l("guess", Flag),
    s('l', Flag),
    o("detach", 'd', Flag),
    l("orphan", Value),
    l("ignore-skip-worktree-bits", Flag),
    o("merge", 'm', Flag),
    l("conflict", Value),
    l("ignore-other-worktrees", Flag),
    l("overwrite-ignore", Flag),
    l("recurse-submodules", OptionalValue),
    l("overlay", Flag),
    l("progress", Flag),
    l("pathspec-from-file", Value),
    l("pathspec-file-nul", Flag),
];

const SWITCH: &[Opt] = &[
    o("create", 'c', Value),
    o("force-create", 'C', Value),
    o("detach", 'd', Flag),
    l("guess", Flag),
    o("discard-changes", 'f', Flag),
    l("force", Flag),
    o("merge", 'm', Flag),
    l("conflict", Value),
    o("quiet", 'q', Flag),
    l("progress", Flag),
    o("track", 't', OptionalValue),
    l("orphan", Value),
    l("ignore-other-worktrees", Flag),
    l("recurse-submodules", OptionalValue),
];

const RESTORE: &[Opt] = &[
    o("source", 's', Value),
    o("worktree", 'W', Flag),
    o("staged", 'S', Flag),
    o("quiet", 'q', Flag),
    l("progress", Flag),
    l("ours", Flag),
    l("theirs", Flag),
    o("merge", 'm', Flag),
    l("conflict", Value),
    l("ignore-unmerged", Flag),
    l("ignore-skip-worktree-bits", Flag),
    l("recurse-submodules", OptionalValue),
    l("overlay", Flag),
    l("pathspec-from-file", Value),
    l("pathspec-file-nul", Flag),
];

/// fetch, pull, clone and ls-remote: `--upload-pack`, `-c` and `--template` run code.
const FETCH: &[Opt] = &[
    l("all", Flag),
    o("append", 'a', Flag),
    l("atomic", Flag),
    l("depth", Value),
    l("deepen", Value),
    l("shallow-since", Value),
    l("shallow-exclude", Value),
    l("unshallow", Flag),
    l("update-shallow", Flag),
    l("dry-run", Flag),
    o("force", 'f', Flag),
    o("keep", 'k', Flag),
    l("multiple", Flag),
    o("prune", 'p', Flag),
    o("prune-tags", 'P', Flag),
    o("tags", 't', Flag),
    l("refetch", Flag),
    o("jobs", 'j', Value),
    l("recurse-submodules", OptionalValue),
    o("quiet", 'q', Flag),
    o("verbose", 'v', Flag),
    l("progress", Flag),
    l("set-upstream", Flag),
    l("upload-pack", Runs),
    o("server-option", 'o', Value),
    o("ipv4", '4', Flag),
    o("ipv6", '6', Flag),
    l("filter", Value),
    l("negotiation-tip", Value),
    l("porcelain", Flag),
    l("write-fetch-head", Flag),
    l("show-forced-updates", Flag),
    o("update-head-ok", 'u', Flag),
];

/// The fetch options `git pull` passes on (it refuses the others).
const PULL_FETCH: &[Opt] = &[
    l("all", Flag),
    o("append", 'a', Flag),
    l("depth", Value),
    l("deepen", Value),
    l("shallow-since", Value),
    l("shallow-exclude", Value),
    l("unshallow", Flag),
    l("update-shallow", Flag),
    l("dry-run", Flag),
    o("force", 'f', Flag),
    o("keep", 'k', Flag),
    o("prune", 'p', Flag),
    o("tags", 't', Flag),
    o("jobs", 'j', AttachedValue),
    l("recurse-submodules", OptionalValue),
    o("quiet", 'q', Flag),
    o("verbose", 'v', Flag),
    l("progress", Flag),
    l("set-upstream", Flag),
    l("upload-pack", Runs),
    o("server-option", 'o', Value),
    o("ipv4", '4', Flag),
    o("ipv6", '6', Flag),
    l("negotiation-tip", Value),
    l("show-forced-updates", Flag),
];

const PULL: &[Opt] = &[
    l("rebase", OptionalValue),
    l("ff", Flag),
    l("ff-only", Flag),
    l("squash", Flag),
    l("autostash", Flag),
    l("stat", Flag),
];

const CLONE: &[Opt] = &[
    l("template", Runs),
    o("config", 'c', Runs),
    o("upload-pack", 'u', Runs),
    l("depth", Value),
    o("branch", 'b', Value),
    o("origin", 'o', Value),
    o("quiet", 'q', Flag),
    o("verbose", 'v', Flag),
    l("progress", Flag),
    o("no-checkout", 'n', Flag),
    l("bare", Flag),
    l("mirror", Flag),
    l("single-branch", Flag),
    l("tags", Flag),
    l("shallow-since", Value),
    l("shallow-exclude", Value),
    l("filter", Value),
    l("sparse", Flag),
    l("recurse-submodules", OptionalValue),
    o("jobs", 'j', Value),
];

const LS_REMOTE: &[Opt] = &[
    l("heads", Flag),
    l("branches", Flag),
    o("tags", 't', Flag),
    l("refs", Flag),
    l("upload-pack", Runs),
    o("quiet", 'q', Flag),
    l("exit-code", Flag),
    l("get-url", Flag),
    l("symref", Flag),
    l("sort", Value),
    o("server-option", 'o', Value),
];

const REBASE: &[Opt] = &[
    l("onto", Value),
    l("keep-base", Flag),
    l("continue", Flag),
    l("abort", Flag),
    l("quit", Flag),
    l("skip", Flag),
    l("show-current-patch", Flag),
    o("interactive", 'i', Flag),
    l("autosquash", Flag),
    l("autostash", Flag),
    o("quiet", 'q', Flag),
    o("verbose", 'v', Flag),
    l("root", Flag),
    l("update-refs", Flag),
    o("rebase-merges", 'r', OptionalValue),
    l("committer-date-is-author-date", Flag),
    l("ignore-date", Flag),
    l("reset-author-date", Flag),
    o("exec", 'x', Runs),
    o("strategy", 's', Runs),
    o("strategy-option", 'X', Runs),
];

const DIFFTOOL: &[Opt] = &[
    o("no-prompt", 'y', Flag),
    l("prompt", Flag),
    o("dir-diff", 'd', Flag),
    o("gui", 'g', Flag),
    l("cached", Flag),
    l("staged", Flag),
    l("trust-exit-code", Flag),
    o("extcmd", 'x', Runs),
    o("tool", 't', Runs),
    l("symlinks", Flag),
];

const MERGE_BASE: &[Opt] = &[
    o("all", 'a', Flag),
    l("octopus", Flag),
    l("independent", Flag),
    l("is-ancestor", Flag),
    l("fork-point", Flag),
];

const FOR_EACH_REF: &[Opt] = &[
    l("format", Value),
    l("sort", Value),
    l("count", Value),
    l("points-at", Value),
    l("merged", ValueUnlessLast),
    l("no-merged", ValueUnlessLast),
    l("contains", ValueUnlessLast),
    l("no-contains", ValueUnlessLast),
    l("exclude", Value),
    l("ignore-case", Flag),
    l("omit-empty", Flag),
    l("shell", Flag),
    l("perl", Flag),
    l("python", Flag),
    l("tcl", Flag),
    l("color", OptionalValue),
];

const SHOW_REF: &[Opt] = &[
    l("head", Flag),
    l("branches", Flag),
    l("heads", Flag),
    l("tags", Flag),
    o("dereference", 'd', Flag),
    o("hash", 's', OptionalValue),
    l("verify", Flag),
    l("exists", Flag),
    l("abbrev", OptionalValue),
    o("quiet", 'q', Flag),
];

const CAT_FILE: &[Opt] = &[
    s('t', Flag),
    s('s', Flag),
    s('e', Flag),
    s('p', Flag),
    l("allow-unknown-type", Flag),
    l("batch", OptionalValue),
    l("batch-check", OptionalValue),
    l("batch-command", OptionalValue),
    l("batch-all-objects", Flag),
    l("buffer", Flag),
    l("unordered", Flag),
    l("follow-symlinks", Flag),
    s('z', Flag),
    s('Z', Flag),
    l("textconv", RunsConfigured),
    l("filters", RunsConfigured),
];

const COUNT_OBJECTS: &[Opt] = &[o("verbose", 'v', Flag), o("human-readable", 'H', Flag)];

const CHECK_IGNORE: &[Opt] = &[
    o("quiet", 'q', Flag),
    o("verbose", 'v', Flag),
    o("non-matching", 'n', Flag),
    l("no-index", Flag),
    l("stdin", Flag),
    s('z', Flag),
];

const NAME_REV: &[Opt] = &[
    l("tags", Flag),
    l("refs", Value),
    l("exclude", Value),
    l("all", Flag),
    l("annotate-stdin", Flag),
    l("name-only", Flag),
    l("no-undefined", Flag),
    l("always", Flag),
];

const NO_OPTIONS: &[Opt] = &[];

const VERSION: &[Opt] = &[l("build-options", Flag)];

/// A subcommand's model: its option groups and operands.
pub(super) struct Sub {
    /// The subcommand (`stash` actions under [`STASH`]).
    pub(super) name: &'static str,
    /// Its option tables.
    pub(super) options: &'static [&'static [Opt]],
    operands: Operands,
    numeric: bool,
    form: Option<Form>,
    /// How its parser reads long options: parse-options abbreviates them, except when it keeps
    /// unknown options for the revision parser (log, diff, blame, ...), which takes none.
    pub(super) style: Style,
}

const fn sub(name: &'static str, options: &'static [&'static [Opt]], operands: Operands) -> Sub {
    Sub {
        name,
        options,
        operands,
        numeric: false,
        form: None,
        style: Style::Git,
    }
}

/// A subcommand read by git's revision and diff parser, which takes no abbreviations.
const fn exact(sub: Sub) -> Sub {
    Sub {
        style: Style::GitExact,
        ..sub
    }
}

impl Sub {
    /// The model the allow side and the deny scan read this subcommand through.
    pub(super) fn model(&self) -> Model {
        let (first, more) = self.options.split_first().unwrap_or((&NO_OPTIONS, &[]));
        Model {
            numeric: self.numeric,
            form: self.form,
            more,
            program_options: &["regexp"],
            ..model(self.name, self.style, first, self.operands)
        }
    }
}

const LOGS: &[&[Opt]] = &[REVS, LOG_ONLY, DIFF];

pub(super) const SUBS: &[Sub] = &[
    sub("status", &[STATUS], PATHS),
    Sub {
        numeric: true,
        style: Style::GitExact,
        ..sub("log", LOGS, PATHS)
    },
    Sub {
        numeric: true,
        style: Style::GitExact,
        ..sub("whatchanged", LOGS, PATHS)
    },
    Sub {
        numeric: true,
        style: Style::GitExact,
        ..sub("show", LOGS, PATHS)
    },
    exact(sub("diff", &[DIFF, DIFF_ONLY], PATHS)),
    Sub {
        numeric: true,
        style: Style::GitExact,
        ..sub("shortlog", &[SHORTLOG, REVS], PATHS)
    },
    Sub {
        numeric: true,
        style: Style::GitExact,
        ..sub("rev-list", &[REVS, REV_LIST_ONLY], TEXTS)
    },
    Sub {
        numeric: true,
        form: Some(reflog_form),
        style: Style::GitExact,
        ..sub("reflog", &[REVS, LOG_ONLY], TEXTS)
    },
    Sub {
        form: Some(branch_form),
        ..sub("branch", &[BRANCH], TEXTS)
    },
    Sub {
        form: Some(tag_form),
        ..sub("tag", &[TAG], TEXTS)
    },
    Sub {
        form: Some(config_form),
        style: Style::GitExact,
        ..sub("config", &[CONFIG], TEXTS)
    },
    Sub {
        form: Some(remote_form),
        style: Style::GitExact,
        ..sub("remote", &[REMOTE], TEXTS)
    },
    Sub {
        form: Some(worktree_form),
        ..sub("worktree", &[WORKTREE], TEXTS)
    },
    exact(sub("rev-parse", &[REV_PARSE], TEXTS)),
    sub("ls-files", &[LS_FILES], PATHS),
    sub("ls-tree", &[LS_TREE], TEXTS),
    exact(sub("blame", &[BLAME], TEXTS)),
    exact(sub("annotate", &[BLAME], TEXTS)),
    sub("describe", &[DESCRIBE], TEXTS),
    sub("merge-base", &[MERGE_BASE], TEXTS),
    sub("for-each-ref", &[FOR_EACH_REF], TEXTS),
    sub("show-ref", &[SHOW_REF], TEXTS),
    sub("cat-file", &[CAT_FILE], TEXTS),
    sub(
        "count-objects",
        &[COUNT_OBJECTS],
        Operands {
            leading: &[],
            rest: None,
        },
    ),
    sub("check-ignore", &[CHECK_IGNORE], PATHS),
    sub("name-rev", &[NAME_REV], TEXTS),
    sub(
        "version",
        &[VERSION],
        Operands {
            leading: &[],
            rest: None,
        },
    ),
    Sub {
        numeric: true,
        ..sub(
            "grep",
            &[GREP],
            Operands {
                leading: &[Kind::Program(Lang::Regex)],
                rest: Some(Kind::Path),
            },
        )
    },
    sub("add", &[ADD], PATHS),
    sub("commit", &[COMMIT], PATHS),
    sub("checkout", &[CHECKOUT], TEXTS),
    sub("switch", &[SWITCH], TEXTS),
    sub("restore", &[RESTORE], PATHS),
    sub("fetch", &[FETCH], TEXTS),
    sub("pull", &[PULL_FETCH, PULL], TEXTS),
    sub("clone", &[CLONE], TEXTS),
    sub("ls-remote", &[LS_REMOTE], TEXTS),
    sub("rebase", &[REBASE], TEXTS),
    exact(sub("difftool", &[DIFFTOOL], TEXTS)),
];

/// `git stash list` takes log options; `git stash show` diff options. Other stash commands
/// change the repository and have no model.
pub(super) const STASH: &[Sub] = &[
    Sub {
        numeric: true,
        style: Style::GitExact,
        ..sub(
            "list",
            LOGS,
            Operands {
                leading: &[],
                rest: None,
            },
        )
    },
    exact(sub("show", &[DIFF, STASH_SHOW], TEXTS)),
];

/// `git config` only reads: one key and no value in the legacy form, or a reading action with
/// the operands it takes. The three-argument form (`git config KEY VALUE PATTERN`) and every
/// `set`/`unset`/`edit` form write.
fn config_form(parsed: &Parsed<'_>) -> Result<(), String> {
    let ops = &parsed.operands;
    if parsed.option_after_operand {
        // git config stops reading options at its first operand: `git config user.email
        // --name-only` sets the key to `--name-only` (found by the differential oracle).
        return Err(format!(
            "`git config {}`: a word that looks like an option after the key is a value",
            ops.join(" ")
        ));
    }
    let writes = || {
        Err(format!(
            "`git config {}` may set a key (the model allows only reading forms)",
            ops.join(" ")
        ))
    };
    match ops.first().copied() {
        Some("get") if ops.len() == 2 => return Ok(()),
        Some("list") if ops.len() == 1 => return Ok(()),
        Some("get" | "list" | "set" | "unset" | "rename-section" | "remove-section" | "edit") => {
            return writes();
        }
        _ => {}
    }
    let count = ops.len();
    let fits = if parsed.has("list") {
        count == 0
    } else if parsed.has("get") || parsed.has("get-all") || parsed.has("get-regexp") {
        (1..=2).contains(&count)
    } else if parsed.has("get-urlmatch") {
        count == 2
    } else {
        count == 1
    };
    if fits { Ok(()) } else { writes() }
}

/// Whether `git branch` or `git tag` was asked to list: `--list`, or a filter that only a
/// listing takes.
fn lists_refs(parsed: &Parsed<'_>) -> bool {
    parsed.has("list")
        || [
            "contains",
            "no-contains",
            "merged",
            "no-merged",
            "points-at",
        ]
        .iter()
        .any(|o| parsed.has(o))
}

fn branch_form(parsed: &Parsed<'_>) -> Result<(), String> {
    if parsed.operands.is_empty() || lists_refs(parsed) {
        Ok(())
    } else {
        Err("`git branch NAME` creates a branch".to_owned())
    }
}

fn tag_form(parsed: &Parsed<'_>) -> Result<(), String> {
    if parsed.operands.is_empty() || lists_refs(parsed) || parsed.has_short('n') {
        Ok(())
    } else {
        Err("`git tag NAME` creates a tag".to_owned())
    }
}

fn reflog_form(parsed: &Parsed<'_>) -> Result<(), String> {
    match parsed.operands.first().copied() {
        Some(action @ ("expire" | "delete" | "drop" | "write")) => {
            Err(format!("`git reflog {action}` changes the reflog"))
        }
        _ => Ok(()),
    }
}

fn remote_form(parsed: &Parsed<'_>) -> Result<(), String> {
    match parsed.operands.as_slice() {
        [] | ["show", ..] | ["get-url", _] => Ok(()),
        [action, ..] => Err(format!("`git remote {action}` is not a reading form")),
    }
}

fn worktree_form(parsed: &Parsed<'_>) -> Result<(), String> {
    match parsed.operands.as_slice() {
        ["list"] => Ok(()),
        _ => Err("only `git worktree list` is modelled".to_owned()),
    }
}

/// Subcommands the deny scan reads but no model explains: what their options run or write.
const FORMAT_PATCH: &[Opt] = &[
    l("output", Writes),
    o("output-directory", 'o', Writes),
    l("cc", Value),
    o("numbered", 'n', Flag),
];

/// `git submodule`: `--upload-pack`-like options reach its fetches and clones.
const SUBMODULE: &[Opt] = &[
    l("upload-pack", Runs),
    o("config", 'c', Runs),
    l("template", Runs),
    o("origin", 'o', Value),
    o("branch", 'b', Value),
    l("depth", Value),
    s('u', Runs),
];

const PUSH: &[Opt] = &[
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

const RESET: &[Opt] = &[
    l("hard", Flag),
    l("soft", Flag),
    l("mixed", Flag),
    l("merge", Flag),
    l("keep", Flag),
    o("quiet", 'q', Flag),
    o("patch", 'p', Flag),
];

const ARCHIVE: &[Opt] = &[
    o("output", 'o', Writes),
    l("exec", Runs),
    l("remote", Value),
    l("format", AttachedValue),
    l("prefix", AttachedValue),
];

const INIT: &[Opt] = &[l("template", Runs), l("separate-git-dir", Value)];

/// Read by the deny scan only (see [`reading`]); `push` and `send-pack` stand for their
/// forced forms with `+REF` (see [`PUSH_PLUS`]).
pub(super) const SCANNED: &[Sub] = &[
    exact(sub("diff-tree", LOGS, TEXTS)),
    exact(sub("diff-index", LOGS, TEXTS)),
    exact(sub("diff-files", LOGS, TEXTS)),
    exact(sub("range-diff", LOGS, TEXTS)),
    exact(sub("format-patch", &[FORMAT_PATCH, REVS, DIFF], TEXTS)),
    sub("submodule", &[SUBMODULE], TEXTS),
    sub("push", &[PUSH], TEXTS),
    sub("send-pack", &[PUSH], TEXTS),
    sub("reset", &[RESET], PATHS),
    sub("archive", &[ARCHIVE], TEXTS),
    sub("init", &[INIT], TEXTS),
];

/// `git push origin +main` is a forced push: the operand prefix `+` stands for `--force`.
const PUSH_PLUS: &str = "force";

/// git subcommands vouched for (their options still go through their model, if any). Any
/// other subcommand, an alias included, cannot be vouched for.
pub(crate) const SUBCOMMANDS: &[&str] = &[
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
pub(crate) const RUNNERS: &[&str] = &[
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
pub(crate) const RUNNING_ACTIONS: &[(&str, &str)] = &[("bisect", "run"), ("submodule", "foreach")];

/// The global option `word` names (`--git-dir=DIR`, `-C`), and whether it has a value
/// attached. A short option never has one (git.c reads `-C` and `-c` apart from their value).
pub(crate) fn global(word: &str) -> Option<(&'static Opt, bool)> {
    let (name, attached) = match word.split_once('=') {
        Some((name, _)) => (name, true),
        None => (word, false),
    };
    GLOBAL
        .iter()
        .find(|o| {
            (!o.long.is_empty() && name.strip_prefix("--") == Some(o.long))
                || o.short.is_some_and(|c| {
                    !attached && name.len() == 2 && name.starts_with('-') && name.ends_with(c)
                })
        })
        .map(|o| (o, attached))
}

/// git's global options as the deny scan reads them: exact spellings, unknown ones refused,
/// parsing stops at the subcommand.
pub(crate) const GLOBAL_MODEL: Model = Model {
    strict: true,
    stops_at_operand: true,
    ..model("git", Style::Exact, GLOBAL, TEXTS)
};

/// The model of `git SUBCOMMAND` for the deny scan: the subcommand's model when it has one,
/// else the options of a subcommand read only for what it runs or writes.
pub(crate) fn reading(subcommand: &str) -> Option<Model> {
    let found = SUBS.iter().chain(SCANNED).find(|s| s.name == subcommand)?;
    Some(Model {
        form: None,
        program_options: &[],
        plus_operand: matches!(subcommand, "push" | "send-pack").then_some(PUSH_PLUS),
        ..found.model()
    })
}

/// Explains `git ARGS`.
pub(crate) fn explain(args: &[Arg<'_>]) -> Result<(), String> {
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        let t = arg.text;
        if !t.starts_with('-') {
            break;
        }
        if arg.glob.is_some() {
            return Err(format!(
                "the pattern `{t}` could expand to options of `git`"
            ));
        }
        i += 1;
        let known = global(t);
        let value = match known.map(|(opt, attached)| (opt.effect, attached)) {
            Some((Flag, false)) => None,
            Some((Value | OptionalValue, true)) => t.split_once('=').map(|(_, value)| value),
            Some((Value, false)) => match args.get(i) {
                Some(value) if value.glob.is_none() => {
                    i += 1;
                    Some(value.text)
                }
                _ => return Err(format!("`git {t}` lacks its value")),
            },
            _ => {
                return Err(format!(
                    "`git {t}` is a global option the model does not explain"
                ));
            }
        };
        if let Some((opt, _)) = known {
            own_repository(opt, value)?;
        }
    }
    let Some(subcommand) = args.get(i) else {
        return Ok(());
    };
    if subcommand.glob.is_some() {
        return Err("the git subcommand is a pattern".to_owned());
    }
    let mut rest = &args[i + 1..];
    let (table, name) = if subcommand.text == "stash" {
        let Some(action) = rest.first() else {
            return Err("`git stash` saves changes".to_owned());
        };
        rest = &rest[1..];
        (STASH, action.text)
    } else {
        (SUBS, subcommand.text)
    };
    let Some(found) = table.iter().find(|s| s.name == name) else {
        return Err(format!(
            "`git {}` has no model (an alias or a subcommand that may run or write anything)",
            subcommand.text
        ));
    };
    check(&found.model(), rest).map(|_| ())
}

/// Whether the global option `opt` (with its `value`) keeps git on the root's own repository:
/// `-C` and `--work-tree` may name only the working directory (`.`), `--git-dir` only its
/// `.git`, and `--bare` (the working directory read as a repository) never passes. Any other
/// git directory may be one the agent wrote, whose config names programs git runs
/// (`core.fsmonitor`, hooks, a pager), so the model cannot vouch for it.
fn own_repository(opt: &Opt, value: Option<&str>) -> Result<(), String> {
    let wanted: &[&str] = match (opt.long, opt.short) {
        ("git-dir", _) => &[".git"],
        ("work-tree", _) | (_, Some('C')) => &[],
        ("bare", _) => {
            return Err(
                "`git --bare` reads the working directory as a git directory the model cannot vouch for"
                    .to_owned(),
            );
        }
        _ => return Ok(()),
    };
    let value = value.unwrap_or_default();
    let parts: Vec<&str> = value
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    if !value.starts_with('/') && parts == wanted {
        return Ok(());
    }
    let name = if opt.long.is_empty() {
        "-C".to_owned()
    } else {
        format!("--{}", opt.long)
    };
    Err(format!(
        "`git {name} {value}` names a git directory other than the root's own `.git`, which the model cannot vouch for"
    ))
}

/// Whether `git config ARGS` only reads, as the model reads it (for the deny scan, which
/// parses the values of every other form as commands).
pub(crate) fn config_reads(args: &[String]) -> bool {
    let args: Vec<Arg<'_>> = args.iter().map(|text| Arg { text, glob: None }).collect();
    let Some(config) = SUBS.iter().find(|s| s.name == "config") else {
        return false;
    };
    let model = Model {
        form: config.form,
        ..model("config", Style::Git, CONFIG, config.operands)
    };
    check(&model, &args).is_ok()
}
