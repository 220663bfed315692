//! Reading an instance document: size limit, YAML with a JSON fast path, field paths in errors.
//!
//! Every failure is an [`Error::Input`] whose issue names the field path, the bad value and the
//! fix; serde's wording ("expected u64", "struct RawNode") is translated into the words of
//! SPEC.md, and echoed values are shortened so that a huge bad value cannot flood the terminal.

use super::raw::RawInstance;
use super::text::shorten;
use super::Instance;
use crate::error::{Error, InputIssue, Result};
use crate::hardware::ModelLibrary;
use serde::de::DeserializeOwned;
use std::io::Read;
use std::path::Path;

/// Largest instance file accepted, in bytes (256 MiB). Larger files are refused before reading;
/// a stream without a known size (a pipe, a device) is read up to this limit and no further.
pub const MAX_INSTANCE_BYTES: u64 = 256 * 1024 * 1024;

/// Longest error message kept from the parser, in characters.
const MAX_MESSAGE_CHARS: usize = 400;

/// Read and validate an instance file.
pub fn load_instance_file(path: &Path, models: &ModelLibrary) -> Result<Instance> {
    let name = path.display().to_string();
    let text = read_document(path)?;
    parse_instance(&text, &name, models)
}

/// Read a text document with the size limit, refusing binary content.
pub fn read_document(path: &Path) -> Result<String> {
    let name = path.display().to_string();
    let not_readable = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => {
            Error::input(&name, "", "does not exist; check the path of the file")
        }
        std::io::ErrorKind::PermissionDenied => Error::input(
            &name,
            "",
            "cannot be read (permission denied); check the file's permissions",
        ),
        _ => Error::Io {
            path: name.clone(),
            source: e,
        },
    };
    let meta = std::fs::metadata(path).map_err(not_readable)?;
    if meta.is_dir() {
        return Err(Error::input(
            &name,
            "",
            "is a directory; pass an instance file",
        ));
    }
    let too_big = |len: String| {
        Error::input(
            &name,
            "",
            format!(
                "is {len} bytes; the limit is {MAX_INSTANCE_BYTES} bytes (256 MiB): split the cluster into several rounds"
            ),
        )
    };
    if meta.len() > MAX_INSTANCE_BYTES {
        return Err(too_big(meta.len().to_string()));
    }
    // The size of a pipe or device is not known in advance: never read past the limit.
    let file = std::fs::File::open(path).map_err(not_readable)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_INSTANCE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(not_readable)?;
    if bytes.len() as u64 > MAX_INSTANCE_BYTES {
        return Err(too_big(format!("more than {MAX_INSTANCE_BYTES}")));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        Error::input(
            &name,
            "",
            format!(
                "is not UTF-8 text (invalid byte at offset {}); pass a YAML or JSON file",
                e.utf8_error().valid_up_to()
            ),
        )
    })?;
    if text.contains('\0') {
        return Err(Error::input(
            &name,
            "",
            "contains NUL bytes; pass a YAML or JSON text file",
        ));
    }
    Ok(text)
}

/// Parse a YAML or JSON document into `T`, with the field path and line of any error.
///
/// A document that starts with `{` is tried as JSON first (fast); if it is not JSON (YAML flow
/// style such as `{nodes: [...]}`), it is read as YAML.
///
/// A UTF-8 byte-order mark before the document is skipped (editors on Windows write one).
pub fn parse_document<T: DeserializeOwned>(text: &str, source_name: &str) -> Result<T> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(Error::input(
            source_name,
            "",
            "is empty; expected a YAML or JSON document",
        ));
    }
    let issue = |path: String, message: String, line: Option<usize>| {
        let path = if path == "." { String::new() } else { path };
        let message = explain(&path, &message);
        Error::Input {
            source_name: source_name.to_string(),
            issues: vec![InputIssue {
                path,
                message,
                line,
            }],
        }
    };
    if text.trim_start().starts_with('{') {
        let de = &mut serde_json::Deserializer::from_str(text);
        match serde_path_to_error::deserialize(de) {
            Ok(v) => return Ok(v),
            Err(e) if e.inner().is_data() => {
                let path = e.path().to_string();
                let inner = e.into_inner();
                let line = inner.line();
                return Err(issue(
                    path,
                    strip_location(&inner.to_string()),
                    Some(line).filter(|l| *l > 0),
                ));
            }
            // Not JSON: YAML flow style, or a syntax error the YAML parser reports as well.
            Err(_) => {}
        }
    }
    // The YAML parser slows down with the square of the bracket depth (100,000 nested `[`
    // take 40 s): refuse deep nesting before parsing. Real instances nest a few levels.
    if let Some(line) = too_deep(text, MAX_FLOW_DEPTH) {
        return Err(Error::Input {
            source_name: source_name.to_string(),
            issues: vec![InputIssue {
                path: String::new(),
                message: format!(
                    "nests brackets more than {MAX_FLOW_DEPTH} levels deep; the limit is {MAX_FLOW_DEPTH}: flatten the document"
                ),
                line: Some(line),
            }],
        });
    }
    super::yaml_scan::check(text, source_name)?;
    let de = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let line = inner.location().map(|l| l.line());
        issue(path, strip_location(&inner.to_string()), line)
    })
}

/// Deepest nesting of `[` and `{` accepted in a YAML document.
pub const MAX_FLOW_DEPTH: usize = 256;

