//! A policy checked and compiled on write: names, counts and sizes bounded,
//! every condition parsed into a CEL program whose depth and loops are
//! bounded too, so that evaluating it per call is cheap and safe.

use std::sync::Arc;

use cel::{
    Program,
    common::ast::{EntryExpr, Expr, IdedExpr},
};
use switchboard_server::FieldViolation;

use super::{Effect, Policy};

/// Bounds of a policy; each has a setting (docs/configuration.md).
#[derive(Debug, Clone, Copy)]
pub struct PolicyLimits {
    /// Rules in one policy.
    pub max_rules: usize,
    /// Bytes of one condition.
    pub max_condition_bytes: usize,
}

impl Default for PolicyLimits {
    fn default() -> Self {
        Self {
            max_rules: 1000,
            max_condition_bytes: 4096,
        }
    }
}

/// Brackets nested in a condition's text: the parser recurses per bracket,
/// and a deep enough nesting would exhaust its stack before it refused.
const MAX_BRACKETS: usize = 32;
/// Depth of a condition's syntax tree: evaluation recurses per level on the
/// calling thread, whose stack is a runtime worker's.
const MAX_DEPTH: usize = 32;
/// Loops (`all`, `exists`, `map`, `filter`) nested in one another: each
/// level multiplies the work of a call by the length of a list.
const MAX_LOOP_NESTING: usize = 1;
/// The parser's own stack: a thread of this size parses a bounded
/// condition with room to spare, even in an unoptimised build.
const PARSER_STACK: usize = 64 << 20;

/// A policy with its conditions compiled, one program per rule.
#[derive(Debug)]
pub struct CompiledPolicy {
    /// The policy as written.
    pub policy: Policy,
    pub(super) programs: Vec<Program>,
}

const NAME_BYTES: usize = 63;

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.len() <= NAME_BYTES
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Checks `policy` against `limits` and compiles every condition. Every
/// problem is reported, each naming its field (`policy.rules[2].condition`)
/// and, for a condition, the line and column.
pub fn compile(
    policy: Policy,
    limits: PolicyLimits,
) -> Result<Arc<CompiledPolicy>, Vec<FieldViolation>> {
    let mut violations = Vec::new();
    if !valid_name(&policy.name) {
        violations.push(FieldViolation::new(
            "policy.name",
            "must match ^[a-z0-9][a-z0-9-]{0,62}$",
        ));
    }
    if policy.rules.len() > limits.max_rules {
        violations.push(FieldViolation::new(
            "policy.rules",
            format!("at most {} rules", limits.max_rules),
        ));
        return Err(violations);
    }
    let mut programs = Vec::with_capacity(policy.rules.len());
    for (i, rule) in policy.rules.iter().enumerate() {
        let field = format!("policy.rules[{i}]");
        if !valid_name(&rule.name) {
            violations.push(FieldViolation::new(
                format!("{field}.name"),
                "must match ^[a-z0-9][a-z0-9-]{0,62}$",
            ));
        } else if policy.rules[..i].iter().any(|r| r.name == rule.name) {
            violations.push(FieldViolation::new(
                format!("{field}.name"),
                "is used by an earlier rule of the policy",
            ));
        }
        if rule.effect == Effect::RequireApproval && rule.approver_role.is_empty() {
            violations.push(FieldViolation::new(
                format!("{field}.approver_role"),
                "is required when the effect is REQUIRE_APPROVAL",
            ));
        }
        match condition(&rule.condition, limits) {
            Ok(program) => programs.push(program),
            Err(description) => violations.push(FieldViolation::new(
                format!("{field}.condition"),
                description,
            )),
        }
    }
    if violations.is_empty() {
        Ok(Arc::new(CompiledPolicy { policy, programs }))
    } else {
        Err(violations)
    }
}

