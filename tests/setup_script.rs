//! `scripts/setup.sh` decides what the HiGHS build still needs. bindgen loads `libclang.so` or
//! `libclang-N.so`; `libclang-cpp.so.N` (Debian's libclang-cpp14, often present without the
//! former) is another library, and must not count as libclang.

use std::path::Path;
use std::process::Command;

/// The dry-run verdict of setup.sh with its libclang check pointed at `root`.
fn verdict(root: &Path) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/setup.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("--dry-run")
        .env("GANGPLAN_SETUP_ROOT", root)
        .output()
        .expect("bash runs setup.sh");
    assert!(out.status.success(), "setup.sh --dry-run failed: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn fake_root(libs: &[&str]) -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    for lib in libs {
        let path = root.path().join(lib);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"").unwrap();
    }
    root
}

#[test]
fn only_libclang_cpp_present_means_libclang_dev_is_installed() {
    let root = fake_root(&[
        "usr/lib/x86_64-linux-gnu/libclang-cpp.so.14",
        "usr/lib/llvm-14/lib/libclang-cpp.so.14",
        "usr/lib/llvm-14/lib/libLLVM-14.so",
    ]);
    let v = verdict(root.path());
    assert!(
        v.contains("libclang-dev"),
        "setup must install libclang-dev: {v}"
    );
}

#[test]
fn no_llvm_at_all_means_libclang_dev_is_installed() {
    let root = fake_root(&[]);
    assert!(verdict(root.path()).contains("libclang-dev"));
}

#[test]
fn a_libclang_bindgen_loads_is_enough() {
    for lib in [
        "usr/lib/llvm-14/lib/libclang.so",
        "usr/lib/llvm-16/lib/libclang-16.so.1",
        "usr/lib/x86_64-linux-gnu/libclang-14.so.1",
        "usr/lib/x86_64-linux-gnu/libclang.so.1",
    ] {
        let root = fake_root(&["usr/lib/x86_64-linux-gnu/libclang-cpp.so.14", lib]);
        let v = verdict(root.path());
        assert!(
            !v.contains("libclang-dev"),
            "{lib} is a libclang bindgen loads: {v}"
        );
    }
}
