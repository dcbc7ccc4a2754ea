//! `||` as a function that bounds what it builds (see `bounded.rs`).

use datafusion::{
    arrow::{
        compute::{cast, kernels::concat_elements::concat_elements_dyn},
        datatypes::DataType,
    },
    common::ScalarValue,
    error::{DataFusionError, Result},
    logical_expr::{ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility},
};

use super::bounded::{Sizes, ValueLimits, check_output};

/// `a || b` with the operator's meaning (NULL when either is NULL) and a
/// bound on what it builds.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct ConcatOperator {
    signature: Signature,
    limits: ValueLimits,
}

impl ConcatOperator {
    pub(super) fn new(limits: ValueLimits) -> Self {
        Self {
            // Volatile for the reason given in `bound_expr`.
            signature: Signature::user_defined(Volatility::Volatile),
            limits,
        }
    }
}

/// The string type both sides of `||` become: a view or large string when
/// either side is one, as the engine's own operator does.
fn concat_type(arg_types: &[DataType]) -> DataType {
    let plain = |t: &DataType| match t {
        DataType::Dictionary(_, value) => value.as_ref().clone(),
        other => other.clone(),
    };
    let types: Vec<DataType> = arg_types.iter().map(plain).collect();
    if types.contains(&DataType::Utf8View) {
        DataType::Utf8View
    } else if types.contains(&DataType::LargeUtf8) {
        DataType::LargeUtf8
    } else {
        DataType::Utf8
    }
}

impl ScalarUDFImpl for ConcatOperator {
    fn name(&self) -> &str {
        "||"
    }

    fn schema_name(&self, args: &[Expr]) -> Result<String> {
        // The name the operator gave the column, so that plans keep it.
        match args {
            [left, right] => Ok(format!("{} || {}", left.schema_name(), right.schema_name())),
            _ => Err(DataFusionError::Plan("|| takes two operands".to_owned())),
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if arg_types.len() != 2 {
            return Err(DataFusionError::Plan("|| takes two operands".to_owned()));
        }
        let target = concat_type(arg_types);
        Ok(vec![target.clone(), target])
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(concat_type(arg_types))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [left, right] = args.args.as_slice() else {
            return Err(DataFusionError::Plan("|| takes two operands".to_owned()));
        };
        let (l, r) = (Sizes::bytes(left), Sizes::bytes(right));
        check_output("||", &args, self.limits, |row| {
            l.at(row).saturating_add(r.at(row))
        })?;
        let scalar =
            matches!(left, ColumnarValue::Scalar(_)) && matches!(right, ColumnarValue::Scalar(_));
        let rows = if scalar { 1 } else { args.number_rows };
        let target = args.return_field.data_type().clone();
        let left = cast(&left.to_array(rows)?, &target)?;
        let right = cast(&right.to_array(rows)?, &target)?;
        let joined = concat_elements_dyn(left.as_ref(), right.as_ref())?;
        if scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
                &joined, 0,
            )?))
        } else {
            Ok(ColumnarValue::Array(joined))
        }
    }
}
