//! The functions a query may call: a list of what analytics needs, each
//! one's output bounded (`bounded.rs`); everything else is refused by name
//! before anything runs.
//!
//! The list is checked twice. In the text, every function called by name
//! (and its aliases) must be on it, so the model reads which function is
//! not available before a process is started. In the plan, every scalar,
//! aggregate and window function must be on it by its canonical name: that
//! also covers the functions the planner makes from syntax (`EXTRACT`,
//! `SUBSTRING … FROM`, `POSITION … IN`, `[]`), which the text does not name.
//! Table functions the list does not name are removed from the session.
//!
//! Left off on purpose: quadratic ones (`levenshtein`: a pair of 1 MB values
//! costs 10^12 steps in one call), ones that make a list per row or read
//! outside the thread's tables, and anything not needed for analytics.

use std::{
    collections::HashSet,
    ops::ControlFlow,
    sync::{Arc, LazyLock},
};

use datafusion::{
    arrow::datatypes::SchemaRef,
    catalog::MemTable,
    common::tree_node::{TreeNode as _, TreeNodeRecursion},
    logical_expr::{Expr, LogicalPlan, expr::WindowFunctionDefinition},
    prelude::{SessionConfig, SessionContext},
    sql::{
        parser::Statement as DfStatement,
        sqlparser::ast::{self, Visit as _},
    },
};

use crate::domain::datasource::{QueryError, Refusal};

/// Scalar functions, by canonical name. Each builds a value at most a small
/// constant multiple of its inputs, or is bounded in `bounded.rs`.
pub const SCALAR: &[&str] = &[
    // Numbers: fixed-size results.
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "cos",
    "cosh",
    "cot",
    "degrees",
    "exp",
    "factorial",
    "floor",
    "gcd",
    "isnan",
    "iszero",
    "lcm",
    "ln",
    "log",
    "log10",
    "log2",
    "nanvl",
    "pi",
    "power",
    "radians",
    "random",
    "round",
    "signum",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    // Conditions: one of the inputs.
    "coalesce",
    "nullif",
    "nvl",
    "nvl2",
    "greatest",
    "least",
    // Strings no longer than a small multiple of their input.
    "ascii",
    "bit_length",
    "btrim",
    "character_length",
    "chr",
    "contains",
    "ends_with",
    "find_in_set",
    "initcap",
    "left",
    "lower",
    "ltrim",
    "octet_length",
    "reverse",
    "right",
    "rtrim",
    "split_part",
    "starts_with",
    "strpos",
    "substr",
    "substr_index",
    "to_hex",
    "translate",
    "upper",
    "uuid",
    "decode",
    "regexp_like",
    "regexp_match",
    "regexp_count",
    "regexp_instr",
    // Strings bounded in `bounded.rs`.
    "concat",
    "concat_ws",
    "encode",
    "lpad",
    "overlay",
    "regexp_replace",
    "repeat",
    "replace",
    "rpad",
    "to_char",
    // Dates and times: fixed-size results (formats are read, not repeated).
    "current_date",
    "current_time",
    "now",
    "date_bin",
    "date_part",
    "date_trunc",
    "from_unixtime",
    "make_date",
    "to_date",
    "to_local_time",
    "to_timestamp",
    "to_timestamp_seconds",
    "to_timestamp_millis",
    "to_timestamp_micros",
    "to_timestamp_nanos",
    "to_unixtime",
    "make_time",
    "to_time",
    // Types: bounded in `bounded.rs` (casts) or a short name.
    "arrow_cast",
    "arrow_typeof",
    "get_field",
];

/// Aggregate functions, by canonical name. What they hold is counted in the
/// query's memory pool.
pub const AGGREGATE: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "median",
    "stddev",
    "stddev_pop",
    "var",
    "var_pop",
    "corr",
    "covar_samp",
    "covar_pop",
    "approx_distinct",
    "approx_median",
    "approx_percentile_cont",
    "approx_percentile_cont_with_weight",
    "first_value",
    "last_value",
    "nth_value",
    "bool_and",
    "bool_or",
    "bit_and",
    "bit_or",
    "bit_xor",
    "string_agg",
    "array_agg",
    "regr_slope",
    "regr_intercept",
    "regr_count",
    "regr_r2",
    "regr_avgx",
    "regr_avgy",
    "regr_sxx",
    "regr_syy",
    "regr_sxy",
    "grouping",
];

