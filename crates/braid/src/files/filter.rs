//! `--exclude` and `--include`: which entries of a listing a transfer leaves
//! out, as rsync's filter rules read.
//!
//! Rules are tried in the order given and the first that matches decides;
//! an entry no rule matches is included. A pattern is matched against the
//! entry's path as listed (a named directory's own name first, then what is
//! below it, '/'-separated):
//!
//! - a pattern ending in `/` matches directories only (the `/` is not part
//!   of what is matched);
//! - a pattern starting with `/` is anchored at the listing's top: it must
//!   match the whole path;
//! - any other pattern matches the path's end at a component boundary: `*.o`
//!   and `build` match at any depth, `src/*.rs` matches `proj/src/a.rs`;
//! - `*` is any run of characters but `/`, `?` one character but `/`, `**`
//!   any run including `/`, `[abc]`, `[a-z]` and `[!a-z]` one character of
//!   (or not of) a set.
//!
//! An excluded directory is not descended into: nothing below it is listed,
//! whatever a later rule says (rsync's rule too). On the receiving end of a
//! `--delete`, an excluded name is protected: it is not removed.

use std::fmt;

/// One rule: include or exclude what its pattern matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub include: bool,
    pattern: String,
    dir_only: bool,
    anchored: bool,
}

/// The rules of one transfer, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filter {
    rules: Vec<Rule>,
}

/// The most rules a filter has, and the longest pattern: a peer's filter is
/// matched against every name of a tree, so its cost is bounded here.
pub const MAX_RULES: usize = 1024;
pub const MAX_PATTERN: usize = 4096;
/// The most pattern bytes of all rules together: each entry costs every
/// pattern's length, so the sum is what a peer's filter costs a server per
/// name; 64 KiB is far past any filter written by hand.
pub const MAX_FILTER_BYTES: usize = 64 << 10;

impl Rule {
    /// `--include PATTERN` (`include`) or `--exclude PATTERN`.
    pub fn new(include: bool, pattern: &str) -> Result<Rule, String> {
        if pattern.is_empty() {
            return Err("an empty pattern".into());
        }
        if pattern.len() > MAX_PATTERN {
            return Err(format!("a pattern longer than {MAX_PATTERN} bytes"));
        }
        let dir_only = pattern.len() > 1 && pattern.ends_with('/');
        let body = pattern
            .strip_suffix('/')
            .filter(|_| dir_only)
            .unwrap_or(pattern);
        let anchored = body.starts_with('/');
        let body = body.trim_start_matches('/');
        if body.is_empty() {
            return Err(format!("{pattern:?} matches nothing"));
        }
        check_classes(body).map_err(|e| format!("{pattern:?}: {e}"))?;
        Ok(Rule {
            include,
            pattern: body.to_owned(),
            dir_only,
            anchored,
        })
    }

    /// Whether this rule matches `path` (an entry as listed; `dir`: it is a directory).
    pub fn matches(&self, path: &str, dir: bool) -> bool {
        if self.dir_only && !dir {
            return false;
        }
        if self.anchored {
            return glob(self.pattern.as_bytes(), path.as_bytes());
        }
        endings(path).any(|end| glob(self.pattern.as_bytes(), end.as_bytes()))
    }

    /// The rule as it crosses the wire and as rsync's filter files write it:
    /// `+ PATTERN` or `- PATTERN`.
    pub fn wire(&self) -> String {
        self.to_string()
    }

    /// A rule from its wire form.
    pub fn from_wire(s: &str) -> Result<Rule, String> {
        match s.split_at_checked(2) {
            Some(("+ ", p)) => Rule::new(true, p),
            Some(("- ", p)) => Rule::new(false, p),
            _ => Err(format!(
                "{s:?} is not a filter rule (+ PATTERN or - PATTERN)"
            )),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}{}{}",
            if self.include { '+' } else { '-' },
            if self.anchored { "/" } else { "" },
            self.pattern,
            if self.dir_only { "/" } else { "" }
        )
    }
}