/// One condition, bounded and compiled, or what is wrong with it.
fn condition(text: &str, limits: PolicyLimits) -> Result<Program, String> {
    if text.trim().is_empty() {
        return Err("is empty".to_owned());
    }
    if text.len() > limits.max_condition_bytes {
        return Err(format!(
            "is longer than {} bytes",
            limits.max_condition_bytes
        ));
    }
    if let Some(position) = too_deep_brackets(text) {
        return Err(format!(
            "{position}: brackets are nested more than {MAX_BRACKETS} deep"
        ));
    }
    let owned = text.to_owned();
    // Parse, check and, when refused, drop the tree on a thread of its own:
    // each of the three recurses as deep as the text nests.
    std::thread::Builder::new()
        .name("policy-compile".to_owned())
        .stack_size(PARSER_STACK)
        .spawn(move || parse(&owned))
        .map_err(|_| "could not be compiled now; try again".to_owned())?
        .join()
        .map_err(|_| "could not be compiled".to_owned())?
}

fn parse(text: &str) -> Result<Program, String> {
    let program = Program::compile(text).map_err(|errors| {
        errors.errors.first().map_or_else(
            || "does not compile".to_owned(),
            |e| format!("line {}, column {}: {}", e.pos.0.max(1), e.pos.1 + 1, e.msg),
        )
    })?;
    let shape = Shape::of(program.expression());
    if shape.depth > MAX_DEPTH {
        return Err(format!(
            "nests expressions {} deep; at most {MAX_DEPTH}",
            shape.depth
        ));
    }
    if shape.loops > MAX_LOOP_NESTING {
        return Err(format!(
            "nests a loop (all, exists, exists_one, map, filter) in another; at most {MAX_LOOP_NESTING} level"
        ));
    }
    Ok(program)
}

/// Where brackets first nest too deep, as `line L, column C`.
fn too_deep_brackets(text: &str) -> Option<String> {
    let mut depth = 0usize;
    let (mut line, mut column) = (1, 0);
    for c in text.chars() {
        column += 1;
        match c {
            '\n' => (line, column) = (line + 1, 0),
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_BRACKETS {
                    return Some(format!("line {line}, column {column}"));
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    None
}

/// How deep a syntax tree nests, and how deep its loops nest; measured
/// without recursion.
#[derive(Debug, Default)]
struct Shape {
    depth: usize,
    loops: usize,
}

impl Shape {
    fn of(root: &IdedExpr) -> Self {
        let mut shape = Self::default();
        let mut stack = vec![(root, 1usize, 0usize)];
        while let Some((node, depth, loops)) = stack.pop() {
            shape.depth = shape.depth.max(depth);
            shape.loops = shape.loops.max(loops);
            for (child, is_loop) in children(&node.expr) {
                stack.push((child, depth + 1, loops + usize::from(is_loop)));
            }
        }
        shape
    }
}

/// A node's children, each with whether it is the body of a loop.
fn children(expr: &Expr) -> Vec<(&IdedExpr, bool)> {
    match expr {
        Expr::Call(call) => call
            .target
            .as_deref()
            .into_iter()
            .chain(call.args.iter())
            .map(|c| (c, false))
            .collect(),
        Expr::Comprehension(c) => vec![
            (&c.iter_range, false),
            (&c.accu_init, false),
            (&c.loop_cond, true),
            (&c.loop_step, true),
            (&c.result, false),
        ],
        Expr::List(list) => list.elements.iter().map(|c| (c, false)).collect(),
        Expr::Map(map) => entries(&map.entries),
        Expr::Struct(s) => entries(&s.entries),
        Expr::Select(select) => vec![(&*select.operand, false)],
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => Vec::new(),
    }
}

fn entries(entries: &[cel::common::ast::IdedEntryExpr]) -> Vec<(&IdedExpr, bool)> {
    entries
        .iter()
        .flat_map(|entry| match &entry.expr {
            EntryExpr::MapEntry(e) => vec![(&e.key, false), (&e.value, false)],
            EntryExpr::StructField(f) => vec![(&f.value, false)],
        })
        .collect()
}
