//! Bounds on the values a query builds.
//!
//! The engine's memory pool counts what operators hold (sorts, joins, groups),
//! not the values expressions build: `repeat(s, 10^12)` asks the allocator
//! for a terabyte and the process aborts. Every function whose output can be
//! much larger than its input (`repeat`, `lpad`, `rpad`, `concat`,
//! `concat_ws`, `||`, `replace`, `regexp_replace`, `overlay`, `encode`, and
//! the casts that build fixed-width values) is replaced in the plan, before
//! anything is evaluated (constant folding included), by a wrapper that works
//! out an upper bound of its output from the lengths of its arguments and
//! fails the query when one value or one call over a batch would pass the
//! limit. `to_char` is bounded by its format: each directive writes a few
//! dozen bytes at most. The other functions on the list (`allowlist.rs`)
//! build at most a small constant multiple of their input and cannot be
//! chained into growth (`upper`, `translate`, …).

use std::{any::Any, sync::Arc};

use datafusion::{
    arrow::{
        array::{Array, ArrayRef, AsArray as _},
        compute::{cast, kernels::length::length},
        datatypes::{DataType, FieldRef, Int64Type},
    },
    common::{
        ScalarValue,
        tree_node::{Transformed, TreeNode as _},
    },
    error::{DataFusionError, Result},
    logical_expr::{
        ColumnarValue, Documentation, Expr, LogicalPlan, Operator, ReturnFieldArgs,
        ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
        expr::ScalarFunction,
        simplify::{ExprSimplifyResult, SimplifyContext},
    },
};

/// Rows in a batch, the engine's default.
const BATCH_ROWS: u64 = 8192;

/// The most bytes a string function may build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct ValueLimits {
    /// For one value.
    pub per_value: u64,
    /// For one call over a batch of rows.
    pub per_call: u64,
}

/// How a function's output grows with its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// `repeat(s, n)`: `s × n`.
    Repeat,
    /// `lpad`/`rpad(s, n[, fill])`: `s + n × fill`.
    Pad,
    /// `concat(a, b, …)`: the sum.
    Concat,
    /// `concat_ws(sep, a, b, …)`: the sum and a separator between each.
    ConcatWs,
    /// `replace(s, from, to)`: every occurrence of `from` becomes `to`.
    Replace,
    /// `regexp_replace(s, pattern, replacement[, flags])`: every match (at
    /// most one per position) becomes the replacement, whose group
    /// references copy parts of the match.
    RegexpReplace,
    /// `overlay(s placing sub …)`: at most `s + sub`.
    Overlay,
    /// `encode(s, format)`: hex doubles, base64 adds a third.
    Encode,
    /// `arrow_cast`: a fixed-width target type costs its width per row, even
    /// for NULLs.
    Cast,
    /// `to_char(value, format)`: every two bytes of the format (a directive
    /// such as `%c` or `%+`) write at most [`FORMAT_EXPANSION`] bytes.
    Format,
}

/// Most bytes one byte of a `to_char` format writes: `%+` (two bytes)
/// writes a 32-byte timestamp with fraction and offset.
const FORMAT_EXPANSION: u64 = 16;

/// Bytes `to_char` writes beyond its format (a default rendering).
const FORMAT_BASE: u64 = 64;

impl Growth {
    fn of(name: &str) -> Option<Self> {
        Some(match name {
            "repeat" => Self::Repeat,
            "lpad" | "rpad" => Self::Pad,
            "concat" => Self::Concat,
            "concat_ws" => Self::ConcatWs,
            "replace" => Self::Replace,
            "regexp_replace" => Self::RegexpReplace,
            "overlay" => Self::Overlay,
            "encode" => Self::Encode,
            "arrow_cast" | "arrow_try_cast" => Self::Cast,
            "to_char" => Self::Format,
            _ => return None,
        })
    }
}

