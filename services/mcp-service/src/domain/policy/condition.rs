//! A rule's condition: CEL text, bounded before the parser sees it, compiled
//! once, and checked to return a bool where CEL can tell on write.

use std::{panic::AssertUnwindSafe, sync::Arc};

use cel::{
    Context, Env, ExecutionError, IdedExpr, Program, Value,
    common::ast::{ComprehensionExpr, EntryExpr, Expr, MapExpr, StructExpr},
};

use super::facts::CallFacts;

/// The longest condition, in bytes.
pub const MAX_CONDITION_BYTES: usize = 4096;

/// The deepest nesting of brackets and conditionals (`?:`) a condition may
/// have. The CEL parser recurses once per level, so a deep expression would
/// overflow the stack before the parser's own limit could refuse it: the
/// text is measured before it is parsed.
pub const MAX_NESTING: usize = 32;

/// The most comprehensions (`all`, `exists`, `exists_one`, `map`,
/// `filter`) a condition may hold. They may not nest (see
/// [`refuse_shape`]), so each costs one pass over what it loops over; a
/// condition runs on every call.
pub const MAX_COMPREHENSIONS: usize = 8;

/// Where and why a condition is refused. Lines and columns count from 1,
/// columns in characters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct ConditionError {
    /// The line.
    pub line: usize,
    /// The column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

impl ConditionError {
    fn at(line: usize, column: usize, message: impl Into<String>) -> Self {
        Self {
            line,
            column,
            message: message.into(),
        }
    }
}

/// The deepest expression tree a condition may compile to. Evaluating a
/// condition, and dropping it, recurse once per level on the caller's
/// stack (a tokio worker's 2 MiB): chains the text check cannot see
/// (`a.b.c…`, `1 + 1 + …`) are measured on the tree.
pub const MAX_TREE_DEPTH: usize = 64;

/// The stack the parser runs on: its recursion follows the text's chains
/// before the tree can be measured, so it gets room for the longest chain
/// a condition of [`MAX_CONDITION_BYTES`] can spell.
const PARSE_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Parses `text` on a thread of its own with room for the parser's
/// recursion, and keeps the program only when its tree is shallow enough
/// to evaluate and drop on an ordinary stack (a deep one is dropped there).
fn parse_bounded(text: &str, env: &Arc<Env>) -> Result<Program, ConditionError> {
    let text = text.to_owned();
    let env = env.clone();
    let parse = move || -> Result<Program, ConditionError> {
        // Generated code over hostile text: a panic in it is a refused
        // condition, not a dead request.
        let parsed = std::panic::catch_unwind(AssertUnwindSafe(|| env.compile(&text)))
            .map_err(|_| ConditionError::at(1, 1, "the condition could not be parsed"))?;
        let program = parsed.map_err(|errors| {
            let first = errors.errors.first();
            let (line, column) = first.map_or((1, 1), |e| {
                (
                    usize::try_from(e.pos.0).unwrap_or(1).max(1),
                    // The parser counts columns from 1 already.
                    usize::try_from(e.pos.1).unwrap_or(1).max(1),
                )
            });
            let message = first.map_or_else(|| "syntax error".to_owned(), |e| e.msg.clone());
            ConditionError::at(line, column, message)
        })?;
        if let Some(refusal) = refuse_shape(program.expression()) {
            return Err(ConditionError::at(1, 1, refusal));
        }
        Ok(program)
    };
    std::thread::Builder::new()
        .name("policy-parse".into())
        .stack_size(PARSE_STACK_BYTES)
        .spawn(parse)
        .map_err(|_| ConditionError::at(1, 1, "the condition could not be parsed now"))?
        .join()
        .map_err(|_| ConditionError::at(1, 1, "the condition could not be parsed"))?
}

/// What a compiled expression tree is refused for, measured without
/// recursion: a depth past [`MAX_TREE_DEPTH`], or a loop whose body does
/// more than constant work per element.
///
/// A loop's body (its condition and step) reads only the loop's own
/// variables and literals, and holds no loop of its own: work then grows
/// with the size of what is looped over, never with its square. A body
/// reading a list or string from outside (`xs.all(x, x in ys)`,
/// `xs.all(x, s.contains(x))`) would compare every element with all of the
/// other, and a caller chooses both sizes.
fn refuse_shape(root: &IdedExpr) -> Option<String> {
    let mut stack: Vec<(&IdedExpr, usize, Option<&ComprehensionExpr>)> = vec![(root, 1, None)];
    while let Some((node, depth, body_of)) = stack.pop() {
        if depth > MAX_TREE_DEPTH {
            return Some(format!(
                "the expression is nested more than {MAX_TREE_DEPTH} deep"
            ));
        }
        if let Some(outer) = body_of {
            match &node.expr {
                Expr::Comprehension(_) => {
                    return Some(
                        "a loop (all, exists, exists_one, map, filter) holds another loop; loops may follow one another but not nest".to_owned(),
                    );
                }
                Expr::Ident(name) if !is_loop_variable(outer, name) => {
                    return Some(format!(
                        "a loop's body reads `{name}` from outside the loop; it may read only its own variable and literals"
                    ));
                }
                _ => {}
            }
        }
        if let Expr::Comprehension(c) = &node.expr {
            for (child, body) in [
                (&c.iter_range, body_of),
                (&c.accu_init, body_of),
                (&c.loop_cond, Some(&**c)),
                (&c.loop_step, Some(&**c)),
                (&c.result, Some(&**c)),
            ] {
                stack.push((child, depth + 1, body));
            }
            continue;
        }
        let mut below = Vec::new();
        children(&node.expr, &mut |child| below.push(child));
        stack.extend(below.into_iter().map(|child| (child, depth + 1, body_of)));
    }
    None
}

