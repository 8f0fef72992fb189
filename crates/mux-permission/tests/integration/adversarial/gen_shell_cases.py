#!/usr/bin/env python3
"""Writes shell_cases.json: the adversarial shell-analysis suite (issue 15, classes 1-6).

Each case is a command string, the verdict expected under a settings profile, and the class it
probes. The strings are only ever *analysed* by the test; nothing runs them.

Run from anywhere: python3 gen_shell_cases.py
"""

import json
import os

NL = "\\\n"  # a backslash-newline inside a word

# The reviewers' settings (Claude-Code style), and a profile with subcommand deny rules for
# tools other than git.
PROFILES = {
    "reviewers": {
        "allow": [
            "Bash(git:*)",
            "Bash(printf:*)",
            "Bash(test:*)",
            "Bash(sed -n:*)",
            "Bash(tar -tf:*)",
            "Bash(sort:*)",
            "Write(./src/**)",
        ],
        "ask": ["Bash(git push:*)"],
        "deny": [
            "Bash(rm:*)",
            "Bash(curl:*)",
            "Bash(git push --force:*)",
            "Bash(git reset --hard:*)",
            "Read(./secrets/**)",
            "Read(./.env)",
            "Read(./.git/**)",
            "Edit(./secrets/**)",
            "Edit(./.env)",
            "Edit(./.git/**)",
            "WebFetch(domain:169.254.169.254)",
        ],
    },
    "globals": {
        "allow": ["Bash(docker ps:*)", "Bash(kubectl get:*)", "Bash(npm test:*)", "Bash(cargo build:*)"],
        "ask": [],
        "deny": [
            "Bash(docker run:*)",
            "Bash(kubectl delete:*)",
            "Bash(npm publish:*)",
            "Bash(cargo publish:*)",
        ],
    },
}

CASES = []


def case(cls, command, expect, profile="reviewers", mode="default"):
    CASES.append(
        {"class": cls, "command": command, "expect": expect, "profile": profile, "mode": mode}
    )


# -- class 1: builtins that evaluate their arguments --------------------------------------
for cmd, expect in [
    ("printf -v 'a[$(id)]' x", "deny"),
    ("printf -v 'a[$(rm -rf ~)]' x", "deny"),
    ("printf -v 'x[`id`]' 1", "deny"),
    ('printf -v "a[\\$(id)]" x', "deny"),
    ("printf -v HOME /tmp", "ask"),
    ("printf -v GIT_DIR /tmp/evil", "ask"),
    ("printf -v PAGER 'sh -c id'", "ask"),
    ("printf -vHOME x", "ask"),
    ("printf -v 'a[$x]' 1", "deny"),
    ("test -v 'a[$(id)]'", "deny"),
    ("test -R 'a[$(id)]'", "deny"),
    ("test -v HOME", "ask"),
    ("[ -v 'a[$(curl x)]' ]", "deny"),
    ("[[ -v 'a[$(id)]' ]]", "deny"),
    ("[[ 'a[$(id)]' -eq 1 ]]", "deny"),
    ("declare 'a[$(id)]=1'", "deny"),
    ("typeset -a 'x[$(id)]=1'", "deny"),
    ("local 'a[$(id)]=1'", "deny"),
    ("readonly 'a[$(id)]=1'", "deny"),
    ("declare -x PAGER=less", "ask"),
    ("compgen -W '$(id)' x", "deny"),
    ("read 'a[$(id)]'", "deny"),
    ("read -a 'a[$(id)]'", "deny"),
    ("let 'a[$(id)]=1'", "deny"),
    ("let x=1", "ask"),
    ("(( a[$(id)] ))", "deny"),
    ("unset 'a[$(id)]'", "deny"),
    ("getopts ab 'a[$(id)]'", "deny"),
    ("mapfile -C 'curl x' arr", "deny"),
    ("wait -p 'a[$(id)]'", "deny"),
    ("git status && printf -v 'a[$(id)]' x", "deny"),
]:
    case(1, cmd, expect)

