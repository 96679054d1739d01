//! Reading sources and writing targets. (Interface placeholder; being implemented.)

use crate::plan::Format;
use crate::value::Schema;
use crate::Result;
use std::path::Path;

/// Infers the schema of `path` (a file or a directory) from its first rows (D17).
pub fn infer_schema(_path: &Path, _format: Format, _header: bool) -> Result<Schema> {
    Err(crate::Error::new(crate::ErrorKind::Internal, "unimplemented"))
}
