//! Mutation operators toward the places where two parsers read one text differently: bash and
//! tree-sitter-bash (line continuations, escaped whitespace, `#`, tabs, quoting forms), awk and
//! the awk checker (`/` as regex or division), git and the option tables (spellings, arities),
//! jq and the jq checker (`$ ENV`), plus the payloads an unsafe answer would let run.
//!
//! Every operator edits the text and reports whether it applied; the search composes several.

use crate::rng::Rng;

/// One mutation operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Op {
    /// A line continuation (`\` + newline) between, inside or at the start of words.
    Continuation,
    /// A backslash-escaped TAB or space.
    EscapedSpace,
    /// A `#` at a word's start or middle, or right after a continuation or escaped blank.
    Hash,
    /// A TAB for a space, or a TAB inserted.
    Tab,
    /// A comment, at the end of a word or on a line of its own.
    Comment,
    /// A word re-quoted: `'…'`, `"…"`, `$'…'`, `$"…"`, or half quoted.
    Quote,
    /// A newline for a list operator or between words.
    Newline,
    /// An awk regex literal where a checker could read a division: after `print`, at a line
    /// start, after `(`; or a division made to look like a regex.
    AwkSlash,
    /// An awk statement that runs or writes: `system()`, a pipe, `getline`, `print > file`.
    AwkPayload,
    /// jq's environment spelled apart: `$ ENV`, `$\tENV`, `$` and `ENV` split by a comment.
    JqEnv,
    /// An option spelled otherwise: `--opt=v` / `--opt v`, attached `-Uv`, split clusters,
    /// abbreviated long options.
    OptionSpelling,
    /// An option of the program followed by a word whose arity matters: `--output=F`, `-o F`,
    /// a path.
    Arity,
    /// A shell payload appended: `; ./canary`, `; touch CANARY-RAN`, a pipe, a newline.
    Payload,
    /// Two corpus entries joined by a list operator or a pipe.
    Splice,
}

impl Op {
    /// Every operator, in report order.
    pub(crate) const ALL: [Op; 14] = [
        Op::Continuation,
        Op::EscapedSpace,
        Op::Hash,
        Op::Tab,
        Op::Comment,
        Op::Quote,
        Op::Newline,
        Op::AwkSlash,
        Op::AwkPayload,
        Op::JqEnv,
        Op::OptionSpelling,
        Op::Arity,
        Op::Payload,
        Op::Splice,
    ];

    /// A short name.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Op::Continuation => "continuation",
            Op::EscapedSpace => "escaped-blank",
            Op::Hash => "hash",
            Op::Tab => "tab",
            Op::Comment => "comment",
            Op::Quote => "quote",
            Op::Newline => "newline",
            Op::AwkSlash => "awk-slash",
            Op::AwkPayload => "awk-payload",
            Op::JqEnv => "jq-env",
            Op::OptionSpelling => "option-spelling",
            Op::Arity => "arity",
            Op::Payload => "payload",
            Op::Splice => "splice",
        }
    }

    /// The operator's bit in an [`Ops`] set.
    pub(crate) fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// How often the search draws it for a seed of `program`, relative to the others: the
    /// operators of the program's own language count three times.
    fn weight(self, program: &str) -> usize {
        let own = match self {
            Op::AwkSlash | Op::AwkPayload => program == "awk",
            Op::JqEnv => program == "jq",
            Op::Arity | Op::OptionSpelling => !matches!(program, "echo" | "pwd" | "sh"),
            _ => false,
        };
        self.base_weight() * if own { 3 } else { 1 }
    }

    fn base_weight(self) -> usize {
        match self {
            Op::Continuation | Op::Hash | Op::Payload | Op::Arity => 4,
            Op::EscapedSpace | Op::AwkSlash | Op::AwkPayload | Op::OptionSpelling => 3,
            Op::Tab | Op::Comment | Op::Quote | Op::JqEnv => 2,
            Op::Newline | Op::Splice => 1,
        }
    }
}