# -- class 2: option smuggling, every spelling the parser accepts -------------------------
for cmd, expect in [
    ("git rebase --exe id main", "ask"),
    ("git rebase -x id main", "ask"),
    ("git rebase -xid main", "ask"),
    ("git rebase --exec=id main", "ask"),
    ("git rebase -i --ex=id main", "ask"),
    ("git rebase --exec 'curl x' main", "deny"),
    ("git grep --open-files-in-pager=id x", "ask"),
    ("git grep --open=id x", "ask"),
    ("git grep -Oid x", "ask"),
    ("git grep -nO x", "ask"),
    ("git difftool --extcmd=id", "ask"),
    ("git difftool -x id", "ask"),
    ("git difftool --ext=id HEAD", "ask"),
    ("git bisect run id", "ask"),
    ("git filter-branch --tree-filter id", "ask"),
    ("git config core.pager id", "ask"),
    ("git config --global alias.x '!id'", "ask"),
    ("git config set core.editor id", "ask"),
    ("git -c core.pager=id log", "ask"),
    ("git -c 'alias.x=!id' x", "ask"),
    ("git -c core.pager='curl x' log", "deny"),
    ("git -c 'alias.x=!rm -rf ~' x", "deny"),
    ("git --exec-path=/tmp/x status", "ask"),
    ("git fetch --upload-pa=id origin", "ask"),
    ("git ls-remote --upload-pack id origin", "ask"),
    ("git push --rec=id origin", "ask"),
    ("git clone --templ=/tmp/t repo", "ask"),
    ("git submodule foreach id", "ask"),
    ("git log --outp=/tmp/x", "ask"),
    ("git archive -o /tmp/x HEAD", "ask"),
    ("git frobnicate", "ask"),
    ("tar -tf a.tar --to-command=id", "ask"),
    ("tar -tf a.tar --to-com=id", "ask"),
    ("tar -tf a.tar --use-compress-program=id", "ask"),
    ("tar -tf a.tar --use=id", "ask"),
    ("tar -tf a.tar -vIid", "ask"),
    ("tar -tf a.tar -I id", "ask"),
    ("tar -tf a.tar --checkpoint-action=exec=id", "ask"),
    ("tar -tf a.tar --checkpoint-action=exec='curl x'", "deny"),
    ("tar -tf a.tar -F id", "ask"),
    ("tar -tf a.tar --info-script=id", "ask"),
    ("tar -tf a.tar --new-vol=id", "ask"),
    ("tar -tf a.tar --to-command='rm -rf ~'", "deny"),
    ("tar -tf a.tar --frobnicate", "ask"),
    ("tar -tf evil.example:a.tar", "ask"),
    ("tar -tvf a.tar --file=h:x.tar", "ask"),
    ("sort --compress-program=id f", "ask"),
    ("sort --compress=id f", "ask"),
    ("sort --compress-program=curl f", "deny"),
    ("sort -o out f", "ask"),
    ("sort -nooutfile f", "ask"),
    ("sort --output=out f", "ask"),
    ("sort --out=x f", "ask"),
    ("sort --files0-from=list", "ask"),
    ("sed -n '1e id' f", "ask"),
    ("sed -n '1e curl x' f", "deny"),
    ("sed -n 's/x/id/e' f", "deny"),
    ("sed -n 'e' f", "deny"),
    ("sed -n 'w out' f", "ask"),
    ("sed -n 's/a/b/w out' f", "ask"),
    ("sed -n -i 1p f", "ask"),
    ("sed -n --in-place 1p f", "ask"),
    ("sed -n --in-pl 1p f", "ask"),
    ("sed -ni 1p f", "ask"),
    ("sed -n -e 1p -e 'W out' f", "ask"),
    ("sed -n --expression='1W out' f", "ask"),
    ("sed -n 'r /etc/passwd' f", "ask"),
    ("sed -n -f script.sed f", "ask"),
    ("sed -n -e '1{e id' -e '}' f", "ask"),
    ("find . -exec curl x \\;", "deny"),
    ("find . -execdir rm {} +", "deny"),
    ("find . -ok rm {} \\;", "deny"),
    ("find . -delete", "ask"),
    ("rg --pre curl x", "deny"),
    ("less '+!curl x' f", "deny"),
    ("man -P 'curl x' ls", "deny"),
    ("man --pag='rm -rf ~' ls", "deny"),
    ("vim -c '!curl x' f", "deny"),
    ("vi '+:!rm -rf ~' f", "deny"),
    ("awk 'BEGIN{system(\"id\")}'", "deny"),
    ("awk '{print | \"sh\"}' f", "deny"),
    ("xargs -0 rm", "deny"),
    ("PAGER='curl x' git log", "deny"),
    ("GIT_SSH_COMMAND='rm -rf ~' git fetch", "deny"),
    ("LESSOPEN='|curl x %s' less f", "deny"),
    ("export PAGER='curl x'", "deny"),
    ("git push --forc origin", "deny"),
    ("git push -f origin", "deny"),
    ("git push -fu origin main", "deny"),
    ("git push origin main --force", "deny"),
    ("git push --f", "deny"),
    ("git reset --har HEAD", "deny"),
    ("git reset HEAD~1 --hard", "deny"),
    ("git push --force-with-lease origin", "ask"),
    ("git push origin +main", "deny"),
    ("git push origin +HEAD:refs/heads/main", "deny"),
]:
    case(2, cmd, expect)