/// `plan` with every growing function and `||` replaced by a bounded one.
pub(super) fn bound_plan(plan: LogicalPlan, limits: ValueLimits) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        let rewritten =
            node.map_expressions(|expr| expr.transform_up(|e| bound_expr(e, limits)))?;
        if rewritten.transformed {
            // The node's schema was computed from the old expressions.
            rewritten.map_data(LogicalPlan::recompute_schema)
        } else {
            Ok(rewritten)
        }
    })
    .map(|rewritten| rewritten.data)
}

fn bound_expr(expr: Expr, limits: ValueLimits) -> Result<Transformed<Expr>> {
    match expr {
        Expr::ScalarFunction(function) => {
            let already = (function.func.inner().as_ref() as &dyn Any).is::<Bounded>()
                || (function.func.inner().as_ref() as &dyn Any)
                    .is::<super::concat::ConcatOperator>();
            match Growth::of(function.func.name()).filter(|_| !already) {
                Some(growth) => {
                    let mut signature = function.func.signature().clone();
                    if growth != Growth::Cast {
                        // Not folded into a constant when planning: the
                        // planner retries a failed fold at every enclosing
                        // level, each time evaluating everything below
                        // again, which the time limit cannot interrupt.
                        signature.volatility = Volatility::Volatile;
                    }
                    let bounded = Bounded {
                        inner: Arc::clone(&function.func),
                        growth,
                        limits,
                        signature,
                    };
                    Ok(Transformed::yes(Expr::ScalarFunction(
                        ScalarFunction::new_udf(
                            Arc::new(ScalarUDF::new_from_impl(bounded)),
                            function.args,
                        ),
                    )))
                }
                None => Ok(Transformed::no(Expr::ScalarFunction(function))),
            }
        }
        Expr::BinaryExpr(binary) if binary.op == Operator::StringConcat => {
            let operator = super::concat::ConcatOperator::new(limits);
            Ok(Transformed::yes(Expr::ScalarFunction(
                ScalarFunction::new_udf(
                    Arc::new(ScalarUDF::new_from_impl(operator)),
                    vec![*binary.left, *binary.right],
                ),
            )))
        }
        other => Ok(Transformed::no(other)),
    }
}

/// The byte sizes of an argument's values (`None` for NULL).
pub(super) enum Sizes {
    One(Option<u64>),
    Each(Vec<Option<u64>>),
}

impl Sizes {
    pub(super) fn at(&self, row: usize) -> u64 {
        // A NULL argument makes the result NULL, or (concat) is skipped.
        match self {
            Self::One(size) => size.unwrap_or(0),
            Self::Each(sizes) => sizes.get(row).copied().flatten().unwrap_or(0),
        }
    }

    /// Byte lengths of a string or binary argument.
    pub(super) fn bytes(value: &ColumnarValue) -> Self {
        match value {
            ColumnarValue::Scalar(scalar) => Self::One(scalar_bytes(scalar)),
            ColumnarValue::Array(array) => Self::Each(array_bytes(array)),
        }
    }

    /// Values of a count argument, negative ones as 0.
    fn counts(value: &ColumnarValue) -> Self {
        match value {
            ColumnarValue::Scalar(scalar) => Self::One(
                scalar
                    .cast_to(&DataType::Int64)
                    .ok()
                    .and_then(|v| match v {
                        ScalarValue::Int64(n) => n,
                        _ => None,
                    })
                    .map(|n| u64::try_from(n).unwrap_or(0)),
            ),
            ColumnarValue::Array(array) => Self::Each(match cast(array, &DataType::Int64) {
                Ok(counts) => counts
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|n| n.map(|n| u64::try_from(n).unwrap_or(0)))
                    .collect(),
                // Not a number: the function itself will refuse it.
                Err(_) => vec![Some(0); array.len()],
            }),
        }
    }
}

fn scalar_bytes(scalar: &ScalarValue) -> Option<u64> {
    if scalar.is_null() {
        return None;
    }
    let len = match scalar {
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => s.len(),
        ScalarValue::Binary(Some(b))
        | ScalarValue::LargeBinary(Some(b))
        | ScalarValue::BinaryView(Some(b))
        | ScalarValue::FixedSizeBinary(_, Some(b)) => b.len(),
        other => other.to_string().len(),
    };
    Some(len as u64)
}

