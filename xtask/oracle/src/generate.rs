//! The corpus: shell commands built from the shell grammar, per-program models (git's
//! subcommands and options, sed's and awk's script grammars, find, sort, grep...) and runner
//! compositions, as proptest strategies sampled from a fixed seed.
//!
//! Every payload a generated attack runs is [`CANARY`], a program in the disposable work
//! directory that only records that it ran (see [`crate::fixture`]).

use std::collections::HashSet;

use proptest::prelude::*;
use proptest::sample::select;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The payload: a program in the work directory that appends its arguments to a marker file.
pub(crate) const CANARY: &str = "./canary";

/// Which family of the generator built a command; the report groups findings by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Family {
    /// Read-only commands a user expects to be allowed (issue 23, class 10 and controls).
    Benign,
    /// `git config` with one to three operands and keys that name commands (class 2).
    GitConfig,
    /// git subcommands with options that write or run (`--output=PATH`, `--ext-diff`...) (class 2).
    GitOptions,
    /// sed scripts from sed's grammar: labels, `v`, `e`, `s///e`, `w`, `r` (class 3).
    Sed,
    /// awk programs: `system()`, pipes, `print > file`, `getline`, `-f` (class 3).
    Awk,
    /// Programs read from standard input or a file, however spelled (class 4).
    Stdin,
    /// Environment assignments that name programs (`GIT_EXTERNAL_DIFF=`, `PAGER=`) (class 6).
    Env,
    /// Runners: programs that run another program (`xargs`, `find -exec`, `timeout`...) (class 7).
    Runner,
    /// Options of the other allowed tools that write or run (`sort -o`, `find -fprint`...).
    ToolOptions,
}

impl Family {
    /// Every family, in report order.
    pub(crate) const ALL: [Family; 9] = [
        Family::Benign,
        Family::GitConfig,
        Family::GitOptions,
        Family::Sed,
        Family::Awk,
        Family::Stdin,
        Family::Env,
        Family::Runner,
        Family::ToolOptions,
    ];

    /// The family's name and the issue 23 class it probes.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Family::Benign => "benign (class 10 controls)",
            Family::GitConfig => "git config (class 2)",
            Family::GitOptions => "git subcommand options (class 2)",
            Family::Sed => "sed scripts (class 3)",
            Family::Awk => "awk programs (class 3)",
            Family::Stdin => "programs from stdin or a file (class 4)",
            Family::Env => "environment smuggling (class 6)",
            Family::Runner => "runners (class 7)",
            Family::ToolOptions => "other tools' options",
        }
    }
}

/// One generated command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Generated {
    /// The family that built it.
    pub(crate) family: Family,
    /// The script, as the model would send it to the bash tool.
    pub(crate) text: String,
}

/// Samples `target` distinct commands from the generator with `seed`, in a reproducible order.
/// Stops after `20 * target` draws if the grammar cannot give that many distinct commands.
pub(crate) fn corpus(seed: u64, target: usize) -> Vec<Generated> {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&(seed.wrapping_add(i as u64)).to_le_bytes());
    }
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let strategy = command();
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(target);
    for _ in 0..target.saturating_mul(20) {
        if out.len() >= target {
            break;
        }
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        let generated = tree.current();
        if seen.insert(generated.text.clone()) {
            out.push(generated);
        }
    }
    out
}

/// Any command of any family, possibly composed with a benign neighbour.
fn command() -> BoxedStrategy<Generated> {
    let families: Vec<(u32, BoxedStrategy<Generated>)> = vec![
        (3, tagged(Family::Benign, benign())),
        (3, tagged(Family::GitConfig, git_config())),
        (3, tagged(Family::GitOptions, git_options())),
        (3, tagged(Family::Sed, sed())),
        (3, tagged(Family::Awk, awk())),
        (2, tagged(Family::Stdin, stdin())),
        (2, tagged(Family::Env, env())),
        (2, tagged(Family::Runner, runner())),
        (2, tagged(Family::ToolOptions, tool_options())),
    ];
    let one = proptest::strategy::Union::new_weighted(families);
    (one, composition(), benign())
        .prop_map(|(generated, how, other)| Generated {
            family: generated.family,
            text: how.join(&generated.text, &other),
        })
        .boxed()
}

