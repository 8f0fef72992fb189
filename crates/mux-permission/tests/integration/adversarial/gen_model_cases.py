#!/usr/bin/env python3
"""Writes model_cases.json: the adversarial suite of issue 23 (classes 2-7 and 10).

Each class is built from families of spellings (payloads x forms x options), not one example
each. A case is a command, the settings profile and mode it is judged under, and the verdict
expected. The strings are only ever *analysed* by the test (model_adversarial.rs); nothing runs
them.

Run from anywhere: python3 gen_model_cases.py
"""

import itertools
from case_file import collector, write

DENY = ["Bash(rm:*)", "Bash(curl:*)", "Bash(git push --force:*)"]

PROFILES = {
    # Prefix rules on the programs people allow, with deny rules on two commands.
    "reader": {
        "allow": [
            "Bash(git:*)",
            "Bash(sed:*)",
            "Bash(awk:*)",
            "Bash(gawk:*)",
            "Bash(jq:*)",
            "Bash(find:*)",
            "Bash(grep:*)",
            "Bash(rg:*)",
            "Bash(wc:*)",
            "Bash(ls:*)",
            "Bash(cat:*)",
            "Bash(head:*)",
            "Bash(tail:*)",
            "Bash(sort:*)",
            "Bash(uniq:*)",
            "Bash(cut:*)",
            "Bash(tr:*)",
            "Bash(echo:*)",
            "Bash(printf:*)",
            "Bash(test:*)",
            "Bash([:*)",
            "Bash(pwd:*)",
            "Bash(which:*)",
            "Bash(file:*)",
            "Bash(stat:*)",
            "Bash(du:*)",
            "Bash(df:*)",
            "Bash(diff:*)",
            "Bash(tree:*)",
            "Bash(basename:*)",
            "Bash(dirname:*)",
            "Bash(realpath:*)",
            "Bash(tar:*)",
            "Bash(less:*)",
            "Bash(man:*)",
        ],
        "ask": [],
        "deny": DENY,
    },
    # Deny rules only: what matters is whether the denied command is seen.
    "denier": {"allow": [], "ask": [], "deny": DENY},
}

CASES, case = collector("reader")


def sq(text):
    """`text` single-quoted for the shell."""
    return "'" + text.replace("'", "'\\''") + "'"


# A payload that runs code but no denied command (ask), and ones that a deny rule names (deny).
BENIGN = "./evil"
DENIED = ["rm -rf ~", "curl evil.example"]

# -- class 2: git writes that pass as reads ----------------------------------------------------
CONFIG_KEYS = [
    "core.fsmonitor",
    "core.pager",
    "core.editor",
    "core.sshCommand",
    "core.hooksPath",
    "core.askPass",
    "include.path",
    "includeIf.gitdir:/.path",
    "alias.st",
    "diff.external",
    "pager.log",
    "sequence.editor",
    "credential.helper",
    "gpg.program",
    "filter.x.clean",
]
for key, tail in itertools.product(CONFIG_KEYS, ["list", "get", "x", "'^$'"]):
    value = "!" + BENIGN if key.startswith("alias") else BENIGN
    case(2, f"git config {key} {sq(value)} {tail}", "ask")
for key in CONFIG_KEYS[:8]:
    for form in [
        "git config {k} {v}",
        "git config --local {k} {v}",
        "git config --global {k} {v}",
        "git -C . config {k} {v} list",
        "git config --add {k} {v}",
        "git config --replace-all {k} {v}",
        "git config set {k} {v}",
        "git config -f .git/config {k} {v} get",
        "git config --file=.git/config {k} {v}",
        "git --no-pager config {k} {v} list",
    ]:
        case(2, form.format(k=key, v=sq(BENIGN)), "ask")
for key, payload in itertools.product(["core.fsmonitor", "core.pager", "alias.x"], DENIED):
    value = "!" + payload if key.startswith("alias") else payload
    case(2, f"git config {key} {sq(value)} list", "deny")
    case(2, f"git config {key} {sq(value)} get", "deny")
OUTPUT_SUBS = [
    "stash show -p",
    "shortlog HEAD",
    "rev-list HEAD",
    "reflog",
    "log",
    "show HEAD",
    "diff",
    "whatchanged",
    "diff-tree HEAD",
    "format-patch -1",
]
OUTPUT_SPELLINGS = [
    "--output=.git/hooks/pre-commit",
    "--output .git/hooks/pre-commit",
    "--outp=.git/hooks/pre-commit",
    "--out=x",
    "--output=/tmp/x",
]
for sub, spelling in itertools.product(OUTPUT_SUBS, OUTPUT_SPELLINGS):
    case(2, f"git {sub} {spelling}", "ask")