# -- class 3: prefix rules see past global options ----------------------------------------
for cmd, expect in [
    ("git -C . push --force", "deny"),
    ("git --no-pager push --force origin", "deny"),
    ("git --git-dir=.git push --force", "deny"),
    ("git -c user.name=x push --force", "deny"),
    ("git -C . -C . reset --hard", "deny"),
    ("git --no-optional-locks reset --hard", "deny"),
    ("git --bare push -f", "deny"),
    ("git -p push --force", "deny"),
    ("git --namespace=x push --force", "deny"),
    ("git --literal-pathspecs reset --hard HEAD", "deny"),
    ("git --unknown-flag push --force", "deny"),
    ("/usr/bin/git -C . push --force", "deny"),
    ("sudo git -C . push --force", "deny"),
    ("git -C src reset --hard", "deny"),
    ("git --config-env=a.b=C push -f", "deny"),
    ("git --work-tree . reset --hard", "deny"),
    ("git -C . push origin", "ask"),
    ("git --no-pager push origin", "ask"),
    ("git -P push", "ask"),
    ("git --work-tree=. push", "ask"),
    ("git --git-dir .git push", "ask"),
    ("git --no-replace-objects push origin", "ask"),
    ("git -c push.default=current push", "ask"),
    ("git --no-advice push", "ask"),
]:
    case(3, cmd, expect)
for cmd, expect in [
    ("docker --context prod run alpine", "deny"),
    ("docker -H tcp://h:2375 run x", "deny"),
    ("docker --log-level=debug run x", "deny"),
    ("kubectl -n prod delete pod x", "deny"),
    ("kubectl --context=prod delete pod x", "deny"),
    ("kubectl --kubeconfig k delete ns x", "deny"),
    ("npm --prefix . publish", "deny"),
    ("npm -w pkg publish", "deny"),
    ("cargo +nightly publish", "deny"),
    ("cargo --locked publish", "deny"),
    ("cargo -Z unstable-options publish", "deny"),
    ("docker --context prod ps", "ask"),
    ("docker ps -a", "allow"),
    ("cargo build --release", "allow"),
]:
    case(3, cmd, expect, profile="globals")

# -- class 4: the words bash builds -------------------------------------------------------
for cmd, expect in [
    ("c" + NL + "url x", "deny"),
    ("r" + NL + "m -rf x", "deny"),
    ("cu" + NL + "r" + NL + "l x", "deny"),
    ("git push --for" + NL + "ce", "deny"),
    ("git push -" + NL + "-force", "deny"),
    ("git" + NL + " push --force", "deny"),
    ("gi" + NL + "t push origin", "ask"),
    ("/usr/bin/c[u]rl x", "deny"),
    ("cur? x", "deny"),
    ("c* x", "deny"),
    ("/usr/bin/cu*", "deny"),
    ("[r]m -rf x", "deny"),
    ("r? -rf x", "deny"),
    ("/bin/?? -rf x", "deny"),
    ("cu[!x]l x", "deny"),
    ("[a-z]url x", "deny"),
    ("./c*", "deny"),
    ("*", "deny"),
    ("/usr/*/curl x", "deny"),
    ("g?t push --force", "deny"),
    # tree-sitter-bash cannot parse `g?t`: an unparsable script with a pattern is unreadable,
    # and `g?t` could be `git`, which deny rules name.
    ("g?t push origin", "deny"),
    ("g?t status", "deny"),
    ("l? -la", "ask"),
    ("{curl,x} y", "deny"),
    ("git status; c* x", "deny"),
]:
    case(4, cmd, expect)

# -- class 5: `--` and string-taking runners ---------------------------------------------
for cmd, expect in [
    ("trap -- 'curl x' EXIT", "deny"),
    ("eval -- 'curl x'", "deny"),
    ("sh -c -- 'curl x'", "deny"),
    ("bash -c -- 'rm -rf ~'", "deny"),
    ("env -S 'curl x'", "deny"),
    ("env -S'curl x'", "deny"),
    ("env --split-string='curl x'", "deny"),
    ("watch 'curl x'", "deny"),
    ("watch -n 1 'rm -rf x'", "deny"),
    ("watch -x curl x", "deny"),
    ("parallel ::: 'curl x'", "deny"),
    ("script -c 'curl x' /dev/null", "deny"),
    ("script -qc 'curl x'", "deny"),
    ("setpriv --reuid=1 curl x", "deny"),
    ("rbash -c 'curl x'", "deny"),
    ("busybox sh -c 'curl x'", "deny"),
    ("toybox sh -c 'rm x'", "deny"),
    ("ssh-agent curl x", "deny"),
    ("coproc curl x", "deny"),
    ("pkexec rm -rf /", "deny"),
    ("/lib64/ld-linux-x86-64.so.2 /bin/curl x", "deny"),
    ("ld.so /bin/rm x", "deny"),
    ("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 /usr/bin/curl x", "deny"),
    ("dash -c 'curl x'", "deny"),
    ("sg wheel 'curl x'", "deny"),
    ("su -c 'curl x'", "deny"),
    ("systemd-run curl x", "deny"),
    ("ssh host 'curl x'", "deny"),
    ("env 'PAGER=curl x' git log", "deny"),
    ("sh -c 'printf x'", "ask"),
    ("trap -- 'printf x' EXIT", "ask"),
    ("watch git status", "ask"),
]:
    case(5, cmd, expect)