/// Window functions, by canonical name (aggregates may also be windowed).
pub const WINDOW: &[&str] = &[
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "nth_value",
];

/// Table functions: rows counted and cancelled like any scan.
pub const TABLE: &[&str] = &["generate_series", "range"];

/// Every name a query text may call: the lists and the aliases the engine
/// registers for them (`char_length`, `pow`, `mean`, …), lowercase.
static CALLABLE: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let ctx = SessionContext::new();
    let state = ctx.state();
    let mut names: HashSet<String> = SCALAR
        .iter()
        .chain(AGGREGATE)
        .chain(WINDOW)
        .chain(TABLE)
        .map(|name| (*name).to_owned())
        .collect();
    for (name, udf) in state.scalar_functions() {
        if SCALAR.contains(&udf.name()) {
            names.insert(name.clone());
            names.extend(udf.aliases().iter().cloned());
        }
    }
    for (name, udaf) in state.aggregate_functions() {
        if AGGREGATE.contains(&udaf.name()) {
            names.insert(name.clone());
            names.extend(udaf.aliases().iter().cloned());
        }
    }
    for (name, udwf) in state.window_functions() {
        if WINDOW.contains(&udwf.name()) {
            names.insert(name.clone());
            names.extend(udwf.aliases().iter().cloned());
        }
    }
    names.into_iter().map(|n| n.to_ascii_lowercase()).collect()
});

fn not_available(name: &str) -> QueryError {
    QueryError::Refused(Refusal::FunctionNotAvailable(name.to_owned()))
}

/// What a query text names: the relations it reads (lowercase), once every
/// function it calls by name was found on the lists.
pub(super) fn check_statement(statement: &DfStatement) -> Result<HashSet<String>, QueryError> {
    let DfStatement::Statement(statement) = statement else {
        return Ok(HashSet::new());
    };
    let mut names = Names::default();
    match statement.visit(&mut names) {
        ControlFlow::Break(refusal) => Err(refusal),
        ControlFlow::Continue(()) => Ok(names.relations),
    }
}

/// Collects relation names and stops at the first unlisted call.
#[derive(Default)]
struct Names {
    relations: HashSet<String>,
}

impl ast::Visitor for Names {
    type Break = QueryError;

