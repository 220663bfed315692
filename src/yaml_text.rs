//! YAML output that YAML 1.1 readers (PyYAML, older Go and Ruby libraries) and YAML 1.2
//! readers read alike.
//!
//! A YAML 1.2 emitter leaves `yes`, `NO`, `on`, `0755`, `1:30` or `2024-01-01` unquoted, and a
//! YAML 1.1 reader takes them for booleans, octal or sexagesimal numbers and dates. Here a
//! string is written plain only when it is a word that no reader of either version takes for
//! anything but a string ([`is_plain_safe`]); every other string is double-quoted (JSON's
//! escapes, which are valid YAML). Floats always carry a dot (`1.0e+20`, never `1e20`, which a
//! YAML 1.1 reader takes for a string).

use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

/// Words that a YAML 1.1 or 1.2 reader resolves to a boolean or null.
const RESERVED: &[&str] = &[
    "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
    "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL",
];

/// `value` as YAML text (a block mapping or sequence, one line per scalar), ending in a newline.
pub fn to_yaml<T: Serialize>(value: &T) -> Result<String, serde_json::Error> {
    let v = serde_json::to_value(value)?;
    let mut out = String::new();
    write_block(&mut out, &v, 0);
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(out)
}

/// Whether `s` may be written without quotes: it starts with a letter or `_`, holds only
/// letters, digits and `_ . / -`, does not end in `.` and is not a reserved word.
pub fn is_plain_safe(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == '_')
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-'))
        && !s.ends_with('.')
        && !RESERVED.contains(&s)
}

/// A scalar's text: plain-safe strings as they are, other strings double-quoted, numbers with
/// a dot when they are floats.
fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) if n.is_f64() => float(n.as_f64().unwrap_or(0.0)),
        Value::Number(n) => n.to_string(),
        Value::String(s) if is_plain_safe(s) => s.clone(),
        Value::String(s) => Value::String(s.clone()).to_string(),
        Value::Array(_) | Value::Object(_) => unreachable!("scalar() takes scalars"),
    }
}

/// A float that both YAML versions read as a float: a dot always, a signed exponent.
fn float(x: f64) -> String {
    if !x.is_finite() {
        return if x.is_nan() {
            ".nan".to_string()
        } else if x > 0.0 {
            ".inf".to_string()
        } else {
            "-.inf".to_string()
        };
    }
    let text = x.to_string();
    if text.contains('e') || text.contains('E') || x.abs() >= 1e16 {
        let e = format!("{x:e}");
        let (mantissa, exp) = e.split_once('e').expect("an exponent");
        let mantissa = if mantissa.contains('.') {
            mantissa.to_string()
        } else {
            format!("{mantissa}.0")
        };
        let exp = if exp.starts_with('-') {
            exp.to_string()
        } else {
            format!("+{exp}")
        };
        format!("{mantissa}e{exp}")
    } else if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

fn is_scalar(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

/// A value after `key:` or `-`: a scalar or an empty collection on the same line, a list of
/// scalars in flow style on the same line, anything else as a block on the next lines.
fn write_value(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Array(a) if a.is_empty() => out.push_str(" []\n"),
        Value::Object(o) if o.is_empty() => out.push_str(" {}\n"),
        Value::Array(a) if a.iter().all(is_scalar) => {
            let items: Vec<String> = a.iter().map(scalar).collect();
            let _ = writeln!(out, " [{}]", items.join(", "));
        }
        Value::Array(_) | Value::Object(_) => {
            out.push('\n');
            write_block(out, v, indent);
        }
        _ => {
            let _ = writeln!(out, " {}", scalar(v));
        }
    }
}

/// A mapping or sequence in block style at `indent` levels (two spaces each).
fn write_block(out: &mut String, v: &Value, indent: usize) {
    let pad = "  ".repeat(indent);
    match v {
        Value::Object(map) if !map.is_empty() => {
            for (k, item) in map {
                let _ = write!(out, "{pad}{}:", scalar(&Value::String(k.clone())));
                write_value(out, item, indent + 1);
            }
        }
        Value::Array(items) if !items.is_empty() => {
            for item in items {
                match item {
                    Value::Object(map) if !map.is_empty() => {
                        // `- key: value` with the mapping's other keys under the first.
                        let mut first = true;
                        for (k, x) in map {
                            let lead = if first {
                                format!("{pad}- ")
                            } else {
                                format!("{pad}  ")
                            };
                            first = false;
                            let _ = write!(out, "{lead}{}:", scalar(&Value::String(k.clone())));
                            write_value(out, x, indent + 2);
                        }
                    }
                    _ => {
                        let _ = write!(out, "{pad}-");
                        write_value(out, item, indent + 1);
                    }
                }
            }
        }
        _ => {
            let _ = writeln!(out, "{pad}{}", scalar(v).trim_start());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn words_a_yaml_1_1_reader_takes_for_something_else_are_quoted() {
        for s in [
            "yes",
            "NO",
            "on",
            "Off",
            "y",
            "n",
            "~",
            "null",
            "0755",
            "1:30",
            "2024-01-01",
            "1e5",
            ".inf",
            "",
            " lead",
            "a: b",
            "#x",
            "-",
            "<<",
            "=",
            "0x1f",
            "12",
            "1_000",
        ] {
            assert!(!is_plain_safe(s), "{s:?} must be quoted");
        }
        for s in ["job-7", "n001", "train.big", "t0", "a/b", "_x"] {
            assert!(is_plain_safe(s), "{s:?} may stay plain");
        }
    }

    #[test]
    fn the_text_reads_back_as_the_same_value() {
        let v = json!({
            "job": "yes",
            "other": "NO",
            "n": 3,
            "x": 1e20,
            "y": 0.5,
            "list": [1, 2, 3],
            "empty": [],
            "nested": [{"job": "on", "gpus": {"n1": [0, 1]}}, {"job": "j2", "gpus": {}}],
            "none": null,
            "flag": true,
        });
        let text = to_yaml(&v).unwrap();
        assert!(text.contains("job: \"yes\""), "{text}");
        assert!(text.contains("x: 1.0e+20"), "{text}");
        let back: serde_json::Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back, v, "{text}");
    }
}
