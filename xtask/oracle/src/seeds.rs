//! The search's starting corpus: hand-written commands per program that the policy allows,
//! written the way a user writes them, beside the allowed commands of the sampling generator.
//!
//! Each seed is plain (no attack in it); the mutations of [`crate::mutate`] move it toward the
//! spellings where two parsers disagree, and add the payloads.

/// Hand-written seeds: `(program, command)`. The program names the seed's model and is what
/// the report and the mutations key on.
pub(crate) const HAND: &[(&str, &str)] = &[
    ("echo", "echo ok"),
    ("echo", "echo hello world"),
    ("echo", "echo -n x"),
    ("echo", "echo -e 'a b'"),
    ("echo", "echo \"a b\" c"),
    ("ls", "ls -la src"),
    ("ls", "ls"),
    ("ls", "ls -1 --color=never ."),
    ("cat", "cat README.md"),
    ("cat", "cat -n notes.txt src/main.rs"),
    ("grep", "grep -n fn src/main.rs"),
    ("grep", "grep -r hello ."),
    ("grep", "grep -E 'a|b' notes.txt"),
    ("grep", "grep -c -e beta notes.txt"),
    ("grep", "grep --context=1 beta notes.txt"),
    ("awk", "awk '{print $1}' notes.txt"),
    ("awk", "awk 'BEGIN { print 1 }'"),
    ("awk", "awk '/beta/ { print NR }' notes.txt"),
    ("awk", "awk -F, '{ print $2 / 2 }' data.csv"),
    ("awk", "awk '{ n = $2 / 2; print n }' data.csv"),
    ("awk", "awk 'NR == 1 { print }' README.md"),
    ("awk", "awk '{ if ($0 ~ /a/) print }' notes.txt"),
    ("awk", "awk 'END { print NR }' notes.txt"),
    ("awk", "awk -v n=2 'NR == n { print $0 }' notes.txt"),
    ("jq", "jq . data.json"),
    ("jq", "jq '.name' data.json"),
    ("jq", "jq -r '.items[]' data.json"),
    ("jq", "jq -n '1 + 2'"),
    ("jq", "jq '.nested | keys' data.json"),
    ("sed", "sed -n '1,3p' notes.txt"),
    ("sed", "sed 's/a/b/' notes.txt"),
    ("sed", "sed -n '/beta/p' notes.txt"),
    ("sed", "sed -e 's/x/y/g' -e '2q' README.md"),
    ("git", "git log --oneline -3"),
    ("git", "git log -U3 -1"),
    ("git", "git log --format=%H -1"),
    ("git", "git log --min-parents=0 -1"),
    ("git", "git log --max-parents=1 -2 --stat"),
    ("git", "git log -p -1 -- README.md"),
    ("git", "git diff"),
    ("git", "git diff -U1"),
    ("git", "git diff --stat"),
    ("git", "git diff --unified=2 HEAD"),
    ("git", "git diff HEAD~1 -- notes.txt"),
    ("git", "git blame README.md"),
    ("git", "git blame -L 1,2 README.md"),
    ("git", "git blame --reverse v1 README.md"),
    ("git", "git status"),
    ("git", "git status --short"),
    ("git", "git show --stat HEAD"),
    ("git", "git show --format=%s -s HEAD"),
    ("diff", "diff README.md notes.txt"),
    ("diff", "diff -u README.md notes.txt"),
    ("diff", "diff --context=2 README.md notes.txt"),
    ("find", "find . -name '*.rs'"),
    ("find", "find src -type f"),
    ("find", "find . -maxdepth 1 -newer README.md"),
    ("head", "head -n 3 README.md"),
    ("tail", "tail -n 2 notes.txt"),
    ("wc", "wc -l README.md notes.txt"),
    ("sort", "sort -t, -k2 data.csv"),
    ("sort", "sort -r notes.txt"),
    ("uniq", "uniq -c notes.txt"),
    ("cut", "cut -d, -f1 data.csv"),
    ("tr", "tr a-z A-Z"),
    ("stat", "stat README.md"),
];

/// The program a command's first word names, for a generated seed: its base name, or `"sh"`
/// when the command does not start with a plain word.
pub(crate) fn program_of(command: &str) -> &'static str {
    let first = command
        .split(|c: char| c.is_whitespace() || c == ';' || c == '|' || c == '&')
        .next()
        .unwrap_or("");
    let name = first.rsplit('/').next().unwrap_or(first);
    PROGRAMS
        .iter()
        .find(|p| **p == name)
        .copied()
        .unwrap_or("sh")
}

/// Every program the seeds are keyed on.
pub(crate) const PROGRAMS: &[&str] = &[
    "echo", "ls", "cat", "grep", "awk", "jq", "sed", "git", "diff", "find", "head", "tail", "wc",
    "sort", "uniq", "cut", "tr", "stat", "file", "pwd",
];

#[cfg(test)]
mod tests {
    use mux_permission::Verdict;

    use super::*;
    use crate::policy;

    /// Every hand-written seed is allowed, so its mutations start where an unsafe answer hides.
    #[test]
    fn every_hand_written_seed_is_allowed() {
        let permissions = policy::permissions().unwrap();
        for (program, command) in HAND {
            assert_eq!(
                policy::verdict(&permissions, command).unwrap(),
                Verdict::Allow,
                "{command}"
            );
            assert_eq!(program_of(command), *program, "{command}");
        }
    }
}
