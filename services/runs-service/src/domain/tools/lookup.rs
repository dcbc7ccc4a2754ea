//! Which of the run's integrations lists the resource a model names by URI
//! or by name alone, without saying which integration: the answer is one,
//! several (the model must choose), or none.

use crate::domain::{
    ids::IntegrationId,
    ports::{Capabilities, McpResource},
};

/// Longest URI matched against the integrations' templates; a longer one
/// can only match a listing exactly.
const MAX_MATCHED_URI: usize = 8 * 1024;

/// The resource a call names: its integration, its URI (or template) and
/// its discovered name, when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Wanted {
    pub(super) integration_id: IntegrationId,
    pub(super) uri: String,
    pub(super) name: Option<String>,
}

/// What a lookup found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// Exactly one integration lists it.
    One(Wanted),
    /// These integrations all list it.
    Several(Vec<IntegrationId>),
    /// None does.
    Nothing,
}

/// The integration listing `uri`: as a resource or a template, exactly;
/// else as a URI one of its templates produces (then read as it is, with
/// no name of its own).
pub(super) fn by_uri(capabilities: &[Capabilities], uri: &str) -> Found {
    let exact = collect(capabilities, |c| {
        entries(c).find(|r| r.uri == uri).map(|r| Wanted {
            integration_id: c.integration_id,
            uri: uri.to_owned(),
            name: Some(r.name.clone()),
        })
    });
    if exact != Found::Nothing {
        return exact;
    }
    collect(capabilities, |c| {
        c.resource_templates
            .iter()
            .any(|t| template_produces(&t.uri, uri))
            .then(|| Wanted {
                integration_id: c.integration_id,
                uri: uri.to_owned(),
                name: None,
            })
    })
}

/// The integration listing a resource or template named `name`.
pub(super) fn by_name(capabilities: &[Capabilities], name: &str) -> Found {
    collect(capabilities, |c| {
        entries(c).find(|r| r.name == name).map(|r| Wanted {
            integration_id: c.integration_id,
            uri: r.uri.clone(),
            name: Some(r.name.clone()),
        })
    })
}

fn entries(c: &Capabilities) -> impl Iterator<Item = &McpResource> {
    c.resources.iter().chain(&c.resource_templates)
}

fn collect(capabilities: &[Capabilities], hit: impl Fn(&Capabilities) -> Option<Wanted>) -> Found {
    let mut hits: Vec<Wanted> = capabilities.iter().filter_map(hit).collect();
    let mut ids: Vec<IntegrationId> = Vec::new();
    for wanted in &hits {
        if !ids.contains(&wanted.integration_id) {
            ids.push(wanted.integration_id);
        }
    }
    match (ids.len(), hits.pop()) {
        (1, Some(wanted)) => Found::One(wanted),
        (0, _) | (_, None) => Found::Nothing,
        _ => Found::Several(ids),
    }
}

/// One piece of an RFC 6570 template.
enum Piece<'a> {
    Literal(&'a [u8]),
    /// `{var}`: one or more characters within a path segment (simple
    /// expansion percent-encodes `/`, `?` and `#`).
    Simple,
    /// `{+var}`, `{?q}`, `{/seg}` and the other operators: any text,
    /// possibly none.
    Operator,
}

fn pieces(template: &str) -> Option<Vec<Piece<'_>>> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        if open > 0 {
            out.push(Piece::Literal(&rest.as_bytes()[..open]));
        }
        let close = rest[open..].find('}')? + open;
        let expression = &rest[open + 1..close];
        out.push(match expression.chars().next() {
            Some(c) if c.is_ascii_alphanumeric() || c == '_' || c == '%' => Piece::Simple,
            Some(_) => Piece::Operator,
            None => return None,
        });
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Piece::Literal(rest.as_bytes()));
    }
    Some(out)
}