/// A set of operators (one bit each).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Ops(pub(crate) u32);

impl Ops {
    /// The set with `op` added.
    pub(crate) fn with(self, op: Op) -> Self {
        Self(self.0 | op.bit())
    }

    /// Whether `op` is in the set.
    pub(crate) fn has(self, op: Op) -> bool {
        self.0 & op.bit() != 0
    }

    /// Whether any of `ops` is in the set.
    pub(crate) fn any(self, ops: &[Op]) -> bool {
        ops.iter().any(|op| self.has(*op))
    }

    /// The operators' names joined by `+`.
    pub(crate) fn label(self) -> String {
        let names: Vec<&str> = Op::ALL
            .iter()
            .filter(|op| self.has(**op))
            .map(|op| op.label())
            .collect();
        if names.is_empty() {
            "seed".to_owned()
        } else {
            names.join("+")
        }
    }
}

/// The operators that put a payload in the text (what would make an unsafe answer unsafe).
pub(crate) const PAYLOAD_OPS: &[Op] = &[Op::Payload, Op::AwkPayload, Op::Arity, Op::JqEnv];

/// Draws an operator by weight, for a seed of `program`.
pub(crate) fn draw(rng: &mut Rng, program: &str) -> Op {
    let total: usize = Op::ALL.iter().map(|op| op.weight(program)).sum();
    let mut at = rng.below(total);
    for op in Op::ALL {
        if at < op.weight(program) {
            return op;
        }
        at -= op.weight(program);
    }
    Op::Payload
}

/// Applies `op` to `text` (a command whose seed program is `program`; `other` is another
/// corpus entry, for [`Op::Splice`]). `None` when the operator has nowhere to apply.
pub(crate) fn apply(
    rng: &mut Rng,
    op: Op,
    text: &str,
    program: &str,
    other: &str,
) -> Option<String> {
    match op {
        Op::Continuation => {
            let how = *rng.pick(&["\\\n", " \\\n", "\\\n ", "\\\n\t"]);
            match rng.below(4) {
                0 => replace_space(rng, text, how),
                1 => insert(text, *rng.pick_opt(&word_ends(text))?, how),
                2 => insert(text, *rng.pick_opt(&word_inner(text))?, "\\\n"),
                _ => insert(text, *rng.pick_opt(&word_starts(text))?, "\\\n"),
            }
        }
        Op::EscapedSpace => {
            let how = *rng.pick(&["\\\t", "\\ ", "\\\t\t", " \\\t"]);
            match rng.below(3) {
                0 => replace_space(rng, text, how),
                1 => insert(text, *rng.pick_opt(&word_ends(text))?, how),
                _ => insert(text, *rng.pick_opt(&word_inner(text))?, how),
            }
        }
        Op::Hash => {
            let after_escape = escape_ends(text);
            let at = if !after_escape.is_empty() && rng.chance(2, 3) {
                *rng.pick(&after_escape)
            } else {
                match rng.below(3) {
                    0 => *rng.pick_opt(&word_starts(text))?,
                    1 => *rng.pick_opt(&word_inner(text))?,
                    _ => *rng.pick_opt(&word_ends(text))?,
                }
            };
            let mark = *rng.pick(&["#", "#", "#x", "# "]);
            insert(text, at, mark)
        }
        Op::Tab => {
            if rng.chance(1, 2) {
                replace_space(rng, text, "\t")
            } else {
                insert(text, *rng.pick_opt(&word_ends(text))?, "\t")
            }
        }
        Op::Comment => match rng.below(3) {
            0 => Some(format!("{text} # c")),
            1 => insert(text, *rng.pick_opt(&word_ends(text))?, " #c"),
            _ => replace_space(rng, text, "\n# c\n"),
        },
        Op::Quote => requote(rng, text),
        Op::Newline => {
            for sep in [" && ", " ; ", "; ", " | "] {
                if let Some(at) = text.find(sep)
                    && rng.chance(1, 2)
                {
                    let mut out = text.to_owned();
                    out.replace_range(at..at + sep.len(), "\n");
                    return Some(out);
                }
            }
            replace_space(rng, text, "\n")
        }
        Op::AwkSlash => awk_slash(rng, text, program),
        Op::AwkPayload => awk_payload(rng, text, program),
        Op::JqEnv => jq_env(rng, text, program),
        Op::OptionSpelling => respell(rng, text),
        Op::Arity => arity(rng, text, program),
        Op::Payload => {
            let payload = *rng.pick(&[
                "; ./canary",
                "; touch CANARY-RAN",
                " && ./canary",
                "\n./canary",
                "\ntouch CANARY-RAN",
                " | ./canary",
                ";./canary",
                "; rm -f README.md",
            ]);
            if rng.chance(3, 4) {
                Some(format!("{text}{payload}"))
            } else {
                insert(text, *rng.pick_opt(&word_ends(text))?, payload)
            }
        }
        Op::Splice => {
            let join = *rng.pick(&[" ; ", " && ", " | ", "\n"]);
            if other.is_empty() {
                None
            } else {
                Some(format!("{text}{join}{other}"))
            }
        }
    }
}