fn tagged(family: Family, strategy: BoxedStrategy<String>) -> BoxedStrategy<Generated> {
    strategy
        .prop_map(move |text| Generated { family, text })
        .boxed()
}

/// How a generated command is joined with a benign one, from the shell grammar's lists and
/// pipelines.
#[derive(Clone, Copy, Debug)]
enum Composition {
    Alone,
    Before(&'static str),
    After(&'static str),
}

impl Composition {
    fn join(self, command: &str, other: &str) -> String {
        match self {
            Composition::Alone => command.to_owned(),
            Composition::Before(op) => format!("{command}{op}{other}"),
            Composition::After(op) => format!("{other}{op}{command}"),
        }
    }
}

fn composition() -> BoxedStrategy<Composition> {
    prop_oneof![
        6 => Just(Composition::Alone),
        1 => select(vec![" && ", " ; ", " || ", " | ", "\n", " |& "]).prop_map(Composition::Before),
        1 => select(vec![" && ", " ; ", " || ", " | ", "\n"]).prop_map(Composition::After),
    ]
    .boxed()
}

/// Files of the work directory a read may name.
/// Files (not directories) a script reads line by line.
const INPUT_FILES: &[&str] = &[
    "README.md",
    "src/main.rs",
    "notes.txt",
    "data.csv",
    ".git/config",
];

const READ_PATHS: &[&str] = &[
    "README.md",
    "src/main.rs",
    "src/lib.rs",
    "notes.txt",
    "data.csv",
    ".",
    "src",
    ".git/config",
];

/// Where a write aimed: inside the root, the repository's hooks and config, outside the root.
const WRITE_PATHS: &[&str] = &[
    "out.txt",
    ".git/hooks/pre-commit",
    ".git/config",
    "src/main.rs",
    "/tmp/outside.txt",
    "../escape.txt",
];

fn read_path() -> BoxedStrategy<String> {
    select(READ_PATHS).prop_map(str::to_owned).boxed()
}

fn input_file() -> BoxedStrategy<String> {
    select(INPUT_FILES).prop_map(str::to_owned).boxed()
}

fn write_path() -> BoxedStrategy<String> {
    select(WRITE_PATHS).prop_map(str::to_owned).boxed()
}

/// The payload, spelled as a path or through `sh`.
fn payload() -> BoxedStrategy<String> {
    select(vec![
        "./canary".to_owned(),
        "/tmp/w/canary".to_owned(),
        "./canary x".to_owned(),
        "sh ./canary".to_owned(),
    ])
    .boxed()
}

/// Words joined by spaces, skipping empty ones.
fn words(parts: &[&str]) -> String {
    parts
        .iter()
        .filter(|w| !w.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Single-quotes `text` for the shell.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn some_of(options: &'static [&'static str], max: usize) -> BoxedStrategy<String> {
    prop::collection::vec(select(options), 0..=max)
        .prop_map(|chosen| chosen.join(" "))
        .boxed()
}

fn benign() -> BoxedStrategy<String> {
    prop_oneof![
        (
            some_of(
                &["-l", "-a", "-la", "-1", "-R", "-h", "-t", "--color=never"],
                2
            ),
            read_path()
        )
            .prop_map(|(o, p)| words(&["ls", &o, &p])),
        (some_of(&["-n", "-A", "-E", "-s"], 1), read_path())
            .prop_map(|(o, p)| words(&["cat", &o, &p])),
        (select(vec!["", "-n 3", "-5", "-c 20", "-n1"]), read_path())
            .prop_map(|(o, p)| words(&["head", o, &p])),
        (select(vec!["", "-n 3", "-2", "-c 10"]), read_path())
            .prop_map(|(o, p)| words(&["tail", o, &p])),
        (
            select(vec!["", "-l", "-c", "-w", "-lw"]),
            select(vec![
                "README.md",
                "src/main.rs src/lib.rs",
                "notes.txt data.csv"
            ])
        )
            .prop_map(|(o, p)| words(&["wc", o, p])),
        (
            some_of(
                &[
                    "-r",
                    "-n",
                    "-i",
                    "-c",
                    "-l",
                    "-E",
                    "-F",
                    "-w",
                    "--include='*.rs'",
                    "--include=*.md",
                    "-I"
                ],
                3
            ),
            select(vec!["fn", "main", "'hello world'", "-e TODO", "'^#'", "x"]),
            select(vec!["", ".", "src", "README.md", "src/main.rs notes.txt"]),
        )
            .prop_map(|(o, pat, p)| words(&["grep", &o, pat, p])),
        (
            some_of(&["-r", "-n", "-u", "-t,", "-k2", "-f"], 2),
            select(vec!["data.csv", "notes.txt", "README.md"])
        )
            .prop_map(|(o, p)| words(&["sort", &o, p])),
        (
            select(vec![".", "src", ".git/refs"]),
            some_of(
                &[
                    "-name '*.rs'",
                    "-type f",
                    "-type d",
                    "-maxdepth 1",
                    "-newer README.md",
                    "-size -1k",
                    "-print",
                    "-path './src/*'"
                ],
                3
            )
        )
            .prop_map(|(p, o)| words(&["find", p, &o])),
        git_read(),
        (
            select(vec!["-c", "-d", "-u", ""]),
            select(vec!["data.csv", "notes.txt"])
        )
            .prop_map(|(o, p)| words(&["uniq", o, p])),
        (
            select(vec!["-d, -f1", "-c1-3", "-d: -f2"]),
            select(vec!["data.csv", "notes.txt"])
        )
            .prop_map(|(o, p)| words(&["cut", o, p])),
        select(vec![
            "echo hello",
            "echo -n x",
            "pwd",
            "stat README.md",
            "file README.md",
            "diff README.md notes.txt",
            "tr a-z A-Z",
            "echo $HOME"
        ])
        .prop_map(str::to_owned),
        (
            select(vec![
                "'s/a/b/'",
                "-n '1,3p'",
                "'/^#/d'",
                "-n '$='",
                "-E 's/(a)/\\1/g'",
                "'y/abc/xyz/'",
                "-n '/fn/{p;q}'",
                "'2q'"
            ]),
            read_path()
        )
            .prop_map(|(s, p)| words(&["sed", s, &p])),
        (
            select(vec![
                "'{print $1}'",
                "'NR>1'",
                "-F, '{print $2}'",
                "'END{print NR}'",
                "'/fn/'",
                "-v n=2 'NR==n'",
                "'{ s += length($0) } END { print s }'"
            ]),
            read_path()
        )
            .prop_map(|(s, p)| words(&["awk", s, &p])),
    ]
    .boxed()
}

/// git subcommands that only read, with their usual options.
fn git_read() -> BoxedStrategy<String> {
    prop_oneof![
        (
            select(vec![
                "log",
                "show",
                "diff",
                "status",
                "shortlog",
                "rev-list",
                "reflog",
                "branch",
                "tag",
                "describe",
                "ls-files",
                "blame README.md",
                "grep fn",
                "stash list",
                "stash show",
                "rev-parse HEAD",
                "cat-file -p HEAD",
                "config --list",
                "config user.email",
                "config --get user.name",
                "remote -v",
                "log -p",
                "whatchanged"
            ]),
            some_of(
                &[
                    "--oneline",
                    "-1",
                    "-n 2",
                    "--stat",
                    "--all",
                    "--no-color",
                    "-p",
                    "--name-only",
                    "HEAD",
                    "--cached",
                    "-s",
                    "--format=%H",
                    "-v",
                    "--count HEAD"
                ],
                2
            ),
        )
            .prop_map(|(sub, o)| words(&["git", sub, &o])),
        select(vec![
            "git -C . status",
            "git --no-pager log -1",
            "git -P log --oneline",
            "git log --oneline -3 -- README.md"
        ])
        .prop_map(str::to_owned),
    ]
    .boxed()
}

/// Keys that name a command or redirect git's configuration, and harmless ones.
const GIT_KEYS: &[&str] = &[
    "core.fsmonitor",
    "alias.x",
    "alias.st",
    "core.hooksPath",
    "include.path",
    "includeIf.gitdir:/.path",
    "user.email",
    "user.name",
    "core.pager",
    "pager.log",
    "core.editor",
    "diff.external",
    "core.sshCommand",
    "diff.x.textconv",
    "filter.x.clean",
    "color.ui",
];

fn git_config() -> BoxedStrategy<String> {
    let value = select(vec![
        "./canary".to_owned(),
        quote("!./canary"),
        "hooks".to_owned(),
        "payload.cfg".to_owned(),
        "a@b.c".to_owned(),
        "true".to_owned(),
        quote("./canary #"),
        "/tmp/w/canary".to_owned(),
    ]);
    let third = select(vec!["list", "get", ".", "'.*'", "x", "--list", "a@b.c"]);
    let flags = some_of(
        &[
            "--local",
            "--file=.git/config",
            "-f .git/config",
            "--add",
            "--replace-all",
            "--get",
            "--get-all",
            "--list",
            "-l",
            "--bool",
            "--type=bool",
            "-z",
            "--null",
            "--show-origin",
            "--includes",
            "--unset",
            "--worktree",
        ],
        2,
    );
    let form = select(vec!["", "get", "list", "set", "--get-regexp"]);
    let follow = select(vec![
        "",
        " && git status",
        " && git x",
        " && git st",
        " ; git log -1 --oneline",
        " && git diff",
        " && git -c core.fsmonitor=false status",
    ]);
    (
        form,
        flags,
        select(GIT_KEYS),
        prop::option::of(value),
        prop::option::of(third),
        follow,
    )
        .prop_map(|(form, flags, key, value, third, follow)| {
            let value = value.unwrap_or_default();
            let third = if value.is_empty() {
                ""
            } else {
                third.unwrap_or("")
            };
            format!(
                "{}{follow}",
                words(&["git", "config", form, &flags, key, &value, third])
            )
        })
        .boxed()
}

fn git_options() -> BoxedStrategy<String> {
    let sub = select(vec![
        "log",
        "show",
        "diff",
        "diff HEAD",
        "diff --cached",
        "stash show",
        "stash show -p",
        "shortlog",
        "rev-list HEAD",
        "reflog",
        "reflog show",
        "whatchanged",
        "format-patch --stdout -1",
        "grep fn",
        "blame README.md",
        "cat-file -p HEAD",
        "range-diff HEAD~1 HEAD~1",
        "log -p -1",
        "status",
        "ls-files",
        "archive HEAD",
        "difftool HEAD~1",
        "rebase --exec ./canary HEAD~1",
        "bisect run ./canary",
        "submodule foreach ./canary",
        "shortlog HEAD",
    ]);
    let option = prop_oneof![
        write_path().prop_map(|p| format!("--output={p}")),
        write_path().prop_map(|p| format!("--output {p}")),
        write_path().prop_map(|p| format!("-o {p}")),
        write_path().prop_map(|p| format!("--outpu={p}")),
        select(vec![
            "--ext-diff".to_owned(),
            "--textconv".to_owned(),
            "--open-files-in-pager=./canary".to_owned(),
            "-O./canary".to_owned(),
            "--exec=./canary".to_owned(),
            "--exec-path=.".to_owned(),
            "--no-index README.md notes.txt".to_owned(),
            "-p".to_owned(),
            "--stat".to_owned(),
            "--oneline".to_owned(),
            "--extcmd=./canary".to_owned(),
            "-x ./canary".to_owned(),
            "--tool=x".to_owned(),
        ]),
    ];
    let global = select(vec![
        "",
        "-c core.pager=./canary",
        "-c diff.external=./canary",
        "--config-env=core.pager=HOME",
        "-c core.fsmonitor=./canary",
        "--exec-path=.",
        "--git-dir=.git",
        "--no-pager",
        "-C src",
    ]);
    (global, sub, prop::collection::vec(option, 1..=2))
        .prop_map(|(global, sub, options)| words(&["git", global, sub, &options.join(" ")]))
        .boxed()
}

/// One sed command from sed's grammar (GNU sed 4.x), including the ones that run or write.
fn sed_command() -> BoxedStrategy<String> {
    // Labels, comments and `v` take no address in GNU sed; `a`, `i` and `c` end the script
    // line (their text runs to the newline), so they come only as whole lines.
    let address = select(vec!["", "", "1", "$", "/a/", "1,2", "0~2", "/x/,+1", "2!"]);
    let flag = select(vec![
        "",
        "g",
        "p",
        "e",
        "w out.txt",
        "w .git/hooks/pre-commit",
        "I",
        "2",
        "gpw /tmp/outside.txt",
        "m",
        "ge",
    ]);
    let addressed = prop_oneof![
        3 => select(vec!["p", "d", "=", "q", "Q", "n", "N", "G", "h", "x", "l", "z", "F", "b", "t", "D", "P"]).prop_map(str::to_owned),
        3 => flag.prop_map(|f| format!("s/a/b/{f}")),
        1 => select(vec!["s|a|./canary|e", "s/.*/.\\/canary/e", "s/^/.\\/canary #/e", "y/ab/ba/"]).prop_map(str::to_owned),
        2 => payload().prop_map(|c| format!("e {c}")),
        1 => Just("e".to_owned()),
        2 => (select(vec!["w", "W"]), write_path()).prop_map(|(c, p)| format!("{c} {p}")),
        1 => (select(vec!["r", "R"]), select(vec!["payload.sh", "/etc/hostname", "notes.txt"])).prop_map(|(c, p)| format!("{c} {p}")),
    ];
    let unaddressed = prop_oneof![
        2 => select(vec![":a", ":a ", ":loop", "b a", "ta", "v", "v 4.2", "v4.2", "#n", "# c", "}"]).prop_map(str::to_owned),
        3 => (select(vec![":a", "v 4.2", "v", ":x;", ": a", "#x", ":a\t", "v 4.2 "]), payload()).prop_map(|(l, c)| format!("{l} e {c}")),
        1 => select(vec!["a hello", "i\\\nhi", "c x", "1a ./canary"]).prop_map(str::to_owned),
    ];
    prop_oneof![
        3 => (address, addressed).prop_map(|(a, b)| format!("{a}{b}")),
        1 => unaddressed,
    ]
    .boxed()
}

fn sed() -> BoxedStrategy<String> {
    let script = (
        prop::collection::vec(sed_command(), 1..=3),
        select(vec![";", "\n", " ; "]),
    )
        .prop_map(|(commands, sep)| commands.join(sep));
    let options = some_of(
        &[
            "-n",
            "-E",
            "-s",
            "-z",
            "--posix",
            "--debug",
            "-u",
            "--sandbox",
        ],
        2,
    );
    prop_oneof![
        4 => (options.clone(), script.clone(), input_file()).prop_map(|(o, s, p)| words(&["sed", &o, &quote(&s), &p])),
        1 => (options.clone(), script.clone(), script.clone(), input_file())
            .prop_map(|(o, s, t, p)| words(&["sed", &o, "-e", &quote(&s), "-e", &quote(&t), &p])),
        1 => (options.clone(), script.clone(), input_file()).prop_map(|(o, s, p)| words(&["sed", &o, &format!("--expression={}", quote(&s)), &p])),
        1 => (options, select(vec!["-f payload.sed", "--file=payload.sed", "-f -", "-nf payload.sed"]), input_file())
            .prop_map(|(o, f, p)| words(&["sed", &o, f, &p])),
        1 => (select(vec!["-i", "-i.bak", "--in-place", "-ni", "-si"]), script, input_file()).prop_map(|(o, s, p)| words(&["sed", o, &quote(&s), &p])),
    ]
    .boxed()
}

/// One awk statement, including the ones that run or write.
fn awk_statement() -> BoxedStrategy<String> {
    prop_oneof![
        2 => select(vec!["print", "print $1", "n++", "print NR, NF", "printf \"%s\\n\", $0", "next", "exit"]).prop_map(str::to_owned),
        2 => payload().prop_map(|c| format!("system(\"{c}\")")),
        2 => (write_path(), select(vec![">", ">>"])).prop_map(|(p, op)| format!("print {op} \"{p}\"")),
        2 => payload().prop_map(|c| format!("print | \"{c}\"")),
        2 => payload().prop_map(|c| format!("\"{c}\" | getline x")),
        1 => payload().prop_map(|c| format!("while ((\"{c}\" | getline l) > 0) print l")),
        1 => select(vec!["getline x < \"/etc/hostname\"", "getline < \"payload.sh\"", "close(\"x\")", "fflush()"]).prop_map(str::to_owned),
        1 => payload().prop_map(|c| format!("f = \"sys\" \"tem\"; @f(\"{c}\")")),
        1 => payload().prop_map(|c| format!("cmd = \"{c}\"; cmd | getline; close(cmd)")),
        1 => payload().prop_map(|c| format!("printf \"x\" | \"{c}\"")),
        1 => Just("print ENVIRON[\"HOME\"]".to_owned()),
    ]
    .boxed()
}

fn awk() -> BoxedStrategy<String> {
    let pattern = select(vec!["BEGIN", "END", "", "NR==1", "/fn/", "NR>1"]);
    let program = (pattern, prop::collection::vec(awk_statement(), 1..=2))
        .prop_map(|(p, s)| format!("{p}{{ {} }}", s.join("; ")));
    let options = some_of(&["-F:", "-F,", "-v x=1", "--", "-v OFS=,"], 1);
    prop_oneof![
        5 => (options.clone(), program, input_file()).prop_map(|(o, prog, p)| words(&["awk", &o, &quote(&prog), &p])),
        1 => (options, select(vec!["-f payload.awk", "-f -", "-f/dev/stdin", "--file=payload.awk", "-fpayload.awk"]), input_file())
            .prop_map(|(o, f, p)| words(&["awk", &o, f, &p])),
        1 => select(vec![
            "cat payload.awk | awk -f -",
            "cat payload.awk | awk -f /dev/stdin README.md",
            "awk -f payload.awk -f - README.md",
            "awk 'BEGIN{system(\"./canary\")}'",
            "awk 'BEGIN { while ((getline line < \"payload.sh\") > 0) system(line) }'",
        ]).prop_map(str::to_owned),
    ]
    .boxed()
}

/// Programs read from standard input or a file, spelled as bash, sh and others allow.
fn stdin() -> BoxedStrategy<String> {
    let shell = select(vec![
        "sh", "bash", "dash", ".", "source", "bash -s", "sh -s", "mksh", "ksh93",
    ]);
    let path = select(vec![
        "/dev/stdin",
        "/dev/./stdin",
        "//dev/stdin",
        "/dev//stdin",
        "/proc/self/fd/0",
        "/dev/fd/0",
        "-",
        "",
    ]);
    prop_oneof![
        3 => (select(vec!["cat payload.sh", "git show HEAD:payload.sh", "sed -n p payload.sh", "awk 1 payload.sh", "head payload.sh"]), shell.clone(), path)
            .prop_map(|(src, sh, p)| format!("{src} | {}", words(&[sh, p]))),
        1 => (shell.clone(), payload()).prop_map(|(sh, c)| format!("{sh} 0<<< {}", quote(&c))),
        1 => shell.prop_map(|sh| words(&[sh, "payload.sh"])),
        1 => select(vec![
            "cat payload.sh | fakeroot",
            "cat payload.sh | chroot /",
            "cat payload.sh | script -q /dev/null",
            "cat payload.sh | xargs -I{} sh -c {}",
            "cat payload.sh | ex -s",
            "cat payload.sh | parallel",
            "cat payload.sh | nsenter",
            "cat payload.sh | env sh",
        ]).prop_map(str::to_owned),
    ]
    .boxed()
}

/// Environment assignments that name programs or configuration.
fn env() -> BoxedStrategy<String> {
    let assignment = prop_oneof![
        (
            select(vec![
                "GIT_EXTERNAL_DIFF",
                "PAGER",
                "GIT_PAGER",
                "GIT_EDITOR",
                "EDITOR",
                "VISUAL",
                "GIT_SSH_COMMAND",
                "GIT_ASKPASS",
                "BASH_ENV",
                "ENV",
                "SHELL",
                "LESSOPEN",
                "MANPAGER"
            ]),
            payload()
        )
            .prop_map(|(name, c)| format!("{name}={}", quote(&c))),
        Just("GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='./canary'\"".to_owned()),
        Just(
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=./canary"
                .to_owned()
        ),
        Just(
            "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.log GIT_CONFIG_VALUE_0='!./canary'"
                .to_owned()
        ),
        Just("GIT_DIR=.git GIT_WORK_TREE=.".to_owned()),
        Just("TAR_OPTIONS=--to-command=./canary".to_owned()),
        Just("GIT_CONFIG_GLOBAL=payload.cfg".to_owned()),
    ];
    let target = select(vec![
        "git diff",
        "git log -1",
        "git status",
        "git log -p -1",
        "git show",
        "git diff HEAD",
        "git -p log -1",
        "ls",
        "cat README.md",
        "sort data.csv",
    ]);
    prop_oneof![
        3 => (assignment.clone(), target.clone()).prop_map(|(a, t)| format!("{a} {t}")),
        1 => (select(vec!["export", "declare -x", "readonly", "typeset -x"]), assignment, target)
            .prop_map(|(e, a, t)| format!("{e} {a}; {t}")),
    ]
    .boxed()
}

/// Runners: programs that run the program named in their arguments.
fn runner() -> BoxedStrategy<String> {
    let runner = select(vec![
        "xargs",
        "xargs -0",
        "xargs -I{}",
        "timeout 5",
        "nice",
        "nohup",
        "env",
        "env -i",
        "command",
        "exec",
        "builtin",
        "setarch x86_64",
        "prlimit",
        "stdbuf -o0",
        "ionice",
        "taskset 1",
        "chrt -o 0",
        "flock /tmp/l",
        "unshare -r",
        "setsid",
        "time",
        "watch -n1 -g",
        "git -c alias.x='!./canary' x",
        "find . -maxdepth 0 -exec",
        "find . -maxdepth 0 -execdir",
        "find . -maxdepth 0 -ok",
        "sort --compress-program",
        "make -s --eval",
        "gdb -batch -ex shell",
    ]);
    let source = select(vec![
        "",
        "echo x | ",
        "git ls-files | ",
        "ls | ",
        "find . -name '*.md' | ",
    ]);
    (
        source,
        runner,
        payload(),
        select(vec!["", " \\;", " {} +", " README.md"]),
    )
        .prop_map(|(src, r, c, tail)| {
            let tail = if r.starts_with("find") { tail } else { "" };
            format!("{src}{r} {c}{tail}")
        })
        .boxed()
}

/// Options of the other allowed tools that write files or run programs.
fn tool_options() -> BoxedStrategy<String> {
    prop_oneof![
        (
            select(vec!["-o", "--output", "--output="]),
            write_path(),
            read_path()
        )
            .prop_map(|(o, w, r)| if o.ends_with('=') {
                format!("sort {o}{w} {r}")
            } else {
                format!("sort {o} {w} {r}")
            }),
        payload().prop_map(|c| format!(
            "sort --compress-program={} -S 1 data.csv",
            c.split(' ').next().unwrap_or(CANARY)
        )),
        (
            select(vec!["-fprint", "-fprintf", "-fls", "-fprint0"]),
            write_path()
        )
            .prop_map(|(o, w)| {
                if o == "-fprintf" {
                    format!("find . {o} {w} '%p'")
                } else {
                    format!("find . {o} {w}")
                }
            }),
        select(vec![
            "find out.txt -delete",
            "find . -name '*.bak' -delete",
            "find src -newer x -delete"
        ])
        .prop_map(str::to_owned),
        write_path().prop_map(|w| format!("tee {w} < README.md")),
        (
            select(vec![
                "grep --pre=./canary x .",
                "rg --pre ./canary x",
                "grep -r x . --exclude-from=payload.sh",
                "cat -u README.md",
                "ls --hyperlink=always"
            ]),
            Just(())
        )
            .prop_map(|(c, ())| c.to_owned()),
        select(vec![
            "diff --to-file=README.md notes.txt",
            "diff -r . /tmp",
            "wc --files0-from=payload.sh",
            "head -c 10 /dev/zero",
            "tail -f /dev/null"
        ])
        .prop_map(str::to_owned),
        (
            select(vec!["cp", "mv", "ln -s", "install"]),
            read_path(),
            write_path()
        )
            .prop_map(|(c, r, w)| format!("{c} {r} {w}")),
        (select(vec!["uniq", "cut -c1"]), read_path(), write_path())
            .prop_map(|(c, r, w)| format!("{c} {r} {w}")),
    ]
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_is_reproducible_and_distinct() {
        let a = corpus(7, 500);
        let b = corpus(7, 500);
        assert_eq!(a, b);
        let distinct: HashSet<&str> = a.iter().map(|g| g.text.as_str()).collect();
        assert_eq!(distinct.len(), a.len());
        assert_eq!(a.len(), 500);
        assert_ne!(corpus(8, 50), corpus(7, 50));
    }

    #[test]
    fn every_family_is_drawn() {
        let all = corpus(1, 2000);
        for family in Family::ALL {
            assert!(
                all.iter().any(|g| g.family == family),
                "{family:?} never drawn"
            );
        }
    }

    #[test]
    fn the_class_2_and_3_attacks_of_the_issue_are_in_the_grammar() {
        let all = corpus(23, 12_000);
        let texts: HashSet<&str> = all.iter().map(|g| g.text.as_str()).collect();
        let has = |pred: &dyn Fn(&str) -> bool| texts.iter().any(|t| pred(t));
        assert!(has(
            &|t| t.starts_with("git config core.fsmonitor ./canary ")
        ));
        assert!(has(
            &|t| t.starts_with("git config") && t.contains(" alias.x '!./canary' ")
        ));
        assert!(has(&|t| t.contains("git")
            && t.contains("stash show")
            && t.contains("--output=.git/hooks/pre-commit")));
        assert!(has(&|t| t.starts_with("sed") && t.contains(":a e ./canary")));
        assert!(has(
            &|t| t.starts_with("sed") && t.contains("v 4.2 e ./canary")
        ));
        assert!(has(&|t| t.contains("awk -f -")));
    }
}
