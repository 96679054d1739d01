//! The table properties a target's `TBLPROPERTIES` give its published Delta table.
//!
//! Delta's own properties (`delta.checkpointInterval`, `delta.logRetentionDuration`,
//! `delta.deletedFileRetentionDuration`, ... — every key delta-rs knows) and scdflow's
//! [`VACUUM_PROPERTY`] are set on the table, their values checked where scdflow reads them;
//! an unknown `delta.` key is an error, as in Spark. The change data feed and deletion vectors
//! are always on for a published target, so those two keys change nothing.

use super::upkeep::VACUUM_PROPERTY;

/// What a target's table property does.
#[derive(Debug, PartialEq, Eq)]
pub enum TargetProperty {
    /// It is set on the published table.
    Published,
    /// A published table always has it on: why the property changes nothing.
    AlwaysOn(&'static str),
    /// Not a table property of Delta's or scdflow's.
    Other,
}

/// What the target property `key = value` does, or why it is refused.
pub fn target_property(key: &str, value: &str) -> Result<TargetProperty, String> {
    match key {
        "delta.enableChangeDataFeed" => {
            return Ok(TargetProperty::AlwaysOn("the change data feed"))
        }
        "delta.enableDeletionVectors" => return Ok(TargetProperty::AlwaysOn("deletion vectors")),
        "delta.checkpointInterval" | VACUUM_PROPERTY => {
            return match value.trim().parse::<u64>() {
                Ok(n) if n > 0 => Ok(TargetProperty::Published),
                _ => Err(format!(
                    "{key} must be a positive whole number of versions, found `{value}`"
                )),
            };
        }
        _ => {}
    }
    if !key.starts_with("delta.") {
        return Ok(TargetProperty::Other);
    }
    if key.parse::<deltalake::TableProperty>().is_err() {
        return Err(format!("unknown Delta table property `{key}`"));
    }
    if key.ends_with("RetentionDuration") && !is_interval(value) {
        return Err(format!(
            "{key} must be an interval such as 'interval 7 days', found `{value}`"
        ));
    }
    Ok(TargetProperty::Published)
}

/// Whether `value` is Delta's `interval <n> <unit>`.
fn is_interval(value: &str) -> bool {
    let words: Vec<&str> = value.split_whitespace().collect();
    let units = [
        "nanosecond",
        "microsecond",
        "millisecond",
        "second",
        "minute",
        "hour",
        "day",
        "week",
    ];
    matches!(words.as_slice(), ["interval", n, unit]
        if n.parse::<u64>().is_ok() && units.contains(&unit.trim_end_matches('s')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_keys_are_published_checked_or_refused() {
        let published = Ok(TargetProperty::Published);
        assert_eq!(target_property("delta.checkpointInterval", "5"), published);
        assert_eq!(target_property(VACUUM_PROPERTY, "20"), published);
        assert_eq!(
            target_property("delta.deletedFileRetentionDuration", "interval 1 hours"),
            published
        );
        assert_eq!(
            target_property("delta.logRetentionDuration", "interval 30 days"),
            published
        );
        assert!(target_property("delta.checkpointInterval", "0").is_err());
        assert!(target_property("delta.logRetentionDuration", "30 days").is_err());
        assert!(target_property("delta.logRetentionDuration", "interval 3 fortnights").is_err());
        let unknown = target_property("delta.noSuchThing", "1").unwrap_err();
        assert!(
            unknown.contains("unknown Delta table property"),
            "{unknown}"
        );
        assert_eq!(
            target_property("delta.enableChangeDataFeed", "false"),
            Ok(TargetProperty::AlwaysOn("the change data feed"))
        );
        assert_eq!(
            target_property("pipelines.channel", "preview"),
            Ok(TargetProperty::Other)
        );
    }
}
