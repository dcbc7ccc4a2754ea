//! The function list of `source_query`: any text a model sends, through the
//! list's checks of the text and of the plan (`allowlist::plan_checked`),
//! over two tables of every column type.
//!
//! Checked on every input: no panic; and when the text passes, every scalar,
//! aggregate and window function in its plan (its subqueries included),
//! found here by a walk of its own, is on the published lists.

#![no_main]

use std::sync::{Arc, LazyLock};

use datafusion::{
    arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit},
    common::tree_node::{TreeNode as _, TreeNodeRecursion},
    logical_expr::{Expr, LogicalPlan, expr::WindowFunctionDefinition},
};
use libfuzzer_sys::fuzz_target;
use switchboard_runs_service::outbound::datasource::allowlist;

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(switchboard_fuzz::runtime);

static TABLES: LazyLock<Vec<(&'static str, SchemaRef)>> = LazyLock::new(|| {
    let sales = Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("region", DataType::Utf8, true),
        Field::new("price", DataType::Float64, true),
        Field::new("paid", DataType::Boolean, true),
        Field::new("day", DataType::Date32, true),
        Field::new("at", DataType::Timestamp(TimeUnit::Microsecond, None), true),
    ]);
    let regions = Schema::new(vec![
        Field::new("region", DataType::Utf8, true),
        Field::new("manager", DataType::Utf8, true),
    ]);
    vec![("sales", Arc::new(sales)), ("regions", Arc::new(regions))]
});

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(plan) = RUNTIME.block_on(allowlist::plan_checked(sql, &TABLES)) else {
        return;
    };
    for (name, listed) in calls(&plan) {
        assert!(listed.contains(&name.as_str()), "{sql}: `{name}` passed the list");
    }
});

/// Every function `plan` calls, with the list it must be on.
fn calls(plan: &LogicalPlan) -> Vec<(String, &'static [&'static str])> {
    let mut found = Vec::new();
    let mut visit = |expr: &Expr| {
        let _ = expr.apply(|e| {
            match e {
                Expr::ScalarFunction(f) => found.push((f.func.name().to_owned(), allowlist::SCALAR)),
                Expr::AggregateFunction(f) => {
                    found.push((f.func.name().to_owned(), allowlist::AGGREGATE));
                }
                Expr::WindowFunction(w) => match &w.fun {
                    WindowFunctionDefinition::AggregateUDF(f) => {
                        found.push((f.name().to_owned(), allowlist::AGGREGATE));
                    }
                    WindowFunctionDefinition::WindowUDF(f) => {
                        found.push((f.name().to_owned(), allowlist::WINDOW));
                    }
                },
                _ => {}
            }
            Ok(TreeNodeRecursion::Continue)
        });
    };
    let _ = plan.apply_with_subqueries(|node| {
        for expr in node.expressions() {
            visit(&expr);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}
