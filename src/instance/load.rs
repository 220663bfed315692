//! Reading an instance document: size limit, YAML with a JSON fast path, field paths in errors.

use super::raw::RawInstance;
use super::Instance;
use crate::error::{Error, InputIssue, Result};
use crate::hardware::ModelLibrary;
use serde::de::DeserializeOwned;
use std::path::Path;

/// Largest instance file accepted, in bytes (256 MiB). Larger files are refused before reading.
pub const MAX_INSTANCE_BYTES: u64 = 256 * 1024 * 1024;

/// Read and validate an instance file.
pub fn load_instance_file(path: &Path, models: &ModelLibrary) -> Result<Instance> {
    let name = path.display().to_string();
    let text = read_document(path)?;
    parse_instance(&text, &name, models)
}

/// Read a text document with the size limit, refusing binary content.
pub fn read_document(path: &Path) -> Result<String> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| Error::Io {
        path: name.clone(),
        source: e,
    })?;
    if meta.is_dir() {
        return Err(Error::input(
            &name,
            "",
            "is a directory; pass an instance file",
        ));
    }
    if meta.len() > MAX_INSTANCE_BYTES {
        return Err(Error::input(
            &name,
            "",
            format!(
                "is {} bytes; the limit is {} bytes (256 MiB): split the cluster into several rounds",
                meta.len(),
                MAX_INSTANCE_BYTES
            ),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::Io {
        path: name.clone(),
        source: e,
    })?;
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
pub fn parse_document<T: DeserializeOwned>(text: &str, source_name: &str) -> Result<T> {
    if text.trim().is_empty() {
        return Err(Error::input(
            source_name,
            "",
            "is empty; expected a YAML or JSON document",
        ));
    }
    let issue = |path: String, message: String, line: Option<usize>| Error::Input {
        source_name: source_name.to_string(),
        issues: vec![InputIssue {
            path: if path == "." { String::new() } else { path },
            message,
            line,
        }],
    };
    if text.trim_start().starts_with('{') {
        let de = &mut serde_json::Deserializer::from_str(text);
        return serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let line = inner.line();
            issue(
                path,
                strip_location(&inner.to_string()),
                Some(line).filter(|l| *l > 0),
            )
        });
    }
    let de = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let line = inner.location().map(|l| l.line());
        issue(path, strip_location(&inner.to_string()), line)
    })
}

/// serde messages end with "at line L column C"; the line is reported separately.
fn strip_location(msg: &str) -> String {
    match msg.find(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Parse and validate an instance held in memory.
pub fn parse_instance(text: &str, source_name: &str, models: &ModelLibrary) -> Result<Instance> {
    let raw: RawInstance = parse_document(text, source_name)?;
    super::validate::validate(&raw, models).map_err(|issues| Error::Input {
        source_name: source_name.to_string(),
        issues,
    })
}