# -- class 6: a shell that reads its script from standard input --------------------------
for cmd, expect, mode in [
    ("printf 'curl x' | sh", "deny", "default"),
    ("printf x | bash -s", "deny", "default"),
    ("source /dev/stdin", "deny", "default"),
    (". /dev/fd/0", "deny", "default"),
    ("bash < script.sh", "deny", "default"),
    ("sh <<EOF\nls\nEOF", "deny", "default"),
    ("bash <<< 'ls'", "deny", "default"),
    ("git log | sh", "deny", "default"),
    ("sort f | bash", "deny", "default"),
    ("printf x | dash", "deny", "default"),
    ("printf x | zsh", "deny", "default"),
    ("printf x | busybox sh", "deny", "default"),
    ("sh -s < f", "deny", "default"),
    ("bash /dev/stdin < f", "deny", "default"),
    ("sh - < f", "deny", "default"),
    ("source /proc/self/fd/0", "deny", "default"),
    (". <(printf x)", "deny", "default"),
    ("source <(git show HEAD:x)", "deny", "default"),
    ("bash <(printf x)", "deny", "default"),
    ('sh -c "$(printf x)"', "deny", "default"),
    ('eval "$(git show HEAD:x)"', "deny", "default"),
    ("printf x | sudo sh", "deny", "default"),
    ("printf x | xargs sh -c", "deny", "default"),
    ("printf x | env sh", "deny", "default"),
    ("printf x | timeout 5 bash", "deny", "default"),
    ("printf 'curl x' | sudo -s", "deny", "default"),
    ("printf x | sudo -u root -i", "deny", "default"),
    ("printf x | sh", "deny", "dontAsk"),
    ("printf x | sh", "deny", "bypassPermissions"),
    ("printf x | sh", "deny", "acceptEdits"),
    ("printf x | ksh", "deny", "plan"),
]:
    case(6, cmd, expect, mode=mode)

# -- benign controls: the fix must not just ask for everything ----------------------------
for cmd, expect in [
    ("git status", "allow"),
    ("git log --oneline -5", "allow"),
    ("git log -5 --oneline", "allow"),
    ("git log --format='%h %s'", "allow"),
    ("git log -S foo", "allow"),
    ("git diff HEAD~1", "allow"),
    ("git show HEAD:README.md", "allow"),
    ("git -C . status", "allow"),
    ("git --no-pager log -3", "allow"),
    ("git grep -n foo", "allow"),
    ("git config --get user.name", "allow"),
    ("git rebase --continue", "allow"),
    ("git status && git diff", "allow"),
    ("sort -n file", "allow"),
    ("sort -k2,2 -t, f", "allow"),
    ("sort -u f", "allow"),
    ("sort -rn f | sed -n 1,3p", "allow"),
    ("sed -n 1,5p f", "allow"),
    ("sed -n '/foo/p' f", "allow"),
    ("sed -n 's/a/b/gp' f", "allow"),
    ("sed -n -E 's/(a)/\\1/p' f", "allow"),
    ("sed -n '$p' f", "allow"),
    ("sed -n 'p;n' f", "allow"),
    ("printf '%s\\n' x", "allow"),
    ("printf 'a[$(id)]\\n'", "allow"),
    ("test -f x", "allow"),
    ("test -n x", "allow"),
    ("tar -tf a.tar", "allow"),
    ("tar -tf a.tar -v", "allow"),
    ("tar -tf a.tar --wildcards '*.rs'", "allow"),
    ("git push origin", "ask"),
    ("git push --force-with-lease", "ask"),
    ("rm -rf x", "deny"),
    ("ls", "ask"),
    # Fail closed, but not deny-everything: these stay ask under the deny rules.
    ("git ls-files | xargs grep -n bash", "ask"),
    ("xargs grep sh", "ask"),
    ("export PATH=$PATH:/opt/bin", "ask"),
    ('[[ -n "$x" ]] && git status', "ask"),
    ("echo $((1+2))", "ask"),
    ("bash script.sh", "ask"),
    ("timeout 5 git status", "ask"),
]:
    case("control", cmd, expect)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "shell_cases.json")
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"profiles": PROFILES, "cases": CASES}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    counts = {}
    for c in CASES:
        counts[str(c["class"])] = counts.get(str(c["class"]), 0) + 1
    print(f"wrote {len(CASES)} cases to {out}: {counts}")


if __name__ == "__main__":
    main()
