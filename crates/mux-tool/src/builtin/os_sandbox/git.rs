//! git under the wall: a repository the agent could have written runs nothing its config
//! names, while the user's own repository behaves as before.
//!
//! Any git directory in the places a walled command can write (the root and its temp dir),
//! other than the root's own `.git` (read-only, see module `protected`), may hold a config the
//! agent planted: `core.fsmonitor`, hooks, a pager, an external diff, a filter driver. git
//! reads configuration from the environment in the command line's scope (`GIT_CONFIG_COUNT`,
//! `GIT_CONFIG_KEY_n`, `GIT_CONFIG_VALUE_n`), above every file, and this module sets it:
//!
//! 1. **Repositories git finds** (`cd evil && git status`): every repository counts as
//!    another user's (`GIT_TEST_ASSUME_DIFFERENT_OWNER`, unless
//!    [`Bash::nested_git`](crate::builtin::Bash::nested_git)), so git refuses one that
//!    `safe.directory` does not list before it reads its config. Listed are the repository the
//!    root is in, the submodules and linked worktrees of its `.git` (whose `.git` files are
//!    then kept read-only too, so none can be swapped for a planted directory), and the call's
//!    temp dir (new and empty when the command starts), as well as what the user's own
//!    `safe.directory` lists. Implicit bare repositories are refused
//!    (`safe.bareRepository=explicit`). This closes what no single key can: filter, diff and
//!    merge drivers are named by attributes (`.git/info/attributes` included, which nothing
//!    turns off), and a remote's `uploadpack` by the remote's name.
//! 2. **Git directories given explicitly** (`--git-dir`, `GIT_DIR`, which the permission layer
//!    asks about) are matched by `includeIf.gitdir:` patterns: every git directory in the
//!    writable places but the root's `.git` (and, when git may write `.git`, its `modules` and
//!    `worktrees`). One in the root includes a file git cannot read ([`REFUSED`]), so every git
//!    command on it stops before it runs anything: drivers named by `info/attributes` and
//!    trailer commands are named under any name, so no fixed key could switch them off.
//!    With [`Bash::nested_git`](crate::builtin::Bash::nested_git), and for one in the call's
//!    temp dir (which only this command filled), the file included is one of neutral values
//!    ([`NEUTRAL`]): hooks in `/dev/null`, no fsmonitor, no external diff, no credential
//!    helper, `ssh` for ssh, no editor, no `ext::`, `git://` (whose proxy command cannot be
//!    overridden) or local transport (whose `uploadpack` a remote's name chooses), attributes
//!    from the empty tree rather than the working tree's `.gitattributes` (in a SHA-1
//!    repository). Later entries of the command line's scope win over the repository's own, so
//!    the planted values lose. Both files live in one directory a user (`mux-git-<uid>` in
//!    the temp dir, mode 0700), reused by every process, so none leaves one behind.
//! 3. `GIT_PAGER=cat` for every repository: the wall gives no terminal, so git pages nothing
//!    anyway; a command that makes one (`script`) gets no pager either.
//!
//! The root's own repository matches no pattern: its config is read as before, hooks and
//! filters included.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::Confinement;

