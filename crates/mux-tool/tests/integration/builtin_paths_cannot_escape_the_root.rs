//! Adversarial paths against real temporary directories: every escape is refused with the
//! reason, every look-alike stays inside the root.
#![cfg(all(feature = "builtin", unix))]

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use mux_tool::builtin::{Sandbox, SandboxError};

/// A temporary directory holding `root/` (the sandbox) and `outside/secret.txt`.
struct Fixture {
    _dir: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
    sandbox: Sandbox,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "SECRET").unwrap();
    std::fs::write(root.join("inside.txt"), "inside").unwrap();
    std::fs::write(root.join("sub/file.txt"), "file").unwrap();
    symlink(&outside, root.join("link_out_dir")).unwrap();
    symlink(outside.join("secret.txt"), root.join("link_out_file")).unwrap();
    symlink("../outside/secret.txt", root.join("relative_link_out")).unwrap();
    symlink("inside.txt", root.join("link_in_file")).unwrap();
    symlink("sub", root.join("link_in_dir")).unwrap();
    symlink("..", root.join("sub/up")).unwrap();
    symlink("../..", root.join("sub/upup")).unwrap();
    symlink("chain2", root.join("chain1")).unwrap();
    symlink("link_out_dir", root.join("chain2")).unwrap();
    symlink("/etc", root.join("abs_link_out")).unwrap();
    symlink("loop_b", root.join("loop_a")).unwrap();
    symlink("loop_a", root.join("loop_b")).unwrap();
    symlink("self_loop", root.join("self_loop")).unwrap();
    symlink(outside.join("missing"), root.join("dangling_out")).unwrap();
    symlink("nothing_here", root.join("dangling_in")).unwrap();
    let sandbox = Sandbox::new(&root).unwrap();
    Fixture {
        _dir: dir,
        base,
        root,
        sandbox,
    }
}

fn refused(path: &str) -> SandboxError {
    let fx = fixture();
    match fx.sandbox.resolve(path) {
        Ok(resolved) => panic!("{path:?} was accepted as {:?}", resolved.real()),
        Err(err) => err,
    }
}

/// The path resolves to somewhere inside the root (or is refused): never outside.
fn contained(fx: &Fixture, path: &str) -> PathBuf {
    let resolved = fx.sandbox.resolve(path).unwrap();
    assert!(
        resolved.real().starts_with(&fx.root),
        "{path:?} resolved to {:?}, outside {:?}",
        resolved.real(),
        fx.root
    );
    resolved.real().to_owned()
}

macro_rules! refuses {
    ($($name:ident: $path:expr => $pattern:pat,)*) => {$(
        #[test]
        fn $name() {
            let err = refused($path);
            assert!(matches!(err, $pattern), "{:?} gave {err:?}", $path);
            assert!(!err.to_string().is_empty());
        }
    )*};
}

refuses! {
    parent_component: "../outside/secret.txt" => SandboxError::ParentComponent { .. },
    parent_after_a_directory: "sub/../../outside/secret.txt" => SandboxError::ParentComponent { .. },
    parent_after_current_dir: "./../outside" => SandboxError::ParentComponent { .. },
    parent_above_the_root_after_coming_back: "sub/../.." => SandboxError::ParentComponent { .. },
    parent_of_a_symlink_is_physical_and_can_leave: "link_in_dir/../../outside" => SandboxError::ParentComponent { .. },
    parent_after_a_symlink_to_the_root: "sub/up/../outside/secret.txt" => SandboxError::ParentComponent { .. },
    parent_of_a_file: "inside.txt/../sub" => SandboxError::NotADirectory { .. },
    absolute_system_path: "/etc/passwd" => SandboxError::OutsideRoot { .. },
    absolute_root_of_the_file_system: "/" => SandboxError::OutsideRoot { .. },
    tilde_alone: "~" => SandboxError::Home { .. },
    tilde_home_path: "~/.ssh/id_rsa" => SandboxError::Home { .. },
    tilde_other_user: "~root/.bashrc" => SandboxError::Home { .. },
    symlinked_directory_out: "link_out_dir/secret.txt" => SandboxError::SymlinkEscape { .. },
    symlinked_directory_itself: "link_out_dir" => SandboxError::SymlinkEscape { .. },
    new_file_in_symlinked_directory: "link_out_dir/new.txt" => SandboxError::SymlinkEscape { .. },
    new_directories_in_symlinked_directory: "link_out_dir/a/b/c.txt" => SandboxError::SymlinkEscape { .. },
    symlinked_file_out: "link_out_file" => SandboxError::SymlinkEscape { .. },
    relative_symlink_out: "relative_link_out" => SandboxError::SymlinkEscape { .. },
    symlink_to_grandparent: "sub/upup/outside/secret.txt" => SandboxError::SymlinkEscape { .. },
    chain_of_symlinks_out: "chain1/secret.txt" => SandboxError::SymlinkEscape { .. },
    absolute_symlink_to_etc: "abs_link_out/passwd" => SandboxError::SymlinkEscape { .. },
    symlink_loop: "loop_a" => SandboxError::SymlinkLoop { .. },
    path_through_a_symlink_loop: "loop_a/file.txt" => SandboxError::SymlinkLoop { .. },
    self_referencing_symlink: "self_loop/x" => SandboxError::SymlinkLoop { .. },
    // Resolution never looks outside the root, so a link out is refused before anyone could
    // learn whether its target exists.
    dangling_symlink_out: "dangling_out" => SandboxError::SymlinkEscape { .. },
    dangling_symlink_in: "dangling_in" => SandboxError::DanglingSymlink { .. },
    empty_path: "" => SandboxError::Empty,
    blank_path: "   " => SandboxError::Empty,
    nul_byte: "inside.txt\0/../../etc/passwd" => SandboxError::Nul { .. },
    file_used_as_a_directory: "inside.txt/x" => SandboxError::NotADirectory { .. },
}