/// Whether `name` is one of the variables loop `c` binds.
fn is_loop_variable(c: &ComprehensionExpr, name: &str) -> bool {
    name == c.iter_var || name == c.accu_var || c.iter_var2.as_deref() == Some(name)
}

/// Calls `each` on every direct child of `expr`.
fn children<'a>(expr: &'a Expr, each: &mut impl FnMut(&'a IdedExpr)) {
    match expr {
        Expr::Call(call) => {
            call.target.iter().for_each(|t| each(t));
            call.args.iter().for_each(&mut *each);
        }
        Expr::Comprehension(c) => {
            for child in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                each(child);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(&mut *each),
        Expr::Map(MapExpr { entries }) | Expr::Struct(StructExpr { entries, .. }) => {
            for entry in entries {
                match &entry.expr {
                    EntryExpr::StructField(field) => each(&field.value),
                    EntryExpr::MapEntry(entry) => {
                        each(&entry.key);
                        each(&entry.value);
                    }
                }
            }
        }
        Expr::Select(select) => each(&select.operand),
        Expr::Unspecified | Expr::Ident(_) | Expr::Literal(_) => {}
    }
}

/// A compiled condition.
#[derive(Debug)]
pub struct Condition {
    program: Program,
    uses_tool: bool,
    reads_arguments: bool,
    reads_findings: bool,
}

/// What evaluating a condition for a call gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The condition holds.
    Holds,
    /// The condition does not hold.
    Fails,
    /// The condition could not be evaluated for this call, or did not give
    /// a bool.
    Error(String),
}

impl Condition {
    /// Compiles `text` after bounding its size, nesting and comprehensions,
    /// and refuses it when, evaluated over a call of every kind's sample
    /// values, it names something that does not exist or gives no bool.
    pub fn compile(text: &str, env: &Arc<Env>) -> Result<Self, ConditionError> {
        if text.len() > MAX_CONDITION_BYTES {
            return Err(ConditionError::at(
                1,
                1,
                format!("the condition is longer than {MAX_CONDITION_BYTES} bytes"),
            ));
        }
        if text.trim().is_empty() {
            return Err(ConditionError::at(1, 1, "the condition is empty"));
        }
        check_shape(text)?;
        let program = parse_bounded(text, env)?;
        let references = program.references();
        let condition = Self {
            uses_tool: references.has_variable("tool"),
            reads_arguments: references.has_variable("arguments"),
            reads_findings: references.has_variable("findings"),
            program,
        };
        condition.check_on_samples(env)?;
        Ok(condition)
    }

    /// Whether the condition reads the tool's name or annotations, so that
    /// a call must look the annotations up.
    pub fn uses_tool(&self) -> bool {
        self.uses_tool
    }

    /// Whether the condition reads what a call carries (`arguments` or
    /// `findings`), so that it can be decided only for a call, not for a
    /// listing.
    pub fn reads_content(&self) -> bool {
        self.reads_arguments || self.reads_findings
    }

    /// Whether the condition reads what the guardrails found, so that a
    /// tool's result is decided on again once it is back.
    pub fn reads_findings(&self) -> bool {
        self.reads_findings
    }