/// `text` with `what` inserted at byte `at`.
fn insert(text: &str, at: usize, what: &str) -> Option<String> {
    if !text.is_char_boundary(at) {
        return None;
    }
    let mut out = String::with_capacity(text.len() + what.len());
    out.push_str(&text[..at]);
    out.push_str(what);
    out.push_str(&text[at..]);
    Some(out)
}

/// `text` with one of its spaces replaced by `what`.
fn replace_space(rng: &mut Rng, text: &str, what: &str) -> Option<String> {
    let spaces: Vec<usize> = text.match_indices(' ').map(|(i, _)| i).collect();
    let at = *rng.pick_opt(&spaces)?;
    let mut out = text.to_owned();
    out.replace_range(at..at + 1, what);
    Some(out)
}

impl Rng {
    /// One element of a slice, or `None` when it is empty.
    fn pick_opt<'a, T>(&mut self, items: &'a [T]) -> Option<&'a T> {
        if items.is_empty() {
            None
        } else {
            Some(self.pick(items))
        }
    }
}

/// Byte offsets where a word starts (after a blank, or at 0).
fn word_starts(text: &str) -> Vec<usize> {
    positions(text, |prev, next| {
        prev.is_none_or(char::is_whitespace) && next.is_some_and(|c| !c.is_whitespace())
    })
}

/// Byte offsets where a word ends (before a blank, or at the end).
fn word_ends(text: &str) -> Vec<usize> {
    positions(text, |prev, next| {
        prev.is_some_and(|c| !c.is_whitespace()) && next.is_none_or(char::is_whitespace)
    })
}

/// Byte offsets strictly inside a word.
fn word_inner(text: &str) -> Vec<usize> {
    positions(text, |prev, next| {
        prev.is_some_and(|c| !c.is_whitespace()) && next.is_some_and(|c| !c.is_whitespace())
    })
}

/// Byte offsets right after a backslash-newline, backslash-TAB or backslash-space.
fn escape_ends(text: &str) -> Vec<usize> {
    ["\\\n", "\\\t", "\\ "]
        .iter()
        .flat_map(|e| text.match_indices(e).map(|(i, m)| i + m.len()))
        .collect()
}

/// The char boundaries where `keep(previous char, next char)` holds.
fn positions(text: &str, keep: impl Fn(Option<char>, Option<char>) -> bool) -> Vec<usize> {
    let mut out = Vec::new();
    let mut prev = None;
    for (i, c) in text.char_indices() {
        if keep(prev, Some(c)) {
            out.push(i);
        }
        prev = Some(c);
    }
    if keep(prev, None) {
        out.push(text.len());
    }
    out
}