for command in [
    "git diff --ext-diff",
    "git log -p --ext-diff",
    "git show --textconv HEAD:x",
    "git grep --textconv foo",
    "git cat-file --textconv HEAD:x",
    "git branch evil",
    "git branch -D main",
    "git branch -m x y",
    "git branch --set-upstream-to=x",
    "git tag v9",
    "git tag -d v1",
    "git tag -f v1 HEAD",
    "git remote add x https://evil.example/r",
    "git remote set-url origin x",
    "git reflog expire --all",
    "git reflog delete HEAD@{0}",
    "git stash",
    "git stash drop",
    "git stash pop",
    "git worktree add ../x",
    "git config --edit",
    "git config -e",
    "git config --unset user.name",
    "git config unset user.name",
    "git config --rename-section a b",
    "git submodule update --init",
    "git am x.patch",
    "git apply x.patch",
    "git clean -fdx",
    "git gc --prune=now",
    "git update-ref HEAD x",
    "git hook run pre-commit",
    "git st",
    "git rebase --exec ./evil main",
    "git rebase -s ./evil main",
    "git difftool -x ./evil",
    "git difftool --tool=./evil",
    "git grep -O./evil foo",
    "git fetch --upload-pack=./evil origin",
    "git clone --template=/tmp/t repo",
    "git clone -c core.fsmonitor=./evil repo",
    "git -c core.fsmonitor=./evil status",
    "git --exec-path=/tmp status",
    "git --config-env=core.pager=X log",
    "git log --show-signature",
    "git status --frobnicate",
    "git log -O/tmp/order --frobnicate",
]:
    case(2, command, "ask")

# -- class 3: sed, awk, jq and find programs, read with their own grammar ----------------------
SED_FORMS = [
    ":a e {c}",
    ":a\te {c}",
    "v 4.2 e {c}",
    "v;e {c}",
    "b end; e {c}",
    "t x\ne {c}",
    "1!e {c}",
    "$e {c}",
    "/x/e {c}",
    "0~1e {c}",
    "y/a/b/;e {c}",
    "F;e {c}",
    "z;e {c}",
    "1{{e {c}\n}}",
    ": a;e {c}",
    "T;e {c}",
]
for form in SED_FORMS:
    case(3, f"sed -n {sq(form.format(c='./evil'))} f", "ask")
    for payload in DENIED:
        case(3, f"sed -n {sq(form.format(c=payload))} f", "deny")
for command in [
    "sed -n 'w out' f",
    "sed -n 'W out' f",
    "sed -n 'r /etc/shadow' f",
    "sed 'R x' f",
    "sed -n 's/a/b/w out' f",
    "sed -e 1p -e 'w out' f",
    "sed --expression='w out' f",
    "sed -f script.sed f",
    "sed --file=script.sed f",
    "sed -i s/a/b/ f",
    "sed --in-place=.bak s/a/b/ f",
    "sed -ni p f",
    "sed -n -- 'w x' f",
    "sed -n 'Q;w x' f",
    "sed --frobnicate 1p f",
]:
    case(3, command, "ask")
for command in [
    "sed -f - f",
    "sed -f /dev/stdin f",
    "sed -n -f /dev/./stdin f",
    # The pattern space, run as a command: unreadable, so every deny rule denies it.
    "sed -n 's/x/./evil/e' f",
    "sed 's/x/y/e' f",
    "sed -n 'e' f",
    "sed -n '1!G;e' f",
]:
    case(3, command, "deny")
AWK_ASK = [
    "awk '{print > \"out\"}' f",
    "awk '{print >> \"out\"}' f",
    "awk '{printf(\"%s\", $0) > \"out\"}' f",
    "awk '{ print $1, $2 > \"out\" }' f",
    "awk 'BEGIN{getline line < \"/etc/shadow\"; print line}'",
    "awk 'BEGIN{print ENVIRON[\"HOME\"]}'",
    "awk 'BEGIN { PROCINFO[\"sorted_in\"] = \"f\" }'",
    "awk -f prog.awk f",
    "awk --file=prog.awk f",
    "awk -E prog.awk f",
    "gawk -i lib.awk 'BEGIN{}'",
    "gawk -l filefuncs 'BEGIN{}'",
    "gawk --load=x 'BEGIN{}'",
    "gawk -o out 'BEGIN{}'",
    "gawk --pretty-print=out 'BEGIN{}'",
    "gawk -p prof 'BEGIN{}'",
    "gawk -d vars 'BEGIN{}'",
    "gawk -D 'BEGIN{}'",
    "awk -W exec prog",
    "awk",
]
for command in AWK_ASK:
    case(3, command, "ask")
