//! What the guardrails look for in tool traffic: secrets of well-known
//! formats, private keys, high-entropy tokens, e-mail addresses and card
//! numbers (with their checksum). One pass of linear-time regular
//! expressions over a text: no backtracking, so a hostile text costs time
//! in proportion to its length.

use std::{collections::BTreeMap, sync::LazyLock};

use regex::Regex;

/// One kind of thing the guardrails find.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Detector {
    /// An AWS access key id (`AKIA…`, `ASIA…`).
    AwsAccessKey,
    /// A GitHub token (`ghp_…`, `github_pat_…`).
    GithubToken,
    /// A Slack token (`xoxb-…`).
    SlackToken,
    /// An OpenAI or Anthropic API key (`sk-…`).
    ApiKey,
    /// A Stripe live secret key (`sk_live_…`).
    StripeKey,
    /// A Google API key (`AIza…`).
    GoogleApiKey,
    /// A JSON Web Token (three base64url parts, the first two JSON).
    JsonWebToken,
    /// A PEM private key block.
    PrivateKey,
    /// A long token of high entropy that no other detector names.
    HighEntropy,
    /// An e-mail address.
    Email,
    /// A payment card number that passes the Luhn checksum.
    CardNumber,
}

/// Every detector, in the order their names are listed.
pub const ALL: [Detector; 11] = [
    Detector::AwsAccessKey,
    Detector::GithubToken,
    Detector::SlackToken,
    Detector::ApiKey,
    Detector::StripeKey,
    Detector::GoogleApiKey,
    Detector::JsonWebToken,
    Detector::PrivateKey,
    Detector::HighEntropy,
    Detector::Email,
    Detector::CardNumber,
];

impl Detector {
    /// Its name in settings, audit records and what the model is told.
    pub fn name(self) -> &'static str {
        match self {
            Self::AwsAccessKey => "aws_access_key",
            Self::GithubToken => "github_token",
            Self::SlackToken => "slack_token",
            Self::ApiKey => "api_key",
            Self::StripeKey => "stripe_key",
            Self::GoogleApiKey => "google_api_key",
            Self::JsonWebToken => "json_web_token",
            Self::PrivateKey => "private_key",
            Self::HighEntropy => "high_entropy",
            Self::Email => "email",
            Self::CardNumber => "card_number",
        }
    }

    /// The detector named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        ALL.into_iter().find(|d| d.name() == name)
    }

    /// What it finds, in words for a model: "an AWS access key".
    pub fn described(self) -> &'static str {
        match self {
            Self::AwsAccessKey => "AWS access key",
            Self::GithubToken => "GitHub token",
            Self::SlackToken => "Slack token",
            Self::ApiKey => "API key",
            Self::StripeKey => "Stripe secret key",
            Self::GoogleApiKey => "Google API key",
            Self::JsonWebToken => "JSON Web Token",
            Self::PrivateKey => "private key",
            Self::HighEntropy => "high-entropy token",
            Self::Email => "e-mail address",
            Self::CardNumber => "card number",
        }
    }
}

/// One thing found in a text: what, and where (byte offsets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Found {
    /// What was found.
    pub detector: Detector,
    /// Its first byte.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
}

/// The well-known formats, each with its detector. Each is a compiled
/// constant; a failure to compile is a fault of this file, found by its
/// tests.
static PATTERNS: LazyLock<Vec<(Detector, Regex)>> = LazyLock::new(|| {
    // Private keys are found by their markers (`private_keys`), first;
    // card numbers and high-entropy tokens by one pass over the bytes
    // (`runs`), last: as patterns, with no literal to look for, they cost
    // more than all the others together.
    [
        (Detector::AwsAccessKey, r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?-u:\b)"),
        (
            Detector::GithubToken,
            r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{22,})(?-u:\b)",
        ),
        (Detector::SlackToken, r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,255}"),
        (Detector::StripeKey, r"(?-u:\b)[rs]k_live_[A-Za-z0-9]{20,255}(?-u:\b)"),
        (Detector::ApiKey, r"(?-u:\b)sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,255}"),
        (Detector::GoogleApiKey, r"(?-u:\b)AIza[0-9A-Za-z_-]{35}(?-u:\b)"),
        (
            Detector::JsonWebToken,
            r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,4096}\.eyJ[A-Za-z0-9_-]{8,8192}\.[A-Za-z0-9_-]{8,4096}",
        ),
        (
            Detector::Email,
            r"(?-u:\b)[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}\.[A-Za-z]{2,24}(?-u:\b)",
        ),
    ]
    .into_iter()
    .filter_map(|(detector, pattern)| Some((detector, Regex::new(pattern).ok()?)))
    .collect()
});

