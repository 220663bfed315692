//! Text as it is echoed in messages: long names and values cut to a readable length.

/// Longest name or value echoed in an issue, in characters.
pub const ECHO_CHARS: usize = 64;

/// At most `max` characters of `s`, with an ellipsis and the full length when cut.
pub fn shorten(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!("{}... ({} characters in all)", &s[..cut], s.chars().count()),
    }
}

/// A name or value as it appears in a message: quoted, at most [`ECHO_CHARS`] characters.
pub fn quoted(s: &str) -> String {
    format!("{:?}", shorten(s, ECHO_CHARS))
}
