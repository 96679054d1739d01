//! Where a `read_files` path points: relative paths against the pipeline file's directory,
//! `/Volumes/<catalog>/<schema>/<volume>/...` inside the warehouse (its checks keep every
//! component one safe name), anything else as written.

use super::cursor::invalid;
use super::syntax::ReadFiles;
use crate::warehouse::Warehouse;
use crate::Result;
use std::path::{Path, PathBuf};

/// What `read_files` paths resolve against.
#[derive(Clone, Copy)]
pub(crate) struct Paths<'a> {
    /// The pipeline file's directory.
    pub(crate) base: &'a Path,
    /// The warehouse `/Volumes/...` paths are in, when the run has one.
    pub(crate) warehouse: Option<&'a Warehouse>,
}

impl Paths<'_> {
    /// The path `spec` reads.
    pub(crate) fn of(&self, spec: &ReadFiles) -> Result<PathBuf> {
        match self.warehouse.and_then(|w| w.volume_path(&spec.path)) {
            Some(Ok(path)) => Ok(path),
            Some(Err(why)) => Err(invalid(spec.line, format!("read_files: {why}"))),
            None if spec.path.starts_with("/Volumes/") => {
                let message = format!(
                    "read_files: `{}` is in a volume of a warehouse: give --warehouse DIR",
                    spec.path
                );
                Err(invalid(spec.line, message))
            }
            None => Ok(self.base.join(&spec.path)),
        }
    }
}
