//! A pass over a YAML document's events before it is deserialised, for what the deserialiser
//! does not refuse: explicit tags, which it ignores (`name: !!binary bjE=` would name a node
//! "bjE=", `gpus: !!str 8` would read 8), and aliases, whose expansion the file size limit
//! does not bound (20,000 nodes sharing one 1,023-item `down: &d [...]` list are 814 KB on
//! disk and 20 million values in memory).
//!
//! Only documents that contain `!`, `&` or `*` are scanned; the scan stops at the first
//! syntax error and leaves it to the deserialiser, which reports it with its own words.

use crate::error::{Error, InputIssue, Result};
use yaml_rust2::parser::{Event, Parser, Tag};

/// Most values that aliases may add to a document by repeating what an anchor names.
pub const MAX_ALIAS_VALUES: u64 = 1_000_000;

/// Refuse explicit tags and aliases that expand past [`MAX_ALIAS_VALUES`], naming the field.
pub fn check(text: &str, source_name: &str) -> Result<()> {
    if !text.bytes().any(|b| matches!(b, b'!' | b'&' | b'*')) {
        return Ok(());
    }
    let mut walk = Walk::default();
    let mut parser = Parser::new_from_str(text);
    while let Ok((event, mark)) = parser.next_token() {
        if matches!(event, Event::StreamEnd) {
            break;
        }
        if let Some(message) = walk.on_event(event) {
            return Err(Error::Input {
                source_name: source_name.to_string(),
                issues: vec![InputIssue {
                    path: walk.path(),
                    message,
                    line: Some(mark.line()),
                }],
            });
        }
    }
    Ok(())
}

/// Where the walk is inside a collection.
enum Place {
    /// In a mapping: the key being read (`None` while the key itself is read) and whether
    /// the next node is a key.
    Map { key: Option<String>, at_key: bool },
    /// In a sequence: the index of the next item.
    Seq { next: usize },
}

/// An open collection: where the walk is in it, the values it holds so far and its anchor.
struct Open {
    place: Place,
    values: u64,
    anchor: usize,
}

/// The walk's state: open collections, values per anchor, values added by aliases.
#[derive(Default)]
struct Walk {
    open: Vec<Open>,
    anchored: std::collections::HashMap<usize, u64>,
    added: u64,
}

impl Walk {
    /// Take one event; `Some(message)` refuses the document at [`Walk::path`].
    fn on_event(&mut self, event: Event) -> Option<String> {
        match event {
            Event::Scalar(_, _, _, Some(tag))
            | Event::SequenceStart(_, Some(tag))
            | Event::MappingStart(_, Some(tag)) => Some(format!(
                "has the YAML tag {}; instance files take plain values: remove the tag",
                tag_text(&tag)
            )),
            Event::Scalar(text, _, anchor, None) => {
                self.remember(anchor, 1);
                self.done(1, Some(text));
                None
            }
            Event::Alias(id) => {
                let values = self.anchored.get(&id).copied().unwrap_or(1);
                self.added = self.added.saturating_add(values);
                if self.added > MAX_ALIAS_VALUES {
                    return Some(format!(
                        "YAML aliases expand the document by more than {MAX_ALIAS_VALUES} values; \
                         the limit is {MAX_ALIAS_VALUES}: write the values out (or use fewer aliases \
                         of large lists)"
                    ));
                }
                self.done(values, None);
                None
            }
            Event::SequenceStart(anchor, None) => {
                self.start(Place::Seq { next: 0 }, anchor);
                None
            }
            Event::MappingStart(anchor, None) => {
                let place = Place::Map {
                    key: None,
                    at_key: true,
                };
                self.start(place, anchor);
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(closed) = self.open.pop() {
                    let values = closed.values + 1;
                    self.remember(closed.anchor, values);
                    self.done(values, None);
                }
                None
            }
            _ => None,
        }
    }

    fn start(&mut self, place: Place, anchor: usize) {
        self.open.push(Open {
            place,
            values: 0,
            anchor,
        });
    }

    fn remember(&mut self, anchor: usize, values: u64) {
        if anchor > 0 {
            self.anchored.insert(anchor, values);
        }
    }

    /// A node of `values` values ended (`text`: a scalar's text, a key's name).
    fn done(&mut self, values: u64, text: Option<String>) {
        let Some(top) = self.open.last_mut() else {
            return;
        };
        top.values = top.values.saturating_add(values);
        match &mut top.place {
            Place::Map { key, at_key } => {
                if *at_key {
                    *key = Some(text.unwrap_or_else(|| "?".to_string()));
                }
                *at_key = !*at_key;
            }
            Place::Seq { next } => *next += 1,
        }
    }

    /// The field path of the node being read, as serde's paths read (`nodes[3].name`).
    fn path(&self) -> String {
        let mut path = String::new();
        for open in &self.open {
            match &open.place {
                Place::Map {
                    key: Some(k),
                    at_key: false,
                } => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                }
                Place::Map { .. } => {}
                Place::Seq { next } => path.push_str(&format!("[{next}]")),
            }
        }
        path
    }
}

/// A tag as it is written: `!!binary` for the YAML core tags, the handle and suffix otherwise.
fn tag_text(tag: &Tag) -> String {
    if tag.handle == "tag:yaml.org,2002:" {
        format!("!!{}", tag.suffix)
    } else {
        format!("{}{}", tag.handle, tag.suffix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(text: &str) -> Option<(String, String)> {
        match check(text, "t.yaml") {
            Ok(()) => None,
            Err(Error::Input { issues, .. }) => {
                Some((issues[0].path.clone(), issues[0].message.clone()))
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }

    #[test]
    fn a_tag_is_refused_at_its_field() {
        let (path, msg) = refusal("nodes:\n  - name: !!binary bjE=\n    gpus: 8\n").unwrap();
        assert_eq!(path, "nodes[0].name");
        assert!(msg.contains("!!binary"), "{msg}");
        let (path, _) = refusal("nodes:\n  - name: a\n    gpus: !!str 8\n").unwrap();
        assert_eq!(path, "nodes[0].gpus");
        assert!(refusal("nodes: !custom\n  - name: a\n").is_some());
    }

    #[test]
    fn small_aliases_pass_and_huge_expansions_are_refused() {
        assert!(refusal("a: &x [1, 2, 3]\nb: *x\nc: *x\nnote: \"a*b & !c\"\n").is_none());
        let list: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
        let mut text = format!("nodes:\n  - name: n0\n    down: &d [{}]\n", list.join(", "));
        for i in 1..2000 {
            text.push_str(&format!("  - name: n{i}\n    down: *d\n"));
        }
        let (path, msg) = refusal(&text).unwrap();
        assert!(path.starts_with("nodes["), "{path}");
        assert!(path.ends_with("].down"), "{path}");
        assert!(msg.contains("aliases"), "{msg}");
    }

    #[test]
    fn nested_aliases_count_what_they_expand_to() {
        // Each level doubles: 2^22 values from a few lines.
        let mut text = String::from("l0: &l0 [1, 1]\n");
        for i in 1..22 {
            text.push_str(&format!("l{i}: &l{i} [*l{}, *l{}]\n", i - 1, i - 1));
        }
        assert!(refusal(&text).is_some());
    }
}