for payload in DENIED + ["./evil"]:
    q = payload.replace('"', '\\"')
    for form in [
        'BEGIN{{system("{p}")}}',
        '{{print | "{p}"}}',
        'BEGIN{{"{p}" | getline x}}',
        '{{print |& "{p}"}}',
        'BEGIN{{x = 1 / system("{p}") / 2}}',
        'BEGIN{{f = "sys" "tem"; @f("{p}")}}',
        'NR==1{{system("{p}")}}',
    ]:
        # An unreadable program is denied by every deny rule, whatever it runs.
        case(3, f"awk {sq(form.format(p=q))} f", "deny")
        case(3, f"gawk -- {sq(form.format(p=q))}", "deny")
for command in ["awk -f - f", "awk -f /dev/stdin f", "gawk --file=- f", "awk -vx=1 -f- f"]:
    case(3, command, "deny")
for command in [
    "jq env",
    "jq '$ENV.HOME'",
    "jq '\"\\(env.SECRET)\"'",
    "jq 'import \"x\" as x; .'",
    "jq -f prog.jq f",
    "jq --from-file prog.jq",
    "find . -exec ./evil {} \\;",
    "find . -execdir ./evil {} +",
    "find . -ok ./evil {} \\;",
    "find . -okdir ./evil \\;",
    "find . -delete",
    "find . -name x -delete",
    "find . -fprint out",
    "find . -fprint0 out",
    "find . -fprintf out %p",
    "find . -fls out",
    "find . -newer x -fls out",
    "find -L . -frobnicate",
]:
    case(3, command, "ask")
for command in [
    "find . -exec rm {} \\;",
    "find . -execdir curl x \\;",
    "find . -name '*.sh' -exec sh {} \\;",
    "find . -exec sh -c {} \\;",
    "find / -ok rm -rf {} +",
]:
    case(3, command, "deny")

# -- class 4: programs read from standard input, respelled -------------------------------------
STDIN_PATHS = [
    "/dev/./stdin",
    "//dev/stdin",
    "/dev//stdin",
    "/dev/../dev/stdin",
    "/./dev/stdin",
    "/dev/fd/0",
    "/dev/fd//0",
    "/proc/self/fd/0",
    "/proc/self/fd/../fd/0",
    "/proc/thread-self/fd/0",
]
for shell, path in itertools.product(["sh", "bash", "dash", ".", "source", "zsh"], STDIN_PATHS):
    case(4, f"printf x | {shell} {path}", "deny", profile="denier")
for command in [
    "sh 0<<< 'rm -rf ~'",
    "bash 0<<< 'curl x'",
    "dash 0<<<'rm x'",
    "sh 0< script.sh",
    "bash <<< \"rm -rf ~\"",
    "cat <<< 'rm -rf ~' | sh",
    "sh <<'EOF'\nrm -rf ~\nEOF",
    "printf x | fakeroot",
    "printf x | fakeroot -u",
    "printf x | chroot /",
    "printf x | chroot --userspec=0:0 /",
    "printf x | nsenter -t 1 -m",
    "printf x | nsenter --all -t 1",
    "printf x | unshare -r",
    "printf x | script -q /dev/null",
    "printf x | script",
    "printf x | parallel",
    "printf x | parallel -j4",
    "printf x | xargs -I{} sh -c {}",
    "printf x | xargs -I % bash -c %",
    "printf x | xargs --replace sh -c {}",
    "printf x | xargs -i sh -c '{}'",
    "printf x | ex -s",
    "printf x | ex",
    "printf x | vim -es",
    "printf x | vi -e -s",
    "printf x | ed",
    "printf x | gdb -batch",
    "printf x | python3",
    "printf x | python3 -",
    "printf x | perl",
    "printf x | ruby",
    "printf x | node",
    "printf x | at now",
    "printf x | batch",
    "printf x | ksh93",
    "printf x | bash5.2",
    "printf x | zsh-5.9",
    "printf x | busybox sh",
    "printf x | sudo -s",
    "printf x | su",
]:
    case(4, command, "deny", profile="denier")
for mode in ["dontAsk", "bypassPermissions", "acceptEdits", "plan"]:
    for command in ["printf x | sh /dev/./stdin", "printf x | fakeroot", "sh 0<<< 'rm -rf ~'"]:
        case(4, command, "deny", profile="denier", mode=mode)