/// Quoting a word differently, or changing an existing quoted span's style.
fn requote(rng: &mut Rng, text: &str) -> Option<String> {
    let spans = words(text);
    let &(start, end) = rng.pick_opt(&spans)?;
    let word = &text[start..end];
    let quoted = if let Some(inner) = word.strip_prefix('\'').and_then(|w| w.strip_suffix('\'')) {
        match rng.below(3) {
            0 => format!("$'{inner}'"),
            1 => format!("\"{inner}\""),
            _ => format!("$\"{inner}\""),
        }
    } else if word.contains(['\'', '"', '\\']) {
        return None;
    } else {
        let split = word
            .char_indices()
            .map(|(i, _)| i)
            .nth(1)
            .unwrap_or(word.len());
        match rng.below(6) {
            0 => format!("'{word}'"),
            1 => format!("\"{word}\""),
            2 => format!("$'{word}'"),
            3 => format!("$\"{word}\""),
            4 => format!("'{}'{}", &word[..split], &word[split..]),
            _ => format!("{}\"\"{}", &word[..split], &word[split..]),
        }
    };
    let mut out = text.to_owned();
    out.replace_range(start..end, &quoted);
    Some(out)
}

/// The spans of blank-separated words (a quoted word with blanks inside counts as one, roughly:
/// single-quoted spans are kept whole).
fn words(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut quote = false;
    for (i, c) in text.char_indices() {
        if c == '\'' {
            quote = !quote;
        }
        if c.is_whitespace() && !quote {
            if let Some(s) = start.take() {
                out.push((s, i));
            }
        } else if start.is_none() {
            start = Some(i);
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// The inside of the first single-quoted span after `program`'s name: the awk or jq program.
fn quoted_region(text: &str, program: &str) -> Option<(usize, usize)> {
    let from = text.find(program)?;
    let open = from + text[from..].find('\'')? + 1;
    let close = open + text[open..].find('\'')?;
    Some((open, close))
}

/// Where awk text can go in a program region: statements (inside an action, after `{`, `;` or
/// a newline, or before a `}`), patterns (at the top level: the region's start, after a `}` or
/// a newline), expressions (after a `(`).
#[derive(Debug, Default)]
struct AwkPoints {
    statements: Vec<usize>,
    patterns: Vec<usize>,
    expressions: Vec<usize>,
}

fn awk_points(text: &str, (open, close): (usize, usize)) -> AwkPoints {
    let mut points = AwkPoints {
        patterns: vec![open],
        ..AwkPoints::default()
    };
    let mut depth = 0usize;
    for (i, c) in text[open..close].char_indices() {
        let at = open + i;
        match c {
            '{' => {
                depth += 1;
                points.statements.push(at + 1);
            }
            '}' => {
                points.statements.push(at);
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    points.patterns.push(at + 1);
                }
            }
            ';' | '\n' if depth > 0 => points.statements.push(at + 1),
            '\n' => points.patterns.push(at + 1),
            '(' => points.expressions.push(at + 1),
            _ => {}
        }
    }
    if depth == 0 {
        points.patterns.push(close);
    }
    points
}

fn awk_slash(rng: &mut Rng, text: &str, program: &str) -> Option<String> {
    if program != "awk" {
        return None;
    }
    let region = quoted_region(text, "awk")?;
    let points = awk_points(text, region);
    match rng.below(6) {
        0..=2 => {
            let snippet = *rng.pick(&[
                "print /#/; ",
                "print /#/\n",
                "print /(/; ",
                "print /}/; ",
                "print /x/; ",
                "\n/#/; ",
                "/#/; ",
                "x = /#/; ",
                "print /[#]/; ",
                "print 4 /2/ 1; ",
                "n = 1 /#/ 2; ",
                "if (/#/) ",
            ]);
            insert_statement(text, *rng.pick_opt(&points.statements)?, snippet)
        }
        3 => {
            let snippet = *rng.pick(&["/#/ { print } ", "/#/\n", "\n/#/ { print }\n", "/(/ "]);
            insert(text, *rng.pick_opt(&points.patterns)?, snippet)
        }
        4 => {
            let at = *rng.pick_opt(&points.expressions)?;
            let snippet = *rng.pick(&["/#/ && ", "/#/ || ", "/(/ && "]);
            insert(text, at, snippet)
        }
        _ => {
            // A division or regex already there, made to hide what follows.
            let existing: Vec<usize> = text[region.0..region.1]
                .match_indices('/')
                .map(|(i, _)| region.0 + i + 1)
                .collect();
            let at = *rng.pick_opt(&existing)?;
            let mark = *rng.pick(&["#", "(", "}", "#)"]);
            insert(text, at, mark)
        }
    }
}

fn awk_payload(rng: &mut Rng, text: &str, program: &str) -> Option<String> {
    if program != "awk" {
        return None;
    }
    let region = quoted_region(text, "awk")?;
    let points = awk_points(text, region);
    if rng.chance(1, 5) {
        let snippet = *rng.pick(&[
            "BEGIN { system(\"./canary\") } ",
            "BEGIN { print > \"out.txt\" } ",
            "\nBEGIN { system(\"./canary\") }\n",
        ]);
        return insert(text, *rng.pick_opt(&points.patterns)?, snippet);
    }
    let snippet = *rng.pick(&[
        "system(\"./canary\"); ",
        "system(\"touch CANARY-RAN\"); ",
        "print | \"./canary\"; ",
        "print > \"out.txt\"; ",
        "print > \"README.md\"; ",
        "\"./canary\" | getline x; ",
        "\nsystem(\"./canary\")\n",
    ]);
    // After a slash half the time: a regex read as division hides what follows it on its line.
    let last_slash = text[region.0..region.1].rfind('/').map(|i| region.0 + i);
    let later: Vec<usize> = points
        .statements
        .iter()
        .copied()
        .filter(|p| last_slash.is_some_and(|s| *p > s))
        .collect();
    let at = if !later.is_empty() && rng.chance(1, 2) {
        *rng.pick(&later)
    } else {
        *rng.pick_opt(&points.statements)?
    };
    insert_statement(text, at, snippet)
}

/// Inserts an awk statement at `at`, after a `;` when the text before it does not end one.
fn insert_statement(text: &str, at: usize, statement: &str) -> Option<String> {
    let before = text.get(..at)?.trim_end_matches([' ', '\t']);
    if before.ends_with(['{', ';', '\n']) {
        insert(text, at, statement)
    } else {
        insert(text, at, &format!("; {statement}"))
    }
}

fn jq_env(rng: &mut Rng, text: &str, program: &str) -> Option<String> {
    if program != "jq" {
        return None;
    }
    let region = quoted_region(text, "jq")?;
    let snippet = *rng.pick(&[
        "$ ENV",
        "$\tENV",
        "$ENV",
        "$#c\nENV",
        "$__loc__",
        "env",
        "input_filename",
        "$ ENV.HOME",
    ]);
    let at = if rng.chance(1, 2) { region.1 } else { region.0 };
    let joined = if rng.chance(1, 2) {
        format!(" | {snippet}")
    } else {
        format!("{snippet} | ")
    };
    insert(text, at, if at == region.1 { &joined } else { snippet })
}

/// Options of each seed program that take a value or change what the next word means, the
/// arities where a model and the program can disagree.
fn option_vocabulary(program: &str) -> &'static [&'static str] {
    match program {
        "git" => &[
            "-U",
            "--unified",
            "--format",
            "--pretty",
            "--min-parents",
            "--max-parents",
            "--reverse",
            "-L",
            "-S",
            "-G",
            "--abbrev",
            "-M",
            "-C",
            "--color",
            "-n",
            "--skip",
            "--author",
            "--grep",
            "-O",
            "--relative",
            "--word-diff",
            "--contents",
            "--ignore-rev",
            "--stat",
            "-p",
        ],
        "diff" => &[
            "--context",
            "-C",
            "-U",
            "--unified",
            "-W",
            "--label",
            "-I",
            "-x",
            "--from-file",
            "--to-file",
        ],
        "grep" => &[
            "-e",
            "-f",
            "-m",
            "-A",
            "-C",
            "--context",
            "--color",
            "--label",
        ],
        "sort" => &[
            "-k",
            "-t",
            "-S",
            "-T",
            "--files0-from",
            "--compress-program",
        ],
        "head" | "tail" => &["-n", "-c"],
        "find" => &["-name", "-newer", "-printf", "-maxdepth", "-path"],
        "sed" => &["-e", "-f", "-l", "-s", "-E", "--expression"],
        "awk" => &["-F", "-v", "-f", "-W", "--"],
        "jq" => &[
            "--arg x",
            "--argjson x",
            "--slurpfile x",
            "--rawfile x",
            "-f",
            "--indent",
        ],
        "ls" => &["-w", "-I", "--hide", "--color", "-T"],
        "cut" => &["-d", "-f", "--output-delimiter"],
        "wc" => &["--files0-from"],
        "uniq" => &["-f", "-s", "-w"],
        "stat" => &["-c", "--format", "--printf"],
        _ => &[""],
    }
}

fn arity(rng: &mut Rng, text: &str, program: &str) -> Option<String> {
    let flag = *rng.pick(option_vocabulary(program));
    let file = *rng.pick(&["out.txt", "README.md", ".git/config", "src/lib.rs"]);
    let probe = match rng.below(6) {
        0 | 1 => format!("--output={file}"),
        2 => format!("--output {file}"),
        3 => format!("-o {file}"),
        4 => format!("-o{file}"),
        _ => file.to_owned(),
    };
    let inserted = match rng.below(4) {
        0 => probe,
        1 => format!("{flag}={probe}"),
        _ => format!("{flag} {probe}"),
    };
    let inserted = inserted.trim().to_owned();
    // After the program (and a git subcommand), or after any option word.
    let spans = words(text);
    let mut points: Vec<usize> = spans
        .iter()
        .enumerate()
        .filter(|(i, (s, _))| *i > 0 && text[*s..].starts_with('-') || *i == 1)
        .map(|(_, (_, e))| *e)
        .collect();
    if points.is_empty() {
        points = word_ends(text);
    }
    insert(text, *rng.pick_opt(&points)?, &format!(" {inserted}"))
}

/// Respells one option word.
fn respell(rng: &mut Rng, text: &str) -> Option<String> {
    let spans = words(text);
    let options: Vec<usize> = (0..spans.len())
        .filter(|i| text[spans[*i].0..].starts_with('-') && spans[*i].1 - spans[*i].0 > 1)
        .collect();
    let &i = rng.pick_opt(&options)?;
    let (start, end) = spans[i];
    let word = &text[start..end];
    let next = spans.get(i + 1).copied();
    let mut out = text.to_owned();
    if let Some(long) = word.strip_prefix("--") {
        if let Some((name, value)) = long.split_once('=') {
            // --opt=v -> --opt v, or an abbreviation keeping the value.
            let replacement = if rng.chance(1, 2) {
                format!("--{name} {value}")
            } else {
                format!("--{}={value}", abbreviate(rng, name))
            };
            out.replace_range(start..end, &replacement);
        } else if let Some((ns, ne)) = next
            && rng.chance(1, 2)
        {
            // --opt v -> --opt=v
            let value = text[ns..ne].to_owned();
            out.replace_range(start..ne, &format!("--{long}={value}"));
        } else {
            out.replace_range(start..end, &format!("--{}", abbreviate(rng, long)));
        }
    } else {
        let short = &word[1..];
        if short.len() > 1 && rng.chance(1, 2) {
            // -Uv -> -U v, or a cluster split into single letters.
            let (head, tail) = short.split_at(short.chars().next()?.len_utf8());
            let replacement = if tail.chars().all(|c| c.is_ascii_alphabetic()) && rng.chance(1, 2) {
                short
                    .chars()
                    .map(|c| format!("-{c}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            } else {
                format!("-{head} {tail}")
            };
            out.replace_range(start..end, &replacement);
        } else if let Some((ns, ne)) = next {
            // -U v -> -Uv
            let value = text[ns..ne].to_owned();
            out.replace_range(start..ne, &format!("{word}{value}"));
        } else {
            return None;
        }
    }
    Some(out)
}

/// A prefix of a long option's name, at least three characters when it has them.
fn abbreviate(rng: &mut Rng, name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= 3 {
        return name.to_owned();
    }
    let keep = 3 + rng.below(chars.len() - 3);
    chars[..keep].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_of(op: Op, text: &str, program: &str) -> Vec<String> {
        let mut rng = Rng::new(1);
        let mut out: Vec<String> = (0..400)
            .filter_map(|_| apply(&mut rng, op, text, program, "ls"))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    #[test]
    fn the_shell_operators_write_the_spellings_of_class_1() {
        let cont = all_of(Op::Continuation, "echo ok", "echo");
        assert!(cont.contains(&"echo ok\\\n".to_owned()), "{cont:?}");
        let hashed = all_of(Op::Hash, "echo ok\\\n", "echo");
        assert!(hashed.contains(&"echo ok\\\n#".to_owned()), "{hashed:?}");
        let esc = all_of(Op::EscapedSpace, "echo ok", "echo");
        assert!(esc.contains(&"echo ok\\\t".to_owned()), "{esc:?}");
        let paid = all_of(Op::Payload, "echo ok\\\n#", "echo");
        assert!(paid.contains(&"echo ok\\\n#; touch CANARY-RAN".to_owned()));
        let quoted = all_of(Op::Quote, "echo ok", "echo");
        for form in ["echo $'ok'", "echo $\"ok\"", "echo 'ok'", "echo \"ok\""] {
            assert!(quoted.contains(&form.to_owned()), "{form} in {quoted:?}");
        }
    }

    #[test]
    fn the_awk_operators_write_a_regex_after_print_and_a_payload() {
        let slash = all_of(Op::AwkSlash, "awk 'BEGIN { print 1 }'", "awk");
        assert!(
            slash.contains(&"awk 'BEGIN {print /#/;  print 1 }'".to_owned()),
            "{slash:?}"
        );
        let paid = all_of(Op::AwkPayload, "awk 'BEGIN { print /#/; print 1 }'", "awk");
        assert!(
            paid.iter()
                .any(|t| t.contains("print /#/;") && t.contains("system(")),
            "{paid:?}"
        );
        assert!(all_of(Op::AwkSlash, "echo ok", "echo").is_empty());
        assert!(!all_of(Op::JqEnv, "jq '.name' data.json", "jq").is_empty());
    }

    #[test]
    fn the_option_operators_write_class_3_arities_and_spellings() {
        let arities = all_of(Op::Arity, "git diff -U1", "git");
        assert!(
            arities.contains(&"git diff -U --output=out.txt -U1".to_owned())
                || arities
                    .iter()
                    .any(|t| t.contains("-U --output=") || t.contains("--format --output=")),
            "{arities:?}"
        );
        let spelled = all_of(Op::OptionSpelling, "git diff --unified=2 HEAD", "git");
        assert!(
            spelled.contains(&"git diff --unified 2 HEAD".to_owned()),
            "{spelled:?}"
        );
        assert!(
            spelled
                .iter()
                .any(|t| t.starts_with("git diff --uni") && t.contains("=2"))
        );
        let attached = all_of(Op::OptionSpelling, "git log -U 3", "git");
        assert!(attached.contains(&"git log -U3".to_owned()), "{attached:?}");
    }

    #[test]
    fn ops_sets_name_their_members() {
        let ops = Ops::default().with(Op::Hash).with(Op::Continuation);
        assert!(ops.has(Op::Hash) && !ops.has(Op::Tab));
        assert_eq!(ops.label(), "continuation+hash");
        assert_eq!(Ops::default().label(), "seed");
    }
}