/// The first and last line of a PEM private key block.
static KEY_MARKERS: LazyLock<Option<(Regex, Regex)>> = LazyLock::new(|| {
    Some((
        Regex::new(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----").ok()?,
        Regex::new(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----").ok()?,
    ))
});

/// The characters of a key block's body without its end line (base64 and
/// the headers of an encrypted key): what an unterminated block runs to.
fn in_key_body(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | ':' | ',' | '-') || c.is_whitespace()
}

/// The private key blocks of `text`: each `BEGIN … PRIVATE KEY` line to
/// the first `END … PRIVATE KEY` line after it, or, with none, to the end
/// of the base64 that follows. The end lines are found in one pass and
/// looked up, so many begin lines cost no more than one.
fn private_keys(text: &str) -> Vec<Found> {
    let Some((begin, end)) = KEY_MARKERS.as_ref() else {
        return Vec::new();
    };
    let ends: Vec<usize> = end.find_iter(text).map(|m| m.end()).collect();
    let mut found = Vec::new();
    let mut after = 0;
    for start in begin.find_iter(text) {
        if start.start() < after {
            continue;
        }
        let stop = match ends.get(ends.partition_point(|&e| e <= start.end())) {
            Some(&stop) => stop,
            None => text[start.end()..]
                .char_indices()
                .find(|(_, c)| !in_key_body(*c))
                .map_or(text.len(), |(i, _)| start.end() + i),
        };
        found.push(Found {
            detector: Detector::PrivateKey,
            start: start.start(),
            end: stop,
        });
        after = stop;
    }
    found
}

/// The shortest token the high-entropy detector weighs.
const ENTROPY_MIN_LEN: usize = 32;
/// The longest: a longer run (an encoded image, say) is no credential.
const ENTROPY_MAX_LEN: usize = 512;
/// Bits per character above which a token is high-entropy: above what
/// hexadecimal (at most 4) reaches, so hashes and UUIDs are not flagged.
const ENTROPY_BITS: f64 = 4.3;

/// What `text` holds, in order of position, none overlapping: where two
/// detectors find overlapping text, the one listed first in [`PATTERNS`]
/// (the more specific) keeps it. Time and memory grow with the text's
/// length alone: each pattern is one linear pass, and each finding is
/// placed among the kept ones in logarithmic time.
pub fn find(text: &str) -> Vec<Found> {
    let mut kept: BTreeMap<usize, Found> = private_keys(text)
        .into_iter()
        .map(|f| (f.start, f))
        .collect();
    let candidates = PATTERNS.iter().flat_map(|(detector, pattern)| {
        pattern.find_iter(text).map(|hit| Found {
            detector: *detector,
            start: hit.start(),
            end: hit.end(),
        })
    });
    for candidate in candidates.chain(runs(text)) {
        let before = kept.range(..=candidate.start).next_back();
        let after = kept.range(candidate.start..).next();
        let overlaps = before.is_some_and(|(_, f)| f.end > candidate.start)
            || after.is_some_and(|(_, f)| f.start < candidate.end);
        if !overlaps && confirmed(candidate.detector, &text[candidate.start..candidate.end]) {
            kept.insert(candidate.start, candidate);
        }
    }
    kept.into_values().collect()
}

/// Whether `b` can be part of a token the high-entropy detector weighs.
fn in_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'=' | b'-')
}

/// The candidates of one pass over `text`'s bytes: each run of 13 to 19
/// digits, single spaces or dashes between them, standing alone (a card
/// number, if its checksum says so), and each run of token characters of
/// 32 to 512 bytes (a high-entropy token, if its entropy says so).
fn runs(text: &str) -> Vec<Found> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    // A digit run is read once: no card number starts inside one.
    let (mut at, mut digits_until) = (0, 0);
    while at < bytes.len() {
        if !in_token(bytes[at]) {
            at += 1;
            continue;
        }
        let standalone = at == 0 || !bytes[at - 1].is_ascii_alphanumeric();
        if at >= digits_until && standalone && bytes[at].is_ascii_digit() {
            let (end, digits) = digit_run(bytes, at);
            let alone = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
            if alone && (13..=19).contains(&digits) {
                found.push(Found {
                    detector: Detector::CardNumber,
                    start: at,
                    end,
                });
            }
            digits_until = end;
        }
        let end = (at..bytes.len())
            .find(|&i| !in_token(bytes[i]))
            .unwrap_or(bytes.len());
        if (ENTROPY_MIN_LEN..=ENTROPY_MAX_LEN).contains(&(end - at)) {
            found.push(Found {
                detector: Detector::HighEntropy,
                start: at,
                end,
            });
        }
        at = end.max(at + 1);
    }
    found
}

/// Where the run of digits starting at `start` ends (single spaces or
/// dashes between digits belong to it), and how many digits it holds.
fn digit_run(bytes: &[u8], start: usize) -> (usize, usize) {
    let (mut end, mut digits) = (start, 0);
    while end < bytes.len() {
        if bytes[end].is_ascii_digit() {
            digits += 1;
            end += 1;
        } else if matches!(bytes[end], b' ' | b'-')
            && bytes.get(end + 1).is_some_and(u8::is_ascii_digit)
        {
            end += 1;
        } else {
            break;
        }
    }
    (end, digits)
}

/// Whether what a pattern matched is what its detector finds: a card
/// number passes the Luhn checksum, a high-entropy token is long, mixes
/// letters and digits and carries more bits per character than hex.
fn confirmed(detector: Detector, matched: &str) -> bool {
    match detector {
        Detector::CardNumber => luhn(matched),
        Detector::HighEntropy => {
            matched.len() >= ENTROPY_MIN_LEN
                && matched.bytes().any(|b| b.is_ascii_digit())
                && matched.bytes().any(|b| b.is_ascii_alphabetic())
                && entropy(matched) > ENTROPY_BITS
        }
        _ => true,
    }
}

/// Whether the digits of `number` (spaces and dashes ignored) pass the
/// Luhn checksum.
fn luhn(number: &str) -> bool {
    let digits: Vec<u32> = number.chars().filter_map(|c| c.to_digit(10)).collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| match (i % 2 == 1, d * 2) {
            (true, doubled) if doubled > 9 => doubled - 9,
            (true, doubled) => doubled,
            (false, _) => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Shannon entropy of `text`'s bytes, in bits per byte.
fn entropy(text: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in text.bytes() {
        counts[usize::from(b)] += 1;
    }
    let len = f64::from(u32::try_from(text.len()).unwrap_or(u32::MAX));
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum()
}
