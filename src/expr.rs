//! Scalar SQL expressions compiled against a schema. (Interface placeholder; being implemented.)

use crate::value::{DataType, Value};

/// A compiled expression.
#[derive(Clone, Debug)]
pub struct Expr {
    ty: DataType,
}

impl Expr {
    /// The static type of the expression.
    pub fn ty(&self) -> &DataType {
        &self.ty
    }

    /// Evaluates the expression on a row of the schema it was compiled against.
    pub fn eval(&self, _row: &[Value]) -> Result<Value, String> {
        Err("unimplemented".into())
    }
}
