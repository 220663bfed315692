//! Slurm host-list expressions: `node[1-3,7],gpu07,rack[1-2]-n[01-02]`.

use super::SlurmError;

/// Most names one expression may expand to (a guard against a runaway range).
const MAX_NAMES: usize = 1_000_000;

/// Expand a host list into names, in order. Ranges keep zero padding (`n[08-10]` gives n08,
/// n09, n10). An empty string gives no names.
pub fn expand(list: &str) -> Result<Vec<String>, SlurmError> {
    let bad = |m: &str| SlurmError::Parse {
        what: "host list".into(),
        message: format!("{list:?}: {m}"),
    };
    let mut out = Vec::new();
    for part in split_top(list).map_err(|m| bad(&m))? {
        if part.is_empty() {
            continue;
        }
        expand_one(&part, &mut out).map_err(|m| bad(&m))?;
        if out.len() > MAX_NAMES {
            return Err(bad("expands to too many names"));
        }
    }
    Ok(out)
}

/// Split at commas outside brackets.
fn split_top(s: &str) -> Result<Vec<String>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in s.trim().chars() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            _ => {}
        }
        if !(0..=1).contains(&depth) {
            return Err("unbalanced or nested brackets".into());
        }
        if c == ',' && depth == 0 {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if depth != 0 {
        return Err("unbalanced brackets".into());
    }
    parts.push(cur);
    Ok(parts)
}

fn expand_one(pat: &str, out: &mut Vec<String>) -> Result<(), String> {
    let Some(open) = pat.find('[') else {
        out.push(pat.to_string());
        return Ok(());
    };
    let close = pat[open..]
        .find(']')
        .map(|c| c + open)
        .ok_or("missing ']'")?;
    let (prefix, body, rest) = (&pat[..open], &pat[open + 1..close], &pat[close + 1..]);
    let mut tails = Vec::new();
    expand_one(rest, &mut tails)?;
    for item in body.split(',') {
        let (lo, hi) = item.split_once('-').unwrap_or((item, item));
        let width = if lo.len() > 1 && lo.starts_with('0') {
            lo.len()
        } else {
            0
        };
        let a: u64 = lo.parse().map_err(|_| format!("bad range {item:?}"))?;
        let b: u64 = hi.parse().map_err(|_| format!("bad range {item:?}"))?;
        if a > b || b - a > MAX_NAMES as u64 {
            return Err(format!("bad range {item:?}"));
        }
        for v in a..=b {
            for t in &tails {
                out.push(format!("{prefix}{v:0width$}{t}"));
            }
        }
        if out.len() > MAX_NAMES {
            return Err("expands to too many names".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn forms() {
        assert_eq!(
            expand("node[1-3,7]").unwrap(),
            ["node1", "node2", "node3", "node7"]
        );
        assert_eq!(expand("a,b[08-10]").unwrap(), ["a", "b08", "b09", "b10"]);
        assert_eq!(
            expand("r[1-2]-n[1-2]").unwrap(),
            ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]
        );
        assert!(expand("").unwrap().is_empty());
    }

    #[test]
    fn bad_forms_are_errors() {
        for bad in ["n[1-", "n[3-1]", "n[a-b]", "n[[1]]", "n]1["] {
            assert!(expand(bad).is_err(), "{bad}");
        }
    }
}