    fn pre_visit_relation(&mut self, relation: &ast::ObjectName) -> ControlFlow<QueryError> {
        if let Some(ast::ObjectNamePart::Identifier(ident)) = relation.0.last() {
            self.relations.insert(ident.value.to_lowercase());
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &ast::Expr) -> ControlFlow<QueryError> {
        if let ast::Expr::Function(function) = expr
            && !is_listed(&function.name, &CALLABLE)
        {
            return ControlFlow::Break(not_available(&function.name.to_string()));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &ast::TableFactor) -> ControlFlow<QueryError> {
        let (name, args) = match factor {
            ast::TableFactor::Table {
                name,
                args: Some(args),
                ..
            } => (name, Some(args)),
            ast::TableFactor::Function { name, .. } => (name, None),
            _ => return ControlFlow::Continue(()),
        };
        let table_functions: HashSet<String> = TABLE.iter().map(|n| (*n).to_owned()).collect();
        if !is_listed(name, &table_functions) {
            return ControlFlow::Break(not_available(&name.to_string()));
        }
        // A table function's arguments are evaluated while the query is
        // planned, before the bounds of `bounded.rs` are in place.
        let called = args.is_some_and(|args| {
            ast::visit_expressions(args, |expr| match expr {
                ast::Expr::Function(_) | ast::Expr::Subquery(_) => ControlFlow::Break(()),
                _ => ControlFlow::Continue(()),
            })
            .is_break()
        });
        if called {
            return ControlFlow::Break(QueryError::Refused(Refusal::NonConstantArguments(
                name.to_string(),
            )));
        }
        ControlFlow::Continue(())
    }
}

/// Whether `name`, unqualified, is in `listed`. A qualified name
/// (`schema.function`) never is.
fn is_listed(name: &ast::ObjectName, listed: &HashSet<String>) -> bool {
    match name.0.as_slice() {
        [ast::ObjectNamePart::Identifier(ident)] => {
            listed.contains(&ident.value.to_ascii_lowercase())
        }
        _ => false,
    }
}

/// The first function in `plan` (its subqueries included) off the lists,
/// by canonical name.
pub fn unlisted_in_plan(plan: &LogicalPlan) -> Option<String> {
    let mut found = None;
    let _ = plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Some(name) = unlisted_call(e) {
                    found = Some(name);
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    found
}

fn unlisted_call(expr: &Expr) -> Option<String> {
    let (name, listed): (&str, &[&str]) = match expr {
        Expr::ScalarFunction(f) => (f.func.name(), SCALAR),
        Expr::AggregateFunction(f) => (f.func.name(), AGGREGATE),
        Expr::WindowFunction(w) => match &w.fun {
            WindowFunctionDefinition::AggregateUDF(f) => (f.name(), AGGREGATE),
            WindowFunctionDefinition::WindowUDF(f) => (f.name(), WINDOW),
        },
        _ => return None,
    };
    (!listed.contains(&name)).then(|| name.to_owned())
}

/// Refuses a plan that calls a function off the lists.
pub(super) fn check_plan(plan: &LogicalPlan) -> Result<(), QueryError> {
    unlisted_in_plan(plan).map_or(Ok(()), |name| Err(not_available(&name)))
}

/// Removes from `ctx` the table functions off the list.
pub(super) fn restrict_table_functions(ctx: &SessionContext) {
    let unlisted: Vec<String> = ctx
        .state()
        .table_functions()
        .keys()
        .filter(|name| !TABLE.contains(&name.as_str()))
        .cloned()
        .collect();
    for name in unlisted {
        ctx.deregister_udtf(&name);
    }
}

/// The plan of `sql` over empty tables of the given schemas, once the text
/// and the plan passed the gate and the lists; nothing is run. (The
/// `sql_allowlist` fuzz target checks the lists through this.)
pub async fn plan_checked(
    sql: &str,
    tables: &[(&str, SchemaRef)],
) -> Result<LogicalPlan, QueryError> {
    let statement = super::gate::check_statement(sql)?;
    check_statement(&statement)?;
    let mut config = SessionConfig::new().with_information_schema(false);
    config.options_mut().execution.enable_recursive_ctes = false;
    let ctx = SessionContext::new_with_config(config);
    restrict_table_functions(&ctx);
    for (name, schema) in tables {
        let table = MemTable::try_new(Arc::clone(schema), vec![Vec::new()])
            .map_err(|e| QueryError::Internal(e.into()))?;
        ctx.register_table(*name, Arc::new(table))
            .map_err(|e| QueryError::Internal(e.into()))?;
    }
    let plan = ctx
        .state()
        .statement_to_plan(statement)
        .await
        .map_err(|e| QueryError::Engine(e.strip_backtrace()))?;
    check_plan(&plan)?;
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use datafusion::execution::FunctionRegistry as _;

    use super::*;

    #[test]
    fn every_listed_function_exists_in_the_engine() {
        let ctx = SessionContext::new();
        let state = ctx.state();
        let missing: Vec<&str> = SCALAR
            .iter()
            .filter(|name| state.udf(name).is_err())
            .chain(AGGREGATE.iter().filter(|name| state.udaf(name).is_err()))
            .chain(
                WINDOW
                    .iter()
                    .filter(|name| state.udwf(name).is_err() && state.udaf(name).is_err()),
            )
            .chain(
                TABLE
                    .iter()
                    .filter(|name| !state.table_functions().contains_key(**name)),
            )
            .copied()
            .collect();
        assert!(missing.is_empty(), "not in the engine: {missing:?}");
    }

    #[test]
    fn levenshtein_is_in_the_engine_but_not_on_the_list() {
        let ctx = SessionContext::new();
        let state = ctx.state();
        assert!(state.udf("levenshtein").is_ok());
        assert!(!SCALAR.contains(&"levenshtein"));
        let mut unlisted: Vec<&str> = state
            .scalar_functions()
            .values()
            .map(|f| f.name())
            .filter(|name| !SCALAR.contains(name))
            .collect();
        unlisted.sort_unstable();
        eprintln!("scalar functions off the list: {unlisted:?}");
    }
}
