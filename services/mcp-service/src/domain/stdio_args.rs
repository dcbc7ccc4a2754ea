//! One argument pattern of a stdio allow-list entry, and what it lets an
//! admin pass.
//!
//! A glob alone pins little: `*` would match `/`, so `dir/*.py` would take
//! `dir/../../tmp/x.py`, and a wildcard matches a leading `-`, so
//! `python3 *.py` would take `-cimport os;…#.py` and run it. A pattern here
//! therefore holds to stricter rules than the glob it is written as:
//!
//! * wildcards (`*`, `?`, `[…]`) match within one path component: only a `/`
//!   the pattern writes literally matches a `/`, and `**` is refused;
//! * `..` as a path component (between `/` or `=` or at either end) is
//!   matched only as often as the pattern writes that component literally;
//! * an argument starting with `-` (an option, or an `=`-joined option and
//!   its value) is matched only by a pattern that starts with `-` itself;
//! * an empty argument is matched only by the empty pattern;
//! * an argument with a control character (NUL, newline, escape…) is never
//!   matched, and no pattern may contain one.

use anyhow::bail;
use glob::{MatchOptions, Pattern};

/// Wildcards never match a `/`.
const OPTIONS: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: false,
};

/// A parsed argument pattern: one glob per `/`-separated component.
///
/// Wildcards never match a `/`, so an argument matches only with as many
/// components as the pattern, each matched on its own. Matching component
/// by component also keeps the time linear in the number of components: a
/// glob matched across separators backtracks over every way its wildcards
/// could split the text, which grows exponentially with their number.
#[derive(Debug, Clone)]
pub struct ArgPattern {
    text: String,
    components: Vec<Pattern>,
    /// How often the pattern writes `..` as a component itself.
    parents: usize,
}

impl ArgPattern {
    /// Parses `pattern`; refuses `**`, control characters and what the glob
    /// syntax refuses.
    pub fn new(pattern: &str) -> anyhow::Result<Self> {
        if pattern.contains("**") {
            bail!("invalid argument pattern {pattern:?}: `**` would match across `/`");
        }
        if pattern.chars().any(char::is_control) {
            bail!("invalid argument pattern {pattern:?}: it contains a control character");
        }
        let components = pattern
            .split('/')
            .map(Pattern::new)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow::anyhow!("invalid argument pattern {pattern:?}: {e}"))?;
        Ok(Self {
            text: pattern.to_owned(),
            components,
            parents: parent_components(pattern),
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether `arg` is permitted by this pattern (see the module
    /// documentation for the rules beyond the glob).
    pub fn matches(&self, arg: &str) -> bool {
        let pattern = self.text.as_str();
        if arg.chars().any(char::is_control) {
            return false;
        }
        if arg.is_empty() && !pattern.is_empty() {
            return false;
        }
        if arg.starts_with('-') && !pattern.starts_with('-') {
            return false;
        }
        if parent_components(arg) > self.parents {
            return false;
        }
        arg.split('/').count() == self.components.len()
            && arg
                .split('/')
                .zip(&self.components)
                .all(|(part, glob)| glob.matches_with(part, OPTIONS))
    }
}

/// How often `text` has `..` as a component, components being separated
/// by `/` or `=` (the value of `--dir=../x` is a path too).
pub fn parent_components(text: &str) -> usize {
    text.split(['/', '='])
        .filter(|component| *component == "..")
        .count()
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> ArgPattern {
        ArgPattern::new(text).expect("parses")
    }

    #[test]
    fn wildcards_stay_inside_one_path_component() {
        let p = pattern("dir/*.py");
        assert!(p.matches("dir/server.py"));
        for arg in [
            "dir/../../tmp/x.py",
            "dir/sub/x.py",
            "dir/x/../y.py",
            "dir//x.py",
        ] {
            assert!(!p.matches(arg), "{arg}");
        }
        assert!(!pattern("*.py").matches("/tmp/x.py"));
        assert!(!pattern("?").matches("/"));
        assert!(!pattern("[!a]").matches("/"));
        // A class never holds a `/`: such a pattern is refused outright.
        assert!(ArgPattern::new("a[/]b").is_err());
    }

    #[test]
    fn a_wildcard_never_matches_an_option() {
        let p = pattern("*.py");
        assert!(p.matches("server.py"));
        assert!(!p.matches("-cimport os;os.system('id')#.py"));
        assert!(!p.matches("--version.py"));
        assert!(!pattern("?*").matches("-m"));
        assert!(!pattern("[-a]x").matches("-x"));
        // An option the pattern names itself, with its value.
        let p = pattern("--name=*");
        assert!(p.matches("--name=x"));
        assert!(p.matches("--name=-x"));
        assert!(!p.matches("--name=a/b"));
        assert!(!p.matches("--name=.."));
        assert!(!pattern("--port=[0-9]*").matches("--port=8/"));
    }

    #[test]
    fn parent_components_need_the_pattern_to_name_them() {
        assert!(!pattern("*").matches(".."));
        assert!(!pattern("--root=*").matches("--root=.."));
        assert!(pattern("*").matches("..x"));
        assert!(pattern("*").matches("a..b"));
        assert!(pattern("../lib/*.js").matches("../lib/a.js"));
        assert!(!pattern("../lib/*").matches("../lib/.."));
    }

    #[test]
    fn control_characters_and_empty_arguments_are_not_matched() {
        for arg in ["a\nb", "a\0b", "a\rb", "\u{1b}]52;c;x\u{7}", ""] {
            assert!(!pattern("*").matches(arg), "{arg:?}");
        }
        assert!(pattern("").matches(""));
        assert!(ArgPattern::new("a\nb").is_err());
        assert!(ArgPattern::new("dir/**").is_err());
        assert!(ArgPattern::new("[").is_err());
    }

    /// Every string of up to `len` characters over `alphabet`.
    fn strings(alphabet: &[char], len: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut last = vec![String::new()];
        for _ in 0..len {
            last = last
                .iter()
                .flat_map(|s| alphabet.iter().map(move |c| format!("{s}{c}")))
                .collect();
            all.extend(last.iter().cloned());
        }
        all
    }

    /// The fuzz target's properties, over every short pattern and argument.
    #[test]
    fn no_short_pattern_admits_more_than_it_writes() {
        let patterns = strings(&['*', '?', '[', ']', '!', '/', '.', '-', '=', 'a'], 3);
        let args = strings(&['/', '.', '-', '=', 'a', '\n'], 4);
        for text in &patterns {
            let Ok(pattern) = ArgPattern::new(text) else {
                continue;
            };
            for arg in args.iter().filter(|arg| pattern.matches(arg)) {
                assert!(
                    arg.matches('/').count() <= text.matches('/').count(),
                    "{text} {arg}"
                );
                assert!(
                    parent_components(arg) <= parent_components(text),
                    "{text} {arg}"
                );
                assert!(
                    !arg.starts_with('-') || text.starts_with('-'),
                    "{text} {arg}"
                );
                assert!(!arg.contains('\n'), "{text} {arg:?}");
            }
        }
    }
}