    /// Evaluates the condition in `context`.
    pub fn evaluate(&self, context: &Context<'_, '_>) -> Outcome {
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| self.program.execute(context)));
        match result {
            Ok(Ok(Value::Bool(true))) => Outcome::Holds,
            Ok(Ok(Value::Bool(false))) => Outcome::Fails,
            Ok(Ok(other)) => Outcome::Error(format!(
                "the condition gave {}, not a bool",
                other.type_of()
            )),
            Ok(Err(error)) => Outcome::Error(error.to_string()),
            Err(_) => Outcome::Error("the condition could not be evaluated".to_owned()),
        }
    }

    /// The write-time check: over sample calls of each kind, a condition
    /// that gives something other than a bool, names a variable or field
    /// that does not exist, or applies an operator to the wrong types is
    /// refused. Errors that depend on the values (an index out of range,
    /// a division by zero) are left to run time, where they fail closed.
    fn check_on_samples(&self, env: &Arc<Env>) -> Result<(), ConditionError> {
        for context in CallFacts::probes(env) {
            let result =
                std::panic::catch_unwind(AssertUnwindSafe(|| self.program.execute(&context)))
                    .map_err(|_| {
                        ConditionError::at(1, 1, "the condition could not be evaluated")
                    })?;
            match result {
                Ok(Value::Bool(_)) => {}
                Ok(other) => {
                    return Err(ConditionError::at(
                        1,
                        1,
                        format!("the condition gives {}, not a bool", other.type_of()),
                    ));
                }
                // The sample call has no arguments: one a condition reads
                // is missing, and is left to run time, where a missing
                // argument fails closed.
                Err(ExecutionError::NoSuchKey(_)) if self.reads_arguments => {}
                Err(
                    error @ (ExecutionError::UndeclaredReference(_)
                    | ExecutionError::NoSuchKey(_)
                    | ExecutionError::NoSuchOverload(_)
                    | ExecutionError::UnsupportedBinaryOperator(..)
                    | ExecutionError::ValuesNotComparable(..)),
                ) => return Err(ConditionError::at(1, 1, error.to_string())),
                Err(_) => {}
            }
        }
        Ok(())
    }
}

/// [`check_shape`], for the tests of the module's parent.
#[cfg(test)]
pub(super) fn check_shape_for_tests(text: &str) -> Result<(), ConditionError> {
    check_shape(text)
}

/// The comprehension macros, whose nesting multiplies work.
const COMPREHENSIONS: [&str; 5] = ["all", "exists", "exists_one", "map", "filter"];

/// Bounds the nesting and the comprehensions of `text` without parsing it:
/// brackets and conditionals outside string literals.
fn check_shape(text: &str) -> Result<(), ConditionError> {
    let mut scan = Scan::default();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        scan.advance(c);
        match c {
            '\'' | '"' => scan.skip_string(text, at, c, &mut chars),
            '(' | '[' | '{' | '?' => {
                if c == '(' && scan.follows_comprehension(text, at) {
                    scan.comprehensions += 1;
                    if scan.comprehensions > MAX_COMPREHENSIONS {
                        return Err(scan.error(format!(
                            "more than {MAX_COMPREHENSIONS} comprehensions (all, exists, exists_one, map, filter)"
                        )));
                    }
                }
                scan.depth += 1;
                if scan.depth > MAX_NESTING {
                    return Err(scan.error(format!("nested more than {MAX_NESTING} deep")));
                }
            }
            // A conditional's depth lasts to the end of the text: `a ? b :
            // c ? d : e` nests to the right.
            ')' | ']' | '}' => scan.depth = scan.depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Where a shape scan is.
#[derive(Debug)]
struct Scan {
    line: usize,
    column: usize,
    depth: usize,
    comprehensions: usize,
}

impl Default for Scan {
    fn default() -> Self {
        Self {
            line: 1,
            column: 0,
            depth: 0,
            comprehensions: 0,
        }
    }
}

impl Scan {
    fn advance(&mut self, c: char) {
        if c == '\n' {
            self.line += 1;
            self.column = 0;
        } else {
            self.column += 1;
        }
    }

    fn error(&self, message: String) -> ConditionError {
        ConditionError::at(self.line, self.column.max(1), message)
    }

    /// Whether the `(` at `at` opens a comprehension macro's arguments.
    fn follows_comprehension(&self, text: &str, at: usize) -> bool {
        let before = text[..at].trim_end();
        let start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |i| i + 1);
        COMPREHENSIONS.contains(&&before[start..])
    }

    /// Skips a string literal opened by `quote` at `at` (a triple quote
    /// included), counting lines; escapes skip the next character.
    fn skip_string(
        &mut self,
        text: &str,
        at: usize,
        quote: char,
        chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>,
    ) {
        let triple: String = std::iter::repeat_n(quote, 3).collect();
        let is_triple = text[at..].starts_with(&triple);
        // `r'…'` and `br'…'`: a backslash is a character, not an escape.
        let prefix = text[..at]
            .rfind(|c: char| !c.is_ascii_alphanumeric())
            .map_or(&text[..at], |i| &text[i + 1..at]);
        let raw = prefix.len() <= 2 && prefix.contains(['r', 'R']);
        if is_triple {
            for _ in 0..2 {
                if let Some((_, c)) = chars.next() {
                    self.advance(c);
                }
            }
        }
        while let Some((i, c)) = chars.next() {
            self.advance(c);
            if c == '\\' && !raw {
                if let Some((_, escaped)) = chars.next() {
                    self.advance(escaped);
                }
            } else if c == quote && (!is_triple || text[i..].starts_with(&triple)) {
                if is_triple {
                    for _ in 0..2 {
                        if let Some((_, c)) = chars.next() {
                            self.advance(c);
                        }
                    }
                }
                return;
            }
        }
    }
}
