//! The analysis reads what bash reads (issue 40, classes 1 and 5).
//!
//! Class 1: tree-sitter-bash starts a comment at a `#` that bash reads inside a word (after a
//! line continuation, after an escaped blank), so a command hidden behind it ran under any
//! prefix rule. Every spelling here is run by the real bash in a temp dir: whenever its canary
//! appears, the verdict must not be allow, and a deny rule on the hidden command must deny in
//! every mode, bypass included. tree-sitter's reading alone (`tree_sitter_reading`, the
//! analysis before bash read first) is shown to miss some of them, so the suite can fail.
//!
//! Class 5: a denied program named inside an argument of a program without a model
//! (`make --eval='x:;@rm -rf ~'`) cannot be ruled out, in every mode.

use std::path::Path;
use std::process::Command;

use mux_permission::command::{analyze, tree_sitter_reading};
use mux_permission::{Mode, Verdict};

use super::real_programs::{policy, verdict};

/// Runs `command` with the real bash in `dir`; whether it made `CANARY` there.
fn ran_canary(command: &str, dir: &Path) -> bool {
    let canary = dir.join("CANARY");
    let _ = std::fs::remove_file(&canary);
    let _ = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
    canary.exists()
}

/// Spellings where a `#` may hide what follows, around an allowed command.
fn hiding_spellings() -> Vec<String> {
    let allowed = ["echo ok", "ls", "git status", "cat README"];
    let hiders = [
        "\\\n#",
        "\\\t#",
        "\\ #",
        "\\\n #",
        "\\\n\\\n#",
        "x\\\n#",
        "\\\n#x",
        " \\\n#",
        "\\\t\\\t#",
        "'x'\\\n#",
        "\"x\"\\\t#",
    ];
    let payloads = [
        "; touch CANARY",
        " && touch CANARY",
        " | touch CANARY",
        " || true; touch CANARY",
        "; sh -c 'touch CANARY'",
        "\ntouch CANARY",
    ];
    let mut out = Vec::new();
    for allowed in allowed {
        for hider in hiders {
            for payload in payloads {
                let command = format!("{allowed}{hider}{payload}");
                out.push(command.clone());
                out.push(format!("sh -c '{}'", command.replace('\'', "'\\''")));
                out.push(format!("true && {command}"));
            }
        }
    }
    out
}

#[test]
fn a_command_bash_runs_behind_a_hash_is_never_allowed_and_always_denied() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README"), "hi\n").unwrap();
    let allow = [
        "Bash(echo:*)",
        "Bash(ls:*)",
        "Bash(git status:*)",
        "Bash(cat:*)",
        "Bash(sh -c:*)",
        "Bash(true:*)",
    ];
    let default = policy(Mode::Default, &allow, &["Bash(touch:*)"]);
    let bypass = policy(Mode::Bypass, &[], &["Bash(touch:*)"]);
    let (mut ran, mut fooled_before, mut failures) = (0, 0, Vec::new());
    for command in hiding_spellings() {
        if !ran_canary(&command, dir.path()) {
            continue;
        }
        ran += 1;
        let before = tree_sitter_reading(&command);
        if !before
            .everywhere
            .iter()
            .any(|words| words.first().is_some_and(|w| w == "touch"))
            && before.unreadable.is_none()
        {
            fooled_before += 1;
        }
        let allowed = verdict(&default, &command);
        let denied = verdict(&bypass, &command);
        if allowed == Verdict::Allow || denied != Verdict::Deny {
            failures.push(format!(
                "{command:?}: default {allowed:?}, bypass {denied:?} (bash's reading: {:?})",
                analyze(&command).everywhere
            ));
        }
    }
    println!("{ran} spellings ran the canary; tree-sitter alone missed {fooled_before}");
    assert!(ran >= 100, "only {ran} spellings ran the canary");
    assert!(
        fooled_before > 0,
        "tree-sitter's reading alone misses none: the suite shows nothing"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn what_bash_runs_before_a_syntax_error_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let bypass = policy(Mode::Bypass, &[], &["Bash(touch:*)"]);
    for command in [
        "echo ok\\\n#; touch CANARY\n)",
        "echo ok\\\n#; touch CANARY\nif",
        "true\necho ok\\\t#; touch CANARY\nfi",
    ] {
        assert!(ran_canary(command, dir.path()), "{command:?} ran nothing");
        assert_eq!(verdict(&bypass, command), Verdict::Deny, "{command:?}");
    }
    // Nothing runs when the first line is already wrong, and nothing is denied for it.
    for command in ["ls &&", "ls 'unterminated"] {
        assert!(!ran_canary(command, dir.path()), "{command:?} ran");
        assert_ne!(verdict(&bypass, command), Verdict::Deny, "{command:?}");
    }
}

