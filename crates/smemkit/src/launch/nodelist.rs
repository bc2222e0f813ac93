//! Slurm's compressed host lists (`gpu[01-04,07]`, `a1,b[2-3]-ib`, `r[1-2]n[01-02]`), expanded:
//! when a Slurm job sets no `MASTER_ADDR`, rank 0's host (where the rendezvous listens) is the
//! first host of the step's node list, since Slurm places task 0 on the first node.

use crate::error::{Error, Result};

/// At most this many hosts are expanded (a list naming more is refused, not truncated).
const MAX_HOSTS: usize = 1 << 20;

/// The first host of a compressed list.
pub fn first_host(list: &str) -> Result<String> {
    let hosts = expand(list)?;
    hosts
        .into_iter()
        .next()
        .ok_or_else(|| bad(list, "names no host"))
}

/// Every host of a compressed list, in order.
pub fn expand(list: &str) -> Result<Vec<String>> {
    let mut hosts = Vec::new();
    for item in split_top(list)? {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        for h in expand_item(list, item)? {
            if hosts.len() == MAX_HOSTS {
                return Err(bad(list, &format!("names more than {MAX_HOSTS} hosts")));
            }
            hosts.push(h);
        }
    }
    Ok(hosts)
}

fn bad(list: &str, why: &str) -> Error {
    Error::InvalidArgument(format!("the Slurm node list {list:?} {why}"))
}

/// The list cut at the commas outside brackets.
fn split_top(list: &str) -> Result<Vec<&str>> {
    let (mut depth, mut start, mut items) = (0usize, 0, Vec::new());
    for (i, c) in list.char_indices() {
        match c {
            '[' if depth == 0 => depth = 1,
            '[' => return Err(bad(list, "has nested brackets")),
            ']' if depth == 1 => depth = 0,
            ']' => return Err(bad(list, "has a ']' without its '['")),
            ',' if depth == 0 => {
                items.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(bad(list, "has a '[' without its ']'"));
    }
    items.push(&list[start..]);
    Ok(items)
}

/// One item (`prefix[ranges]suffix[ranges]...`): the product of its bracketed ranges.
fn expand_item(list: &str, item: &str) -> Result<Vec<String>> {
    let mut names = vec![String::new()];
    let mut rest = item;
    while !rest.is_empty() {
        let (text, after) = match rest.find('[') {
            Some(open) => {
                let close = open + rest[open..].find(']').expect("balanced by split_top");
                let values = ranges(list, &rest[open + 1..close])?;
                let mut next = Vec::with_capacity(names.len() * values.len());
                for n in &names {
                    for v in &values {
                        if next.len() == MAX_HOSTS {
                            return Err(bad(list, &format!("names more than {MAX_HOSTS} hosts")));
                        }
                        next.push(format!("{n}{}{v}", &rest[..open]));
                    }
                }
                names = next;
                ("", &rest[close + 1..])
            }
            None => (rest, ""),
        };
        names.iter_mut().for_each(|n| n.push_str(text));
        rest = after;
    }
    Ok(names)
}

/// `01-04,07`: each value, zero-padded to the width its range was written with.
fn ranges(list: &str, spec: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for part in spec.split(',') {
        let part = part.trim();
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(lo) || !digits(hi) {
            return Err(bad(
                list,
                &format!("has a range {part:?} that is not N or N-M"),
            ));
        }
        let (a, b): (u64, u64) = match (lo.parse(), hi.parse()) {
            (Ok(a), Ok(b)) if a <= b => (a, b),
            _ => {
                return Err(bad(
                    list,
                    &format!("has a range {part:?} that runs backwards"),
                ))
            }
        };
        if b - a >= MAX_HOSTS as u64 {
            return Err(bad(list, &format!("names more than {MAX_HOSTS} hosts")));
        }
        let width = lo.len();
        out.extend((a..=b).map(|v| format!("{v:0width$}")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(s: &str) -> Vec<String> {
        expand(s).unwrap()
    }

    #[test]
    fn plain_and_compressed_lists() {
        assert_eq!(list("node7"), ["node7"]);
        assert_eq!(list("a,b,c"), ["a", "b", "c"]);
        assert_eq!(
            list("gpu[01-04,07]"),
            ["gpu01", "gpu02", "gpu03", "gpu04", "gpu07"]
        );
        assert_eq!(list("gpu[8-11]"), ["gpu8", "gpu9", "gpu10", "gpu11"]);
        assert_eq!(
            list("gpu[098-101]"),
            ["gpu098", "gpu099", "gpu100", "gpu101"]
        );
        assert_eq!(list("a1,b[2-3]-ib,c"), ["a1", "b2-ib", "b3-ib", "c"]);
        assert_eq!(list("r[1-2]n[01-02]"), ["r1n01", "r1n02", "r2n01", "r2n02"]);
        assert_eq!(list("x[5]"), ["x5"]);
        assert_eq!(list("gnode[10,20,25,37]")[0], "gnode10");
        assert_eq!(first_host("h[3-4],g1").unwrap(), "h3");
        assert_eq!(first_host(" n1 ").unwrap(), "n1");
    }

    #[test]
    fn malformed_lists_are_named() {
        for (s, why) in [
            ("gpu[01-04", "without its ']'"),
            ("gpu]1", "without its '['"),
            ("a[[1]]", "nested"),
            ("a[4-2]", "backwards"),
            ("a[x-2]", "not N or N-M"),
            ("a[]", "not N or N-M"),
            ("a[1-]", "not N or N-M"),
            ("a[0-99999999]", "more than"),
            ("a[0-9999]b[0-9999]", "more than"),
        ] {
            let e = expand(s).unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(s), "{s}: {e}");
        }
        assert!(first_host("").unwrap_err().to_string().contains("no host"));
        assert!(first_host(" , ").is_err());
    }
}