fn array_bytes(array: &ArrayRef) -> Vec<Option<u64>> {
    match length(array.as_ref()).and_then(|lengths| cast(&lengths, &DataType::Int64)) {
        Ok(lengths) => lengths
            .as_primitive::<Int64Type>()
            .iter()
            .map(|n| n.map(|n| u64::try_from(n).unwrap_or(0)))
            .collect(),
        // Not a string: what the whole array takes bounds each of its values.
        Err(_) => vec![Some(array.get_array_memory_size() as u64); array.len()],
    }
}

/// The bytes one value of `data_type` takes however empty it is: the
/// fixed-width parts, which even a NULL allocates.
fn fixed_width(data_type: &DataType) -> u64 {
    match data_type {
        DataType::FixedSizeBinary(n) => u64::try_from(*n).unwrap_or(0),
        DataType::FixedSizeList(field, n) => u64::try_from(*n)
            .unwrap_or(0)
            .saturating_mul(fixed_width(field.data_type()).max(1)),
        DataType::Struct(fields) => fields
            .iter()
            .map(|f| fixed_width(f.data_type()))
            .fold(0, u64::saturating_add),
        DataType::Dictionary(_, value) => fixed_width(value),
        other => other.primitive_width().unwrap_or(0) as u64,
    }
}

/// Checks `bound(row)` for every row the call outputs against `limits`.
pub(super) fn check_output(
    name: &str,
    args: &ScalarFunctionArgs,
    limits: ValueLimits,
    bound: impl Fn(usize) -> u64,
) -> Result<()> {
    // With only scalar arguments, a function makes a single value.
    let rows = if args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)))
    {
        1
    } else {
        args.number_rows
    };
    let mut total = 0u64;
    for row in 0..rows {
        let size = bound(row);
        if size > limits.per_value {
            return Err(DataFusionError::ResourcesExhausted(format!(
                "{name} would build a value of up to {size} bytes; the limit is {} bytes per value",
                limits.per_value
            )));
        }
        total = total.saturating_add(size);
        if total > limits.per_call {
            return Err(DataFusionError::ResourcesExhausted(format!(
                "{name} would build more than {} bytes over {rows} rows; filter or aggregate first",
                limits.per_call
            )));
        }
    }
    Ok(())
}

/// A growing function that checks the size of its output before it builds it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Bounded {
    inner: Arc<ScalarUDF>,
    growth: Growth,
    limits: ValueLimits,
    signature: Signature,
}

impl Bounded {
    fn check(&self, args: &ScalarFunctionArgs) -> Result<()> {
        let arg = |i: usize| args.args.get(i);
        let bytes = |i: usize| arg(i).map_or(Sizes::One(None), Sizes::bytes);
        let name = self.inner.name();
        let limits = self.limits;
        match self.growth {
            Growth::Repeat => {
                let (s, n) = (bytes(0), arg(1).map_or(Sizes::One(None), Sizes::counts));
                check_output(name, args, limits, |r| s.at(r).saturating_mul(n.at(r)))
            }
            Growth::Pad => {
                let (s, n) = (bytes(0), arg(1).map_or(Sizes::One(None), Sizes::counts));
                // The default fill is one space.
                let fill = arg(2).map_or(Sizes::One(Some(1)), Sizes::bytes);
                check_output(name, args, limits, |r| {
                    s.at(r)
                        .saturating_add(n.at(r).saturating_mul(fill.at(r).max(1)))
                })
            }
            Growth::Concat | Growth::Overlay => {
                let all: Vec<Sizes> = args.args.iter().map(Sizes::bytes).collect();
                check_output(name, args, limits, |r| {
                    all.iter().map(|s| s.at(r)).fold(0, u64::saturating_add)
                })
            }
            Growth::ConcatWs => {
                let separator = bytes(0);
                let parts: Vec<Sizes> = args.args.iter().skip(1).map(Sizes::bytes).collect();
                let gaps = parts.len().saturating_sub(1) as u64;
                check_output(name, args, limits, |r| {
                    parts
                        .iter()
                        .map(|s| s.at(r))
                        .fold(separator.at(r).saturating_mul(gaps), u64::saturating_add)
                })
            }
            Growth::Replace => {
                let (s, from, to) = (bytes(0), bytes(1), bytes(2));
                check_output(name, args, limits, |r| {
                    // An empty `from` matches at every position.
                    let matches = (s.at(r) / from.at(r).max(1)).saturating_add(1);
                    s.at(r).saturating_add(matches.saturating_mul(to.at(r)))
                })
            }
            Growth::RegexpReplace => {
                let (s, replacement) = (bytes(0), bytes(2));
                check_output(name, args, limits, |r| {
                    // Matches don't overlap, so each group reference (two
                    // bytes at least) copies at most `s` bytes in all.
                    let (s, rep) = (s.at(r), replacement.at(r));
                    s.saturating_add(s.saturating_add(1).saturating_mul(rep))
                        .saturating_add((rep / 2).saturating_mul(s))
                })
            }
            Growth::Encode | Growth::Cast | Growth::Format => self.check_encoding(args),
        }
    }