impl Filter {
    pub fn new(rules: Vec<Rule>) -> Result<Filter, String> {
        if rules.len() > MAX_RULES {
            return Err(format!(
                "{} filter rules, more than the {MAX_RULES} a transfer may have",
                rules.len()
            ));
        }
        let bytes: usize = rules.iter().map(|r| r.pattern.len()).sum();
        if bytes > MAX_FILTER_BYTES {
            return Err(format!(
                "{bytes} bytes of filter patterns, more than the {MAX_FILTER_BYTES} a transfer may have"
            ));
        }
        Ok(Filter { rules })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether the entry at `path` is left out (the first rule that matches
    /// decides; none: it is in).
    pub fn excludes(&self, path: &str, dir: bool) -> bool {
        self.rules
            .iter()
            .find(|r| r.matches(path, dir))
            .is_some_and(|r| !r.include)
    }

    /// The rules in their wire form.
    pub fn wire(&self) -> Vec<String> {
        self.rules.iter().map(Rule::wire).collect()
    }

    /// A peer's rules, each checked.
    pub fn from_wire(rules: &[String]) -> Result<Filter, String> {
        Filter::new(
            rules
                .iter()
                .map(|r| Rule::from_wire(r))
                .collect::<Result<_, _>>()?,
        )
    }
}

/// A path's endings at each component boundary: the whole path, then what
/// follows each '/'.
pub fn endings(path: &str) -> impl Iterator<Item = &str> {
    std::iter::once(0)
        .chain(path.match_indices('/').map(|(i, _)| i + 1))
        .map(move |start| &path[start..])
}

/// Every `[` opens a set that closes.
fn check_classes(p: &str) -> Result<(), String> {
    let b = p.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'[' {
            match class_end(b, i) {
                Some(end) => i = end,
                None => return Err("a '[' without its ']'".into()),
            }
        } else {
            i += 1;
        }
    }
    Ok(())
}

/// The index just past the `]` closing the set that opens at `b[open]`.
fn class_end(b: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    if i < b.len() && b[i] == b'!' {
        i += 1;
    }
    // A ']' first in the set is one of its characters.
    if i < b.len() && b[i] == b']' {
        i += 1;
    }
    while i < b.len() {
        if b[i] == b']' {
            return Some(i + 1);
        }
        i += 1;
    }
    None
}

/// Whether `c` is in the set `b[open..end]` (its brackets included).
fn in_class(b: &[u8], open: usize, end: usize, c: u8) -> bool {
    let mut i = open + 1;
    let negated = b[i] == b'!';
    if negated {
        i += 1;
    }
    let close = end - 1;
    let mut found = false;
    while i < close {
        if i + 2 < close && b[i + 1] == b'-' {
            found |= b[i] <= c && c <= b[i + 2];
            i += 3;
        } else {
            found |= b[i] == c;
            i += 1;
        }
    }
    found != negated
}

/// Whether the whole of `s` matches the pattern `p`. Backtracking keeps
/// only the latest star of each kind: `*` can be resumed one character
/// later within a component, `**` anywhere. Without `**` the work is at most
/// the pattern's length times the name's; each step a `**` resumes from
/// can cost that again, so the worst is the pattern's length times the
/// name's squared: polynomial, never exponential, whatever a peer sends.
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    // Where to resume after the last `*` (pattern index past it, name index).
    let mut star: Option<(usize, usize)> = None;
    // The same for the last `**`, which may also swallow '/'.
    let mut globstar: Option<(usize, usize)> = None;
    loop {
        if pi < p.len() {
            match p[pi] {
                b'*' if p.get(pi + 1) == Some(&b'*') => {
                    let mut next = pi;
                    while next < p.len() && p[next] == b'*' {
                        next += 1;
                    }
                    globstar = Some((next, si));
                    star = None;
                    pi = next;
                    continue;
                }
                b'*' => {
                    star = Some((pi + 1, si));
                    pi += 1;
                    continue;
                }
                b'?' if si < s.len() && s[si] != b'/' => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                b'[' if si < s.len() && s[si] != b'/' => {
                    if let Some(end) = class_end(p, pi) {
                        if in_class(p, pi, end, s[si]) {
                            pi = end;
                            si += 1;
                            continue;
                        }
                    }
                }
                c if c != b'?' && c != b'[' && si < s.len() && s[si] == c => {
                    pi += 1;
                    si += 1;
                    continue;
                }
                _ => {}
            }
        } else if si == s.len() {
            return true;
        }
        // A mismatch: let the latest star take one more character.
        if let Some((sp, ss)) = star {
            if ss < s.len() && s[ss] != b'/' {
                star = Some((sp, ss + 1));
                pi = sp;
                si = ss + 1;
                continue;
            }
        }
        if let Some((gp, gs)) = globstar {
            if gs < s.len() {
                globstar = Some((gp, gs + 1));
                star = None;
                pi = gp;
                si = gs + 1;
                continue;
            }
        }
        return false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(p: &str) -> Rule {
        Rule::new(false, p).unwrap()
    }

    #[test]
    fn stars_stay_within_a_component_and_double_stars_do_not() {
        assert!(glob(b"*.o", b"main.o"));
        assert!(!glob(b"*.o", b"src/main.o"));
        assert!(glob(b"**.o", b"src/main.o"));
        assert!(glob(b"src/**/x", b"src/a/b/x"));
        assert!(glob(b"a?c", b"abc") && !glob(b"a?c", b"a/c"));
        assert!(glob(b"[a-c]x", b"bx") && !glob(b"[a-c]x", b"dx"));
        assert!(glob(b"[!a-c]x", b"dx") && !glob(b"[!a-c]x", b"ax"));
        assert!(glob(b"[]]", b"]"));
        assert!(glob(b"*", b"") && !glob(b"?", b""));
        assert!(glob(b"*a*b*c", b"xxaxxbxxc") && !glob(b"*a*b*c", b"xxaxxbxx"));
    }

    #[test]
    fn a_hostile_pattern_costs_little() {
        let name = "a".repeat(4000);
        let p = format!("{}b", "*a".repeat(100));
        let t = std::time::Instant::now();
        assert!(!glob(p.as_bytes(), name.as_bytes()));
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn unanchored_patterns_match_a_path_end_and_anchored_ones_the_whole() {
        assert!(ex("*.o").matches("proj/build/main.o", false));
        assert!(ex("build").matches("proj/build", true));
        assert!(!ex("uild").matches("proj/build", true));
        assert!(ex("src/*.rs").matches("proj/src/a.rs", false));
        assert!(!ex("src/*.rs").matches("proj/src/x/a.rs", false));
        assert!(ex("/proj/src").matches("proj/src", true));
        assert!(!ex("/src").matches("proj/src", true));
        assert!(ex("tmp/").matches("proj/tmp", true));
        assert!(!ex("tmp/").matches("proj/tmp", false));
    }

    #[test]
    fn the_first_rule_that_matches_decides() {
        let f = Filter::new(vec![Rule::new(true, "keep.log").unwrap(), ex("*.log")]).unwrap();
        assert!(!f.excludes("d/keep.log", false));
        assert!(f.excludes("d/other.log", false));
        assert!(!f.excludes("d/a.txt", false));
        assert!(!Filter::default().excludes("anything", false));
    }

    #[test]
    fn rules_cross_the_wire_as_rsync_writes_them_and_bad_ones_are_refused() {
        let f = Filter::new(vec![ex("/a/b/"), Rule::new(true, "*.c").unwrap()]).unwrap();
        assert_eq!(f.wire(), ["- /a/b/", "+ *.c"]);
        assert_eq!(Filter::from_wire(&f.wire()).unwrap(), f);
        assert!(Rule::from_wire("x *.c").is_err());
        assert!(Rule::new(false, "").is_err());
        assert!(Rule::new(false, "/").is_err());
        assert!(Rule::new(false, "[ab").is_err());
        assert!(Filter::new(vec![ex("a"); MAX_RULES + 1]).is_err());
        let long = "x".repeat(MAX_PATTERN);
        assert!(Filter::new(vec![ex(&long); MAX_FILTER_BYTES / MAX_PATTERN]).is_ok());
        assert!(Filter::new(vec![ex(&long); MAX_FILTER_BYTES / MAX_PATTERN + 1]).is_err());
    }
}