/// Whether `uri` is one `template` produces, judged by its shape: the
/// template's literal text in order, each expression standing for what it
/// can expand to. Linear in the URI per piece, so a hostile template or URI
/// costs at most their lengths' product.
fn template_produces(template: &str, uri: &str) -> bool {
    if uri.len() > MAX_MATCHED_URI || !template.contains('{') {
        return false;
    }
    let Some(pieces) = pieces(template) else {
        return false;
    };
    let bytes = uri.as_bytes();
    let n = bytes.len();
    // reach[i]: the pieces so far can produce exactly `uri[..i]`.
    let mut reach = vec![false; n + 1];
    reach[0] = true;
    for piece in &pieces {
        let mut next = vec![false; n + 1];
        match piece {
            Piece::Literal(literal) => {
                for i in (0..=n).filter(|&i| reach[i]) {
                    if bytes[i..].starts_with(literal) {
                        next[i + literal.len()] = true;
                    }
                }
            }
            Piece::Simple => {
                let mut open = false;
                for j in 1..=n {
                    open |= reach[j - 1];
                    if matches!(bytes[j - 1], b'/' | b'?' | b'#') {
                        open = false;
                    }
                    next[j] = open;
                }
            }
            Piece::Operator => {
                let mut seen = false;
                for (i, slot) in next.iter_mut().enumerate() {
                    seen |= reach[i];
                    *slot = seen;
                }
            }
        }
        reach = next;
    }
    reach[n]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offering(id: u128, resources: &[(&str, &str)], templates: &[(&str, &str)]) -> Capabilities {
        let listed = |entries: &[(&str, &str)]| {
            entries
                .iter()
                .map(|(uri, name)| McpResource {
                    uri: (*uri).into(),
                    name: (*name).into(),
                    description: String::new(),
                    mime_type: String::new(),
                })
                .collect()
        };
        Capabilities {
            integration_id: IntegrationId::fixed(id),
            slug: format!("s{id}"),
            tools: vec![],
            resources: listed(resources),
            resource_templates: listed(templates),
            prompts: vec![],
        }
    }

    #[test]
    fn a_template_produces_uris_of_its_shape_only() {
        let t = "data://sales/{region}.csv";
        assert!(template_produces(t, "data://sales/south.csv"));
        assert!(!template_produces(t, "data://sales/.csv"));
        assert!(!template_produces(t, "data://sales/a/b.csv"));
        assert!(!template_produces(t, "data://sales.csv"));
        assert!(template_produces("file:///{+path}", "file:///a/b/c.txt"));
        assert!(template_produces("api://items{?page,size}", "api://items"));
        assert!(template_produces(
            "api://items{?page,size}",
            "api://items?page=2"
        ));
        assert!(template_produces("a://{x}/{y}", "a://1/2"));
        assert!(!template_produces("a://{x}/{y}", "a://1"));
        assert!(!template_produces("a://{unclosed", "a://x"));
        assert!(!template_produces("a://{}", "a://x"));
        assert!(!template_produces("a://fixed", "a://fixed"));
        let long = format!("a://{}", "x".repeat(MAX_MATCHED_URI));
        assert!(!template_produces("a://{+x}", &long));
    }

    #[test]
    fn a_hostile_template_costs_its_length_times_the_uris() {
        let template = "{a}".repeat(2_000);
        let uri = "x".repeat(4_000);
        let started = std::time::Instant::now();
        assert!(template_produces(&template, &uri));
        assert!(!template_produces(&template, &"x".repeat(1_999)));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn a_listing_names_its_integration_and_an_exact_one_wins_over_a_template() {
        let caps = [
            offering(1, &[("data://sales.csv", "sales")], &[]),
            offering(2, &[], &[("data://{name}.csv", "any")]),
        ];
        assert_eq!(
            by_uri(&caps, "data://sales.csv"),
            Found::One(Wanted {
                integration_id: IntegrationId::fixed(1),
                uri: "data://sales.csv".into(),
                name: Some("sales".into()),
            })
        );
        assert_eq!(
            by_uri(&caps, "data://other.csv"),
            Found::One(Wanted {
                integration_id: IntegrationId::fixed(2),
                uri: "data://other.csv".into(),
                name: None,
            })
        );
        assert_eq!(
            by_name(&caps, "any"),
            Found::One(Wanted {
                integration_id: IntegrationId::fixed(2),
                uri: "data://{name}.csv".into(),
                name: Some("any".into()),
            })
        );
        assert_eq!(by_uri(&caps, "other://x"), Found::Nothing);
        assert_eq!(by_name(&caps, "nope"), Found::Nothing);
    }

    #[test]
    fn two_integrations_listing_the_same_resource_are_both_named() {
        let caps = [
            offering(1, &[("data://sales.csv", "sales")], &[]),
            offering(2, &[("data://sales.csv", "sales")], &[]),
        ];
        let both = Found::Several(vec![IntegrationId::fixed(1), IntegrationId::fixed(2)]);
        assert_eq!(by_uri(&caps, "data://sales.csv"), both);
        assert_eq!(by_name(&caps, "sales"), both);
    }
}