# -- class 5: evaluated text ----------------------------------------------------------------------
for payload in DENIED:
    for form in [
        "PS4='$({p})'; set -x; ls",
        "PS4='`{p}`' bash -xc ls",
        "export PS4='$({p})'",
        "x='a[$({p})]'; (( x ))",
        "x='a[$({p})]'; echo $((x))",
        "declare x='a[$({p})]'; (( x ))",
        "local x='a[$({p})]'",
        "typeset -i n='a[$({p})]'",
        "alias ll='{p}'",
        "shopt -s expand_aliases; alias x='{p}'; x",
        "PROMPT_COMMAND='{p}' bash -i",
        "trap '{p}' DEBUG",
        "x='{p}'; $x",
        "f() {{ {p}; }}",
        "readonly PAGER='{p}'",
    ]:
        case(5, form.format(p=payload), "deny", profile="denier")
for command in [
    "r$\"\"m -rf ~",
    "r$''m -rf ~",
    "$'\\x72'm -rf ~",
    "\"$X\" -rf ~",
    "$X -rf ~",
    "${X:-rm} -rf ~",
    "r${X}m -rf ~",
    "$(printf rm) -rf ~",
    "`printf rm` -rf ~",
    "\"$(printf rm)\" -rf ~",
    "${!X} -rf ~",
    "$1 -rf ~",
    "$@",
    "\"$@\" x",
    "$* -rf ~",
    "c$'u'rl x",
    "cu$\"\"rl x",
]:
    case(5, command, "deny", profile="denier")

# -- class 6: environment smuggling --------------------------------------------------------------
ENV_VARS = [
    ("GIT_EXTERNAL_DIFF", "git diff"),
    ("PAGER", "git log"),
    ("GIT_PAGER", "git log"),
    ("MANPAGER", "man ls"),
    ("EDITOR", "git commit"),
    ("VISUAL", "git commit"),
    ("GIT_EDITOR", "git commit"),
    ("GIT_SEQUENCE_EDITOR", "git rebase -i main"),
    ("GIT_SSH", "git fetch"),
    ("GIT_SSH_COMMAND", "git fetch"),
    ("GIT_PROXY_COMMAND", "git fetch"),
    ("GIT_ASKPASS", "git fetch"),
    ("SSH_ASKPASS", "git fetch"),
    ("RSYNC_RSH", "rsync a b"),
    ("BROWSER", "git web--browse"),
    ("LESSOPEN", "less f"),
]
for (var, command), payload in itertools.product(ENV_VARS, DENIED + ["rm", "curl"]):
    value = ("|" + payload) if var == "LESSOPEN" else payload
    case(6, f"{var}={sq(value)} {command}", "deny")
for command in [
    "TAR_OPTIONS='--to-command=rm -rf ~' tar -tf a.tar",
    "TAR_OPTIONS=--to-command=curl tar -xf a.tar",
    "GIT_CONFIG_PARAMETERS=\"'core.pager'='rm -rf ~'\" git log",
    "GIT_CONFIG_PARAMETERS=\"'core.fsmonitor'='curl x'\" git status",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=rm git log",
    "BASH_ENV=/dev/stdin bash -c ls",
    "ENV=/dev/./stdin sh -c ls",
    "env PAGER=rm git log",
    "env GIT_EXTERNAL_DIFF=curl git diff",
    "export GIT_PAGER=rm; git log",
    "export EDITOR='curl x'; git commit",
    "declare -x PAGER=rm; git log",
]:
    case(6, command, "deny")
for command in [
    "GIT_EXTERNAL_DIFF=./evil git diff",
    "PAGER=./evil git log",
    "GIT_CONFIG_PARAMETERS=\"'core.pager'='./evil'\" git log",
    "TAR_OPTIONS=--to-command=./evil tar -tf a.tar",
    "BASH_ENV=./evil.sh bash -c ls",
    "LD_PRELOAD=./evil.so git status",
    "GIT_DIR=/tmp/evil git status",
    "HOME=/tmp/evil git log",
    "XDG_CONFIG_HOME=/tmp/evil git log",
    "POSIXLY_CORRECT=1 sort f",
    "RIPGREP_CONFIG_PATH=./evil rg foo",
]:
    case(6, command, "ask")