/// The values that switch off what a planted config can run, as a git config file.
pub(crate) const NEUTRAL: &str = "\
# Written by mux: the neutral configuration of git directories the agent could have written.
[core]
\tfsmonitor = false
\thooksPath = /dev/null
\tpager = cat
\teditor = :
\taskPass =
\tsshCommand = ssh
\tattributesFile = /dev/null
\talternateRefsCommand =
[sequence]
\teditor = :
[diff]
\texternal =
[credential]
\thelper =
[gpg]
\tprogram = gpg
[gpg \"openpgp\"]
\tprogram = gpg
[gpg \"x509\"]
\tprogram = gpgsm
[gpg \"ssh\"]
\tprogram = ssh-keygen
\tdefaultKeyCommand =
[attr]
\ttree = 4b825dc642cb6eb9a060e54bf8d69288fbee4904
[protocol \"ext\"]
\tallow = never
[protocol \"file\"]
\tallow = never
[protocol \"git\"]
\tallow = never
[interactive]
\tdiffFilter = cat
[help]
\tformat = man
[man]
\tviewer = man
[imap]
\ttunnel =
";

/// A config file git cannot read (an unclosed section on its second line): included for a
/// git directory the agent could have written, it makes every git command that reads
/// configuration stop before it runs anything, as `fatal: bad config line 2 in file
/// …/REFUSED_NAME`. Drivers are named by attributes (`filter=x` in `info/attributes`, which
/// nothing turns off) and trailer commands by their token (`trailer.<token>.cmd`), under any
/// name, so no file of fixed keys can switch them off.
pub(crate) const REFUSED: &str = "\
# Written by mux: git reads no git directory the agent could have written under the OS wall
# (Bash::nested_git opens them, with neutral keys).
[mux refuses this git directory
";

/// The name of [`REFUSED`]'s file, which git's message shows.
const REFUSED_NAME: &str = "mux-refuses-git-directories-the-agent-could-have-written.gitconfig";
/// The name of [`NEUTRAL`]'s file.
const NEUTRAL_NAME: &str = "neutral.gitconfig";

/// A directory of this process's own, used only when the user's shared one cannot be (see
/// [`config_dir`]).
static OWN_DIR: Mutex<Option<tempfile::TempDir>> = Mutex::new(None);

/// Where [`NEUTRAL`] and [`REFUSED`] are written, outside every writable place: one
/// directory a user (`mux-git-<uid>` in the temp dir), shared by every mux process of theirs
/// and reused, so that no process leaves one behind. It is made with mode 0700 and used only
/// when it is a directory (not a link) owned by the user with no access for others; else
/// (another user took the name) a directory of this process's own.
fn config_dir() -> io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = rustix::process::geteuid().as_raw();
    let shared = std::env::temp_dir().join(format!("mux-git-{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&shared);
    if std::fs::symlink_metadata(&shared)
        .is_ok_and(|meta| meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0)
    {
        return Ok(shared);
    }
    let mut own = OWN_DIR.lock().unwrap_or_else(PoisonError::into_inner);
    if own.is_none() {
        *own = Some(tempfile::Builder::new().prefix("mux-git-").tempdir()?);
    }
    Ok(own
        .as_ref()
        .map(|dir| dir.path().to_path_buf())
        .unwrap_or_default())
}

/// The file `name` in `dir` holding `text`, written again (whole, by a rename) if it went
/// missing or was changed.
fn config_file(dir: &Path, name: &str, text: &str) -> io::Result<PathBuf> {
    let path = dir.join(name);
    if std::fs::read(&path).is_ok_and(|held| held == text.as_bytes()) {
        return Ok(path);
    }
    let mut fresh = tempfile::NamedTempFile::new_in(dir)?;
    io::Write::write_all(&mut fresh, text.as_bytes())?;
    fresh.persist(&path).map_err(|err| err.error)?;
    Ok(path)
}

/// The environment git gets under the wall of `confinement`, and the files to keep read-only
/// (the `.git` files of the trusted submodules and worktrees inside the root).
pub(crate) struct GitWall {
    /// Variables to set.
    pub(crate) vars: Vec<(OsString, OsString)>,
    /// `.git` files to keep read-only.
    pub(crate) gitfiles: Vec<PathBuf>,
}

/// What git gets under the wall of `confinement` (see the module's documentation).
pub(crate) fn wall(confinement: &Confinement) -> io::Result<GitWall> {
    // Without a trailing `/`, which would turn a pattern into a prefix.
    let root: PathBuf = confinement.root.components().collect();
    let scratch: PathBuf = confinement.scratch.components().collect();
    let scratch = scratch.canonicalize().unwrap_or(scratch);
    let confinement = &Confinement {
        root,
        scratch,
        ..confinement.clone()
    };
    let dir = config_dir()?;
    let neutral = config_file(&dir, NEUTRAL_NAME, NEUTRAL)?;
    // A git directory in the root the agent could have written is refused, unless nested
    // repositories are opened; one in the call's temp dir (which this command filled) gets
    // the neutral keys.
    let in_root = if confinement.nested_git {
        neutral.clone()
    } else {
        config_file(&dir, REFUSED_NAME, REFUSED)?
    };
    let mut config: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |key: OsString, value: OsString| config.push((key, value));
    set("safe.bareRepository".into(), "explicit".into());
    let trusted = trusted_worktrees(&confinement.root);
    let mut gitfiles = Vec::new();
    for worktree in &trusted {
        set("safe.directory".into(), worktree.clone().into_os_string());
        let gitfile = worktree.join(".git");
        if worktree != &confinement.root
            && worktree.starts_with(&confinement.root)
            && std::fs::symlink_metadata(&gitfile).is_ok_and(|meta| meta.is_file())
        {
            gitfiles.push(gitfile);
        }
    }
    let (root_dirs, scratch_dirs) = untrusted_gitdirs(confinement);
    for (patterns, file) in [(root_dirs, &in_root), (scratch_dirs, &neutral)] {
        for pattern in patterns {
            let mut key = OsString::from("includeIf.gitdir:");
            key.push(pattern);
            key.push(".path");
            set(key, file.clone().into_os_string());
        }
    }
    // The call's temp dir is new and empty: what is in it, this command made.
    let mut scratch = confinement.scratch.clone().into_os_string();
    set("safe.directory".into(), scratch.clone());
    scratch.push("/*");
    set("safe.directory".into(), scratch);
    let mut vars: Vec<(OsString, OsString)> = vec![
        ("GIT_CONFIG_COUNT".into(), config.len().to_string().into()),
        ("GIT_PAGER".into(), "cat".into()),
    ];
    if !confinement.nested_git {
        vars.push(("GIT_TEST_ASSUME_DIFFERENT_OWNER".into(), "1".into()));
    }
    for (n, (key, value)) in config.into_iter().enumerate() {
        vars.push((format!("GIT_CONFIG_KEY_{n}").into(), key));
        vars.push((format!("GIT_CONFIG_VALUE_{n}").into(), value));
    }
    Ok(GitWall { vars, gitfiles })
}

/// `includeIf.gitdir:` patterns (git's wildmatch, `/` not matched by `*`) that match every
/// git directory in the writable places but the root's own `.git` and what is read-only
/// inside it: those in the root, and those in the call's temp dir.
fn untrusted_gitdirs(confinement: &Confinement) -> (Vec<OsString>, Vec<OsString>) {
    let root = escape(confinement.root.as_os_str());
    let mut patterns = vec![root.clone()];
    let mut beneath = |base: &OsStr, names: Vec<String>| {
        for name in names {
            for tail in ["", "/**"] {
                let mut pattern = base.to_owned();
                pattern.push("/");
                pattern.push(&name);
                pattern.push(tail);
                patterns.push(pattern);
            }
        }
    };
    beneath(&root, names_other_than(&[".git"]));
    if confinement.git_writes {
        // `.git` is writable but for what module `protected` keeps read-only.
        let mut dot_git = root.clone();
        dot_git.push("/.git");
        beneath(&dot_git, names_other_than(&["modules", "worktrees"]));
    }
    let scratch = escape(confinement.scratch.as_os_str());
    let mut under = scratch.clone();
    under.push("/**");
    (patterns, vec![scratch, under])
}

/// Wildmatch patterns of one path component that match every name but `excluded` (names of
/// plain ASCII letters and `.`): a name leaves the excluded ones at its first character that
/// none of them has there, or is a proper prefix of one, or runs on past one.
fn names_other_than(excluded: &[&str]) -> Vec<String> {
    fn walk(prefix: &str, excluded: &[&str], out: &mut Vec<String>) {
        let depth = prefix.len();
        if !prefix.is_empty() && !excluded.contains(&prefix) {
            out.push(prefix.to_owned());
        }
        let mut next: Vec<char> = excluded
            .iter()
            .filter(|name| name.starts_with(prefix) && name.len() > depth)
            .filter_map(|name| name[depth..].chars().next())
            .collect();
        next.sort_unstable();
        next.dedup();
        if next.is_empty() {
            out.push(format!("{prefix}?*"));
            return;
        }
        let class: String = next.iter().collect();
        out.push(format!("{prefix}[!{class}]*"));
        for c in next {
            walk(&format!("{prefix}{c}"), excluded, out);
        }
    }
    let mut out = Vec::new();
    walk("", excluded, &mut out);
    out
}

/// `path` with wildmatch's special characters escaped.
fn escape(path: &OsStr) -> OsString {
    let mut out = Vec::with_capacity(path.len());
    for &byte in path.as_bytes() {
        if matches!(byte, b'\\' | b'*' | b'?' | b'[') {
            out.push(b'\\');
        }
        out.push(byte);
    }
    OsString::from_vec(out)
}

/// The working trees git may open under the wall: the repository `root` is in (the nearest
/// directory at or above it with a `.git`), and the submodules and linked worktrees its
/// `.git` directory records.
fn trusted_worktrees(root: &Path) -> Vec<PathBuf> {
    let Some(top) = root
        .ancestors()
        .find(|dir| is_repository(&dir.join(".git")))
    else {
        return Vec::new();
    };
    let mut trees = vec![top.to_path_buf()];
    let git_dir = top.join(".git");
    if git_dir.is_dir() {
        submodules(&git_dir.join("modules"), 0, &mut trees);
        worktrees(&git_dir.join("worktrees"), &mut trees);
    }
    trees
}

/// Whether `dot_git` is a git directory (it has `HEAD`) or a `.git` file; an empty
/// placeholder of module `protected` is neither.
fn is_repository(dot_git: &Path) -> bool {
    match std::fs::symlink_metadata(dot_git) {
        Ok(meta) if meta.is_file() => true,
        Ok(meta) if meta.is_dir() => dot_git.join("HEAD").exists(),
        _ => false,
    }
}

/// The working trees of the submodules whose git directories are under `modules` (nested
/// submodules included, as deep as git nests them in practice).
fn submodules(modules: &Path, depth: usize, trees: &mut Vec<PathBuf>) {
    const DEEPEST: usize = 16;
    let Ok(entries) = std::fs::read_dir(modules) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            continue;
        }
        if let Some(tree) = std::fs::read_to_string(dir.join("config"))
            .ok()
            .and_then(|config| core_worktree(&config))
            .and_then(|tree| dir.join(tree).canonicalize().ok())
        {
            trees.push(tree);
        }
        if depth < DEEPEST {
            // A submodule's own submodules, and names with a `/` in them.
            submodules(&dir.join("modules"), depth + 1, trees);
            submodules(&dir, depth + 1, trees);
        }
    }
}

/// The working trees of the linked worktrees under `worktrees` (each records its `.git` file
/// in `gitdir`).
fn worktrees(worktrees: &Path, trees: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(worktrees) else {
        return;
    };
    for entry in entries.flatten() {
        if let Some(tree) = std::fs::read_to_string(entry.path().join("gitdir"))
            .ok()
            .and_then(|gitfile| Path::new(gitfile.trim_end()).parent()?.canonicalize().ok())
        {
            trees.push(tree);
        }
    }
}

/// `core.worktree` of a config file as git writes it for a submodule (`[core]` then
/// `worktree = ../../sub`); `None` when the file says it otherwise.
fn core_worktree(config: &str) -> Option<String> {
    let mut in_core = false;
    for line in config.lines().map(str::trim) {
        if line.starts_with('[') {
            in_core = line.eq_ignore_ascii_case("[core]");
        } else if in_core && let Some((key, value)) = line.split_once('=') {
            let value = value.trim();
            if key.trim().eq_ignore_ascii_case("worktree")
                && !value.is_empty()
                && !value.contains(['"', '\\', '#', ';'])
            {
                return Some(value.to_owned());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wildmatch of one component, enough for the patterns [`names_other_than`] makes
    /// (`?`, `*` and `[!...]`).
    fn matches(pattern: &[u8], name: &[u8]) -> bool {
        match (pattern.split_first(), name.split_first()) {
            (None, _) => name.is_empty(),
            (Some((b'*', rest)), _) => (0..=name.len()).any(|i| matches(rest, &name[i..])),
            (Some((b'?', rest)), Some((_, name))) => matches(rest, name),
            (Some((b'[', rest)), Some((&c, name))) => {
                let close = rest.iter().position(|&b| b == b']').unwrap();
                let class = &rest[1..close];
                !class.contains(&c) && matches(&rest[close + 1..], name)
            }
            (Some((&p, rest)), Some((&c, name))) => p == c && matches(rest, name),
            (Some(_), None) => false,
        }
    }

    #[test]
    fn the_patterns_match_every_name_but_the_excluded_ones() {
        let patterns = names_other_than(&[".git"]);
        let hit = |name: &str| {
            patterns
                .iter()
                .any(|p| matches(p.as_bytes(), name.as_bytes()))
        };
        for name in [
            "evil", ".g", ".gi", ".gitx", ".git.", ".h", "x", ".", "..x", "g",
        ] {
            assert!(hit(name), "{name} escaped {patterns:?}");
        }
        assert!(!hit(".git"));
        let patterns = names_other_than(&["modules", "worktrees"]);
        let hit = |name: &str| {
            patterns
                .iter()
                .any(|p| matches(p.as_bytes(), name.as_bytes()))
        };
        for name in [
            "objects",
            "m",
            "mod",
            "modulesx",
            "w",
            "worktree",
            "worktreesx",
            "refs",
        ] {
            assert!(hit(name), "{name} escaped {patterns:?}");
        }
        assert!(!hit("modules") && !hit("worktrees"));
    }

    /// Runs `script -qc LINE` (a terminal, so git would page) in `dir`, with `vars` or not.
    fn on_a_terminal(dir: &Path, line: &str, vars: Option<&[(OsString, OsString)]>) {
        let mut command = std::process::Command::new("script");
        command
            .args(["-qc", line, "/dev/null"])
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        if let Some(vars) = vars {
            command.envs(vars.iter().cloned());
        }
        command.status().unwrap();
    }

    #[test]
    fn a_planted_pager_does_not_run_on_a_terminal() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("root");
        let evil = root.join("evil");
        std::fs::create_dir_all(&evil).unwrap();
        let git = |dir: &Path, line: &str| on_a_terminal(dir, line, None);
        git(
            &root,
            "git init -q && git -c user.name=u -c user.email=e commit -q --allow-empty -m top",
        );
        git(
            &evil,
            "git init -q && git -c user.name=u -c user.email=e commit -q --allow-empty -m evil",
        );
        let canary = root.join("paged");
        let pager = format!("\"touch {}; cat\"", canary.display());
        std::fs::write(
            evil.join(".git/config"),
            format!("[core]\n\tpager = {pager}\n[pager]\n\tlog = {pager}\n"),
        )
        .unwrap();
        let confinement = Confinement {
            policy: super::super::SandboxPolicy::WorkspaceWrite,
            network: false,
            egress: None,
            root: root.clone(),
            scratch: dir.path().join("scratch"),
            mount_view: true,
            git_writes: false,
            nested_git: false,
            files: Default::default(),
        };
        let vars = wall(&confinement).unwrap().vars;
        for line in [
            "git --git-dir=evil/.git -p log -1",
            "git --git-dir=evil/.git --paginate log -1",
            "cd evil && git -p log -1",
            "cd evil && git log -1",
        ] {
            on_a_terminal(&root, line, Some(&vars));
            assert!(!canary.exists(), "{line}");
            // The control: without the wall's configuration, the planted pager runs.
            on_a_terminal(&root, line, None);
            assert!(canary.exists(), "{line} (control)");
            std::fs::remove_file(&canary).unwrap();
        }
    }

    #[test]
    fn special_characters_of_the_root_are_escaped() {
        assert_eq!(
            escape(OsStr::new("/a[b]*?\\c")),
            OsString::from("/a\\[b]\\*\\?\\\\c")
        );
    }

    #[test]
    fn a_submodules_worktree_is_read_from_its_config() {
        let config = "[core]\n\trepositoryformatversion = 0\n\tworktree = ../../../sub\n";
        assert_eq!(core_worktree(config).as_deref(), Some("../../../sub"));
        assert_eq!(core_worktree("[remote \"o\"]\n\tworktree = x\n"), None);
    }
}