#[test]
fn plain_commands_still_read_plainly() {
    let default = policy(
        Mode::Default,
        &[
            "Bash(echo:*)",
            "Bash(ls:*)",
            "Bash(git status:*)",
            "Bash(wc:*)",
        ],
        &["Bash(touch:*)"],
    );
    for command in [
        "echo ok # a comment",
        "ls -la | wc -l && git status",
        "echo 'a b' \"c\" x\\ y",
        "ls \\\n  -la",
        "echo $'tab\\there'",
        "git status &",
    ] {
        let v = verdict(&default, command);
        let expect = if command.ends_with('&') {
            Verdict::Ask
        } else {
            Verdict::Allow
        };
        assert_eq!(v, expect, "{command:?}: {:?}", analyze(command).hazards);
    }
}

#[test]
fn a_denied_program_named_inside_an_unmodelled_programs_argument_is_denied() {
    let bypass = policy(Mode::Bypass, &[], &["Bash(rm:*)"]);
    for command in [
        "make --eval='x:;@rm -rf ~' x",
        "make --eval 'x:;@/bin/rm -rf ~' x",
        "python3 -c 'import os; os.system(\"rm -rf x\")'",
        "perl -e 'system(\"rm\",\"x\")'",
        "node -e 'require(\"child_process\").execSync(\"rm x\")'",
        "ssh host 'rm x'",
        "su -c 'rm x' root",
        "script -c 'rm x' /dev/null",
        "watch -n1 rm x",
        "flock /tmp/lock rm x",
        "xargs -I{} rm {}",
        "gdb -batch -ex 'shell rm x'",
        "setarch x86_64 -R env rm x",
        "ruby -e '`rm x`'",
    ] {
        assert_eq!(verdict(&bypass, command), Verdict::Deny, "{command:?}");
    }
    // Controls: no denied program named.
    for command in [
        "python3 -c 'print(1)'",
        "make --eval='x:;@echo hi' x",
        "ssh host uptime",
    ] {
        assert_ne!(verdict(&bypass, command), Verdict::Deny, "{command:?}");
    }
}
/// Precision: everyday awk, jq and sed calls stay allowed under their prefix rules (a file name
/// such as `data.csv` is no awk program to read).
#[test]
fn everyday_awk_jq_and_sed_stay_allowed() {
    let default = policy(
        Mode::Default,
        &["Bash(awk:*)", "Bash(jq:*)", "Bash(sed:*)"],
        &[],
    );
    for c in [
        "awk '{print $1}' f",
        "awk -F, '{ print $1, $2 }' data.csv",
        "awk 'NR==1' f",
        "awk '/foo/ {print}' f",
        "awk 'BEGIN{x=1} {s+=$2} END{print s/NR}' f",
        "jq '.a | length' f.json",
        "jq -r '.items[] | .name' x.json",
        "sed -n '1,5p' f",
        "sed 's/a/b/g' f",
        "sed -n '1,5p' data.csv",
        "jq . data.json",
        "awk '{print}' a.b c-d.txt",
        "awk -v x=1.5 '{print x}' f.txt",
    ] {
        assert_eq!(
            verdict(&default, c),
            Verdict::Allow,
            "{c}: {:?}",
            analyze(c).hazards
        );
    }
}

/// The oracle's class 1b: a continuation at a line start hid the whole line from tree-sitter.
#[test]
fn a_continuation_at_a_line_start_hides_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let default = policy(
        Mode::Default,
        &["Bash(git status:*)", "Bash(file:*)", "Bash(pwd:*)"],
        &["Bash(touch:*)"],
    );
    let bypass = policy(Mode::Bypass, &[], &["Bash(touch:*)"]);
    for command in [
        "git status --short\n\\\ntouch CANARY",
        "pwd\n\\\n\\\ntouch CANARY",
        "pwd\\\n#\\ ;touch CANARY",
        "p\"\"wd\\\t#\t\t | touch CANARY",
    ] {
        assert!(ran_canary(command, dir.path()), "{command:?} ran nothing");
        assert_ne!(verdict(&default, command), Verdict::Allow, "{command:?}");
        assert_eq!(verdict(&bypass, command), Verdict::Deny, "{command:?}");
    }
}