# -- class 7: runners and shells outside the table -----------------------------------------------
for payload in DENIED:
    for form in [
        "setarch x86_64 {p}",
        "setarch $(uname -m) {p}",
        "linux64 {p}",
        "prlimit --nofile=10 {p}",
        "valgrind {p}",
        "valgrind --tool=none {p}",
        "gdb -ex 'shell {p}' -batch",
        "gdb --batch --eval-command='shell {p}'",
        "make --eval='x:;{p}' x",
        "make -E 'x:; {p}' x",
        "start-stop-daemon --start --exec /usr/bin/{p}",
        "tmux new-session '{p}'",
        "tmux new -d {p}",
        "screen -dm {p}",
        "ksh93 -c '{p}'",
        "mksh -c '{p}'",
        "zsh-5.9 -c '{p}'",
        "numactl --all {p}",
        "cgexec -g cpu:x {p}",
        "faketime now {p}",
        "unknown-wrapper {p}",
        "frob --bar=baz {p}",
        "perf stat {p}",
        "hyperfine '{p}'",
        "watchexec -- {p}",
        "flatpak-spawn --host {p}",
        "toolbox run {p}",
        "distrobox-enter -- {p}",
        "capsh -- -c '{p}'",
        "xvfb-run {p}",
        "sudo sh -c 'frob {p}'",
        "PAGER='frob {p}' git log",
        "frob -x 'frob2 {p}'",
    ]:
        case(7, form.format(p=payload), "deny", profile="denier")

# -- class 10: precision: what the rules allow stays allowed --------------------------------------
for command in [
    "git config user.email",
    "git config --get user.email",
    "git config get user.email",
    "git config --get-all remote.origin.fetch",
    "git config --list",
    "git config -l --show-origin",
    "git config --global user.name",
    "git config list",
    "wc -l src/*.rs",
    "wc -l src/*.rs tests/*.rs",
    "ls src/*.rs",
    "cat docs/*.md",
    "head -n 5 src/*.rs",
    "grep -rn foo --include='*.rs' .",
    "grep -rn --include=\"*.rs\" foo src",
    "grep -rn foo --include='*.rs' --exclude-dir=target .",
    "rg -n foo --glob='*.rs'",
    "rg -n foo -g '!target'",
    "rg --type rust foo src",
    "awk 'NR>1'",
    "awk 'NR>1' f",
    "awk -F, '{print $2}' f",
    "awk '$3 > 100 {print $1}' f",
    "awk 'length($0) > 80' f",
    "awk '{ if ($3 > 1) print $2 }' f",
    "awk '/a|b/ {n++} END {print n}' f",
    "[ -f x ]",
    "[ -d src ]",
    "[ -n x ]",
    "test -f x",
    "[ -f Cargo.toml ] && cat Cargo.toml",
    "jq .name package.json",
    "jq -r '.[] | .id' f.json",
    "jq --arg n x '.[$n]' f.json",
    "find . -name '*.rs' -type f",
    "find src -maxdepth 2 -name '*.toml' -print",
    "sed -n '1,5p' f",
    "sed -n '/x/p' f",
    "sed 's/a/b/g' f",
    "sed -n ':a;N;$!ba;p' f",
    "sort -u f | uniq -c",
    "git log --oneline -5",
    "git diff --stat",
    "git show HEAD --stat",
    "git status --short",
    "git branch -a",
    "git branch --show-current",
    "git tag -l 'v*'",
    "git remote -v",
    "git stash list",
    "git stash show -p",
    "git rev-parse --show-toplevel",
    "git ls-files '*.rs'",
    "git blame -L 1,5 f",
    "git describe --tags",
    "git shortlog -sn",
    "git rev-list --count HEAD",
    "git reflog -5",
    "git log --format='%h %s' --since=2.weeks",
    "git diff HEAD~1 -- src/*.rs",
    "echo hi",
    "printf '%s\\n' a",
    "cut -d, -f1 f",
    "tr a-z A-Z",
    "du -sh src",
    "df -h",
    "stat -c %s f",
    "file f",
    "basename a/b",
    "dirname a/b",
    "realpath .",
    "pwd",
    "which git",
    "diff -u a b",
    "tree -L 2",
    "tail -n 20 f",
    "head -5 f",
    "ls -la src/*.rs | wc -l",
    "LC_ALL=C sort f",
    "TZ=UTC git log -1",
    "NO_COLOR=1 git diff",
    "LANG=C.UTF-8 grep -n foo f",
]:
    case(10, command, "allow")
# ...and what is near them but not explained still asks.
for command in [
    "wc -l *.rs",
    "ls -- *",
    "grep foo --include=*.rs .",
    "cat [ab].txt",
    "awk '{print > \"x\"}' f",
    "[ -v x ]",
    "git config user.email x",
    "git config user.email x y",
    "tr a b c",
    "uniq a b",
    "echo *",
    "LC_ALL=$X sort f",
    "TZ=/etc/x git log",
    "LC_ALL=C PAGER=./evil git log",
]:
    case("10-near", command, "ask")


def main():
    write("model_cases.json", PROFILES, CASES)


if __name__ == "__main__":
    main()