/// The 1-based line where bracket nesting first exceeds `limit`, if it does. Quoted strings and
/// comments are skipped; the scan is approximate (a stray `[` in a plain word counts), which
/// only matters for documents that are absurd anyway.
fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let (mut depth, mut line) = (0usize, 1usize);
    let (mut single, mut double, mut comment, mut escaped) = (false, false, false, false);
    let mut prev = '\n';
    for c in text.chars() {
        if c == '\n' {
            line += 1;
            comment = false;
        } else if comment {
        } else if double {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                double = false;
            }
        } else if single {
            if c == '\'' {
                single = false;
            }
        } else {
            match c {
                '#' if prev.is_whitespace() => comment = true,
                '"' => double = true,
                '\'' if !prev.is_alphanumeric() => single = true,
                '[' | '{' => {
                    depth += 1;
                    if depth > limit {
                        return Some(line);
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        prev = c;
    }
    None
}

/// serde messages end with "at line L column C"; the line is reported separately.
fn strip_location(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Turn a parser message into one sentence in the SPEC's words: what is wrong (with the value)
/// and what would be right.
fn explain(path: &str, raw: &str) -> String {
    let mut m = raw.trim().to_string();
    // serde_yaml repeats the path ("pending[0]: unknown field ..."): drop it.
    if let Some((head, rest)) = m.split_once(": ") {
        let pathlike = !head.is_empty()
            && head
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-[].?".contains(c));
        if pathlike && (path.starts_with(head) || head == "?") {
            m = rest.to_string();
        }
    }
    m = shorten(&m, MAX_MESSAGE_CHARS);
    for (from, to) in [
        (" as u128", ""),
        (" as i128", ""),
        ("expected u64", "expected a whole number >= 0"),
        ("expected u32", "expected a whole number >= 0"),
        ("expected i64", "expected a whole number"),
        ("expected f64", "expected a number"),
        ("expected a map", "expected a mapping (key: value)"),
        (
            "expected a sequence",
            "expected a list (`- item` lines or [a, b])",
        ),
        (
            "expected struct RawInstance",
            "expected a mapping with `nodes:` and optionally tenants, running, pending, policy",
        ),
        (
            "expected struct RawNode",
            "expected a node mapping such as {name: n1, gpus: 8}",
        ),
        (
            "expected struct RawTenant",
            "expected a tenant mapping such as {name: research, weight: 1}",
        ),
        (
            "expected struct RawRunning",
            "expected a running job mapping such as {id: r1, gpus: {n1: [0, 1]}}",
        ),
        (
            "expected struct RawPending",
            "expected a pending job mapping such as {id: j1, gpus: 8}",
        ),
        (
            "expected struct RawPolicy",
            "expected a policy mapping such as {time_limit: 10, mip_gap: 0.01}",
        ),
        ("expected struct ", "expected a mapping "),
    ] {
        m = m.replace(from, to);
    }
    if m.starts_with("data did not match any variant of untagged enum GpuTypes") {
        return "is neither a GPU type nor a list of GPU types; expected e.g. H100 or [H100, H200]"
            .to_string();
    }
    if let Some(rest) = m.strip_prefix("unknown field ") {
        // "unknown field `priorty`, expected one of `id`, ..." -> suggest the nearest name.
        let field = rest.split('`').nth(1).unwrap_or("");
        let known: Vec<&str> = rest.split('`').skip(3).step_by(2).collect();
        return match nearest(field, &known) {
            Some(s) => format!(
                "unknown field `{field}`; did you mean `{s}`? (expected one of {})",
                list(&known)
            ),
            None if known.is_empty() => {
                format!("unknown field `{field}`; remove it (no fields are accepted here)")
            }
            None => format!(
                "unknown field `{field}`; remove it or use one of {}",
                list(&known)
            ),
        };
    }
    if let Some(rest) = m.strip_prefix("missing field ") {
        return format!("missing field {rest}; add it (docs/formats.md lists every field and whether it is required)");
    }
    if m.starts_with("duplicate field") || m.starts_with("duplicate entry") {
        return format!("{m}; give each key once");
    }
    if m.contains("more than one document") {
        return format!("{m}; keep one document (remove the `---` separators)");
    }
    if m.contains("recursion limit exceeded") || m.contains("repetition limit exceeded") {
        return format!(
            "{m}: the document nests or repeats aliases too deeply (an alias bomb?); write the data out without deep aliases"
        );
    }
    let semantic = [
        "is null",
        "invalid type",
        "invalid value",
        "invalid length",
        "unknown variant",
    ];
    if semantic.iter().any(|p| m.starts_with(p)) {
        if m.starts_with("invalid value: integer") || m.contains("out of range") {
            return format!("{m} (out of range; see the limits in docs/reliability.md)");
        }
        return m;
    }
    format!("{m}: not valid YAML or JSON; fix the syntax at this line")
}

fn list(names: &[&str]) -> String {
    names.join(", ")
}

/// The known name closest to `s` (edit distance at most 2, or a case-insensitive match).
fn nearest<'a>(s: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (edit_distance(&s.to_lowercase(), &k.to_lowercase()), *k))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, k)| (*d, *k))
        .map(|(_, k)| k)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Parse and validate an instance held in memory.
pub fn parse_instance(text: &str, source_name: &str, models: &ModelLibrary) -> Result<Instance> {
    let raw: RawInstance = parse_document(text, source_name)?;
    super::validate::validate(&raw, models).map_err(|issues| Error::Input {
        source_name: source_name.to_string(),
        issues,
    })
}
