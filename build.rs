//! Embeds the shipped `models/` files so the binary works from any directory.
use std::{env, fs, path::Path};

fn main() {
    let out = Path::new(&env::var("OUT_DIR").unwrap()).join("builtin_models.rs");
    let mut code = String::from("&[\n");
    for kind in ["hardware", "workloads"] {
        let dir = Path::new("models").join(kind);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<_> = fs::read_dir(&dir)
            .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        for f in files {
            if f.extension().and_then(|e| e.to_str()) == Some("yaml") {
                let abs = fs::canonicalize(&f).unwrap();
                println!("cargo:rerun-if-changed={}", abs.display());
                code.push_str(&format!(
                    "    ({:?}, {:?}, include_str!({:?})),\n",
                    kind,
                    f.file_stem().unwrap().to_str().unwrap(),
                    abs.display().to_string()
                ));
            }
        }
    }
    code.push(']');
    fs::write(out, code).unwrap();
}
