//! The house rules, checked on the source tree itself: no two files of `src/` depend on each
//! other in a loop, and no function in the planning core needs scrolling to read.
//!
//! A file depends on another when it names an item of it through a `crate::`, `super::` or
//! `self::` path (in a `use` or inline). A `mod.rs` that re-exports its children (`pub use`)
//! and declares them (`mod x;`) is their facade, not a dependency, so those lines count not.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Longest function allowed in the planning core, in lines from `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 120;
/// Folders of `src/` held to [`MAX_FUNCTION_LINES`].
const CORE: [&str; 4] = ["solve", "model", "heuristics", "instance"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file: `src/a/b.rs` and `src/a/b/mod.rs` are `["a", "b"]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Code without comments and string literals (rough, enough for paths).
fn code_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    for line in text.lines() {
        let mut s = String::new();
        let mut chars = line.chars().peekable();
        let mut in_str = false;
        while let Some(c) = chars.next() {
            if in_block {
                if c == '*' && chars.peek() == Some(&'/') {
                    chars.next();
                    in_block = false;
                }
                continue;
            }
            if in_str {
                if c == '\\' {
                    chars.next();
                } else if c == '"' {
                    in_str = false;
                }
                continue;
            }
            match c {
                '/' if chars.peek() == Some(&'/') => break,
                '/' if chars.peek() == Some(&'*') => {
                    chars.next();
                    in_block = true;
                }
                '"' => in_str = true,
                '\'' => {
                    // A char literal ('x', '\n', '{'): skip it; a lifetime stays.
                    let rest: String = chars.clone().take(3).collect();
                    let mut it = rest.chars();
                    match (it.next(), it.next(), it.next()) {
                        (Some('\\'), _, _) => {
                            for d in chars.by_ref() {
                                if d == '\'' {
                                    break;
                                }
                            }
                        }
                        (Some(_), Some('\''), _) => {
                            chars.next();
                            chars.next();
                        }
                        _ => s.push(c),
                    }
                }
                _ => s.push(c),
            }
        }
        out.push(s);
    }
    out
}

/// Expand `a::{b, c::{d, e}}` into `a::b`, `a::c::d`, `a::c::e`.
fn expand(path: &str) -> Vec<String> {
    let Some(open) = path.find('{') else {
        return vec![path.trim().to_string()];
    };
    let (head, rest) = path.split_at(open);
    let inner = &rest[1..rest.rfind('}').unwrap_or(rest.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(&format!("{head}{}", p.trim())))
        .collect()
}

/// Absolute module paths named in a file's code.
fn named_paths(file: &Path, lines: &[String]) -> Vec<Vec<String>> {
    let module = module_of(file);
    let is_mod_file = file
        .file_name()
        .is_some_and(|n| n == "mod.rs" || n == "lib.rs");
    // Join `use` statements that span lines.
    let mut statements = Vec::new();
    let mut pending: Option<String> = None;
    for line in lines {
        let t = line.trim();
        if let Some(p) = pending.as_mut() {
            p.push_str(t);
            if t.contains(';') {
                statements.push(pending.take().unwrap());
            }
            continue;
        }
        if is_mod_file
            && (t.starts_with("pub use ") || t.starts_with("pub mod ") || t.starts_with("mod "))
        {
            continue;
        }
        if (t.starts_with("use ") || t.starts_with("pub use ") || t.starts_with("pub(crate) use "))
            && !t.contains(';')
        {
            pending = Some(t.to_string());
            continue;
        }
        statements.push(t.to_string());
    }
    let mut paths = Vec::new();
    for st in statements {
        let st = st.trim();
        let use_body = ["use ", "pub use ", "pub(crate) use "]
            .iter()
            .find_map(|p| st.strip_prefix(p));
        let candidates: Vec<String> = match use_body {
            Some(body) => expand(body.trim_end_matches(';').split(" as ").next().unwrap()),
            None => inline_paths(st),
        };
        for c in candidates {
            if let Some(p) = absolute(&module, &c) {
                paths.push(p);
            }
        }
    }
    paths
}

/// `crate::a::b` and `super::c` paths written inline in an expression or type.
fn inline_paths(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for root in ["crate::", "super::"] {
        let mut from = 0;
        while let Some(i) = line[from..].find(root) {
            let start = from + i;
            let prev = line[..start].chars().last();
            from = start + root.len();
            if prev.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let tail: String = line[start..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            out.push(tail.trim_end_matches(':').to_string());
        }
    }
    out
}

fn absolute(module: &[String], path: &str) -> Option<Vec<String>> {
    let segs: Vec<&str> = path.split("::").map(str::trim).collect();
    let mut base: Vec<String> = match *segs.first()? {
        "crate" => Vec::new(),
        "super" => module[..module.len().saturating_sub(1)].to_vec(),
        "self" => module.to_vec(),
        _ => return None,
    };
    let mut rest = &segs[1..];
    while rest.first() == Some(&"super") {
        base.pop();
        rest = &rest[1..];
    }
    base.extend(
        rest.iter()
            .filter(|s| **s != "self" && **s != "*")
            .map(|s| s.to_string()),
    );
    Some(base)
}

/// The file that holds the longest prefix of `path` that is a module.
fn file_of(path: &[String], files: &BTreeMap<Vec<String>, PathBuf>) -> Option<PathBuf> {
    (0..=path.len())
        .rev()
        .find_map(|n| files.get(&path[..n]).cloned())
}

fn dependency_graph() -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let mut all = Vec::new();
    rust_files(&src(), &mut all);
    all.retain(|f| !f.ends_with("main.rs") && !f.starts_with(src().join("bin")));
    let files: BTreeMap<Vec<String>, PathBuf> =
        all.iter().map(|f| (module_of(f), f.clone())).collect();
    let mut graph = BTreeMap::new();
    for f in &all {
        let lines = code_lines(&fs::read_to_string(f).unwrap());
        let deps: BTreeSet<PathBuf> = named_paths(f, &lines)
            .iter()
            .filter_map(|p| file_of(p, &files))
            .filter(|d| d != f)
            .collect();
        graph.insert(f.clone(), deps);
    }
    graph
}

/// Strongly connected components of more than one file (Tarjan).
fn cycles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct Tarjan<'a> {
        graph: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        out: Vec<Vec<PathBuf>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a PathBuf) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in &self.graph[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    comp.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

#[test]
fn no_two_files_of_src_depend_on_each_other_in_a_loop() {
    let graph = dependency_graph();
    let found = cycles(&graph);
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            c.iter()
                .map(|f| f.strip_prefix(src()).unwrap().display().to_string())
                .collect::<Vec<_>>()
                .join(" <-> ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "files that depend on each other in a loop:\n{}",
        shown.join("\n")
    );
}

#[test]
fn the_checker_sees_a_loop_and_a_facade() {
    let a = PathBuf::from("a.rs");
    let b = PathBuf::from("b.rs");
    let c = PathBuf::from("c.rs");
    let graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = [
        (a.clone(), [b.clone()].into()),
        (b.clone(), [c.clone()].into()),
        (c.clone(), [a.clone()].into()),
    ]
    .into();
    assert_eq!(cycles(&graph), vec![vec![a.clone(), b.clone(), c.clone()]]);
    let open: BTreeMap<PathBuf, BTreeSet<PathBuf>> =
        [(a.clone(), [b.clone()].into()), (b, BTreeSet::new())].into();
    assert!(cycles(&open).is_empty());
    assert_eq!(
        expand("crate::x::{y, z::{p, q}}"),
        vec!["crate::x::y", "crate::x::z::p", "crate::x::z::q"]
    );
    let lines = code_lines("let s = \"crate::fake::path\"; // crate::also::fake\nlet c = '{';");
    assert!(inline_paths(&lines[0]).is_empty());
    assert_eq!(lines[1].matches('{').count(), 0);
}

/// Functions of a file longer than `max` lines: (name, first line, length).
fn long_functions(text: &str, max: usize) -> Vec<(String, usize, usize)> {
    let lines = code_lines(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        let is_fn = t.starts_with("fn ")
            || t.starts_with("pub fn ")
            || t.starts_with("pub(crate) fn ")
            || t.starts_with("pub(super) fn ")
            || t.starts_with("const fn ")
            || t.starts_with("pub const fn ");
        if !is_fn {
            i += 1;
            continue;
        }
        let name: String = t
            .split("fn ")
            .nth(1)
            .unwrap_or("")
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // From the fn line to the brace that closes its body.
        let (mut depth, mut opened, mut j) = (0i64, false, i);
        while j < lines.len() {
            for c in lines[j].chars() {
                match c {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened && depth == 0 => {
                        // A declaration without a body (trait method).
                        opened = true;
                    }
                    _ => {}
                }
            }
            if opened && depth <= 0 {
                break;
            }
            j += 1;
        }
        let len = j - i + 1;
        if len > max {
            out.push((name, i + 1, len));
        }
        i += 1;
    }
    out
}

#[test]
fn no_function_of_the_planning_core_needs_scrolling() {
    let mut over = Vec::new();
    for dir in CORE {
        let mut files = Vec::new();
        rust_files(&src().join(dir), &mut files);
        for f in files {
            for (name, line, len) in
                long_functions(&fs::read_to_string(&f).unwrap(), MAX_FUNCTION_LINES)
            {
                over.push(format!(
                    "{}:{line} fn {name}: {len} lines",
                    f.strip_prefix(src()).unwrap().display()
                ));
            }
        }
    }
    assert!(
        over.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_length_check_counts_a_body() {
    let short = "fn a() {\n    1\n}\n";
    assert!(long_functions(short, 2).len() == 1 && long_functions(short, 3).is_empty());
    let with_braces_in_strings = "fn b() {\n    let s = \"}}}\";\n    s\n}\nfn c() {}\n";
    assert_eq!(
        long_functions(with_braces_in_strings, 3),
        vec![("b".to_string(), 1, 4)]
    );
}