    /// The functions whose output follows from one argument or the type.
    fn check_encoding(&self, args: &ScalarFunctionArgs) -> Result<()> {
        let bytes = |i: usize| args.args.get(i).map_or(Sizes::One(None), Sizes::bytes);
        let (name, limits) = (self.inner.name(), self.limits);
        match self.growth {
            Growth::Encode => {
                let s = bytes(0);
                check_output(name, args, limits, |r| {
                    s.at(r).saturating_mul(2).saturating_add(4)
                })
            }
            Growth::Format => {
                let format = bytes(1);
                check_output(name, args, limits, |r| {
                    format
                        .at(r)
                        .saturating_mul(FORMAT_EXPANSION)
                        .saturating_add(FORMAT_BASE)
                })
            }
            _ => {
                let width = fixed_width(args.return_field.data_type());
                check_output(name, args, limits, |_| width)
            }
        }
    }
}

impl ScalarUDFImpl for Bounded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let field = self.inner.return_field_from_args(args)?;
        if self.growth == Growth::Cast {
            // Casts become the engine's own cast when simplified, so the
            // width is checked here, when the plan is made: a full batch of
            // NULLs of the type must fit one call's bytes.
            let width = fixed_width(field.data_type());
            if width.saturating_mul(BATCH_ROWS) > self.limits.per_call {
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "{} to {} takes {width} bytes per row even for NULL; the limit is {} bytes per row",
                    self.inner.name(),
                    field.data_type(),
                    self.limits.per_call / BATCH_ROWS
                )));
            }
        }
        Ok(field)
    }

    fn simplify(&self, args: Vec<Expr>, info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        // Only a cast is simplified, into the engine's cast, whose type was
        // checked above; the others would become unbounded functions again.
        if self.growth == Growth::Cast {
            self.inner.simplify(args, info)
        } else {
            Ok(ExprSimplifyResult::Original(args))
        }
    }

    fn is_nullable(&self, args: &[Expr], schema: &dyn datafusion::common::ExprSchema) -> bool {
        #[allow(deprecated)]
        self.inner.is_nullable(args, schema)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn short_circuits(&self) -> bool {
        self.inner.short_circuits()
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.check(&args)?;
        self.inner.invoke_with_args(args)
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::datatypes::Field;

    use super::*;

    #[test]
    fn fixed_widths_count_nested_lists() {
        let list = DataType::FixedSizeList(Arc::new(Field::new("x", DataType::Int64, true)), 1000);
        assert_eq!(fixed_width(&list), 8000);
        assert_eq!(fixed_width(&DataType::FixedSizeBinary(7)), 7);
        assert_eq!(fixed_width(&DataType::Utf8), 0);
    }
}