#[test]
fn absolute_path_outside_through_the_temp_dir() {
    let fx = fixture();
    let secret = fx.base.join("outside/secret.txt");
    let err = fx.sandbox.resolve(secret.to_str().unwrap()).unwrap_err();
    assert!(matches!(err, SandboxError::OutsideRoot { .. }), "{err:?}");
}

#[test]
fn absolute_path_under_the_root_then_parent() {
    let fx = fixture();
    let sneaky = format!("{}/../outside/secret.txt", fx.root.display());
    let err = fx.sandbox.resolve(&sneaky).unwrap_err();
    assert!(
        matches!(err, SandboxError::ParentComponent { .. }),
        "{err:?}"
    );
}

#[test]
fn root_prefix_of_a_sibling_is_not_the_root() {
    // `/tmp/x/root-evil` starts with the string `/tmp/x/root` but is not under it.
    let fx = fixture();
    std::fs::create_dir(fx.base.join("root-evil")).unwrap();
    let sibling = format!("{}-evil", fx.root.display());
    let err = fx.sandbox.resolve(&sibling).unwrap_err();
    assert!(matches!(err, SandboxError::OutsideRoot { .. }), "{err:?}");
}

#[test]
fn encoded_and_look_alike_parents_are_plain_names_inside_the_root() {
    let fx = fixture();
    for path in [
        "%2e%2e/outside/secret.txt",
        "..%2f..%2foutside%2fsecret.txt",
        "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "..\\..\\outside\\secret.txt",
        "\u{ff0e}\u{ff0e}/outside/secret.txt",
        "..../outside",
        ".../secret.txt",
        "..%c0%af../etc/passwd",
    ] {
        let real = contained(&fx, path);
        assert!(!real.exists(), "{path:?} found {real:?}");
        let err = fx.sandbox.resolve_existing(path).unwrap_err();
        assert!(
            matches!(err, SandboxError::NotFound { .. }),
            "{path:?}: {err:?}"
        );
    }
}

#[test]
fn symlinks_that_stay_inside_are_followed() {
    let fx = fixture();
    assert_eq!(contained(&fx, "link_in_file"), fx.root.join("inside.txt"));
    assert_eq!(
        contained(&fx, "link_in_dir/file.txt"),
        fx.root.join("sub/file.txt")
    );
    assert_eq!(
        contained(&fx, "sub/up/inside.txt"),
        fx.root.join("inside.txt")
    );
}

#[test]
fn parents_that_stay_inside_are_resolved_physically() {
    let fx = fixture();
    assert_eq!(
        contained(&fx, "sub/../inside.txt"),
        fx.root.join("inside.txt")
    );
    assert_eq!(contained(&fx, "sub/.."), fx.root);
    assert_eq!(
        contained(&fx, "./sub/./../sub/file.txt"),
        fx.root.join("sub/file.txt")
    );
    // `link_in_dir` is `sub`: its `..` is the parent of `sub`, as the kernel resolves it.
    assert_eq!(
        contained(&fx, "link_in_dir/../inside.txt"),
        fx.root.join("inside.txt")
    );
    // `sub/up` is `..`, which is the root.
    assert_eq!(
        contained(&fx, "sub/up/sub/../inside.txt"),
        fx.root.join("inside.txt")
    );
    // A directory still to be created, then left again.
    assert_eq!(
        contained(&fx, "new/dir/../file.txt"),
        fx.root.join("new/file.txt")
    );
    let absolute = format!("{}/sub/../inside.txt", fx.root.display());
    assert_eq!(contained(&fx, &absolute), fx.root.join("inside.txt"));
    assert_eq!(
        fx.sandbox
            .resolve_existing("sub/../inside.txt")
            .unwrap()
            .display(),
        "inside.txt"
    );
}

#[test]
fn ordinary_paths_resolve_inside() {
    let fx = fixture();
    assert_eq!(
        contained(&fx, "./sub//file.txt"),
        fx.root.join("sub/file.txt")
    );
    let absolute = fx.root.join("inside.txt");
    assert_eq!(contained(&fx, absolute.to_str().unwrap()), absolute);
    assert_eq!(
        contained(&fx, "new/dirs/file.txt"),
        fx.root.join("new/dirs/file.txt")
    );
    assert_eq!(fx.sandbox.resolve(".").unwrap().real(), fx.root.as_path());
    assert_eq!(fx.sandbox.resolve(".").unwrap().display(), ".");
}

#[test]
fn the_check_happens_on_every_call_not_at_construction() {
    let fx = fixture();
    assert!(fx.sandbox.resolve("later/secret.txt").is_ok());
    symlink(fx.base.join("outside"), fx.root.join("later")).unwrap();
    let err = fx.sandbox.resolve("later/secret.txt").unwrap_err();
    assert!(matches!(err, SandboxError::SymlinkEscape { .. }), "{err:?}");
}

#[test]
fn a_removed_root_is_reported() {
    let fx = fixture();
    std::fs::remove_dir_all(&fx.root).unwrap();
    let err = fx.sandbox.resolve("inside.txt").unwrap_err();
    assert!(matches!(err, SandboxError::Root { .. }), "{err:?}");
}

#[test]
fn a_root_that_is_a_symlink_is_resolved_once_and_bounds_by_its_target() {
    let fx = fixture();
    let alias = fx.base.join("alias");
    symlink(&fx.root, &alias).unwrap();
    let sandbox = Sandbox::new(&alias).unwrap();
    assert_eq!(sandbox.root(), fx.root.as_path());
    let via_alias = alias.join("inside.txt");
    assert_eq!(
        sandbox.resolve(via_alias.to_str().unwrap()).unwrap().real(),
        Path::new(&fx.root.join("inside.txt"))
    );
    assert!(sandbox.resolve("link_out_file").is_err());
}

#[test]
fn a_file_is_not_a_root() {
    let fx = fixture();
    let err = Sandbox::new(fx.root.join("inside.txt")).unwrap_err();
    assert!(
        matches!(err, SandboxError::RootNotDirectory { .. }),
        "{err:?}"
    );
    let err = Sandbox::new(fx.base.join("missing")).unwrap_err();
    assert!(matches!(err, SandboxError::Root { .. }), "{err:?}");
}

#[test]
fn errors_name_the_path_and_the_reason() {
    let err = refused("link_out_dir/secret.txt");
    let message = err.to_string();
    assert!(message.contains("link_out_dir/secret.txt"), "{message}");
    assert!(
        message.contains("outside the root through the symlink"),
        "{message}"
    );
    assert!(
        !message.contains("/outside"),
        "the target outside is not revealed: {message}"
    );
}

#[test]
fn a_root_swapped_for_a_symlink_out_is_refused() {
    let fx = fixture();
    std::fs::rename(&fx.root, fx.base.join("old_root")).unwrap();
    symlink(fx.base.join("outside"), &fx.root).unwrap();
    let err = fx.sandbox.resolve("secret.txt").unwrap_err();
    assert!(matches!(err, SandboxError::RootChanged { .. }), "{err:?}");
}

#[test]
fn any_path_built_from_hostile_pieces_is_refused_or_stays_inside() {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let fx = fixture();
    let piece = prop::sample::select(vec![
        "..",
        ".",
        "",
        "~",
        "sub",
        "up",
        "upup",
        "link_out_dir",
        "link_in_dir",
        "link_out_file",
        "chain1",
        "loop_a",
        "dangling_in",
        "inside.txt",
        "outside",
        "secret.txt",
        "%2e%2e",
        "new",
        "\u{ff0e}\u{ff0e}",
        "..\\..",
    ]);
    let path = (any::<bool>(), prop::collection::vec(piece, 1..6)).prop_map(|(abs, parts)| {
        let joined = parts.join("/");
        if abs { format!("/{joined}") } else { joined }
    });
    let mut runner = TestRunner::new(Config::with_cases(2000));
    runner
        .run(&path, |path| {
            if let Ok(resolved) = fx.sandbox.resolve(&path) {
                prop_assert!(
                    resolved.real().starts_with(&fx.root),
                    "{path:?} resolved to {:?}",
                    resolved.real()
                );
                // Whatever exists on the way must really be inside, symlinks resolved.
                if let Ok(real) = resolved.real().canonicalize() {
                    prop_assert!(real.starts_with(&fx.root), "{path:?} leads to {real:?}");
                }
            }
            Ok(())
        })
        .unwrap();
}
