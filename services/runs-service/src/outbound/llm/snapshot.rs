//! The reviewed snapshots of what the adapters send, in `snapshots/`.

use serde_json::Value;

/// Set to write the snapshots anew from what the adapters send (then review
/// the files' diff before committing them).
pub(super) const UPDATE_SNAPSHOTS: &str = "SWITCHBOARD_UPDATE_SNAPSHOTS";

/// Compares `body`, pretty-printed with its keys sorted, with the reviewed
/// file at `path`; with [`UPDATE_SNAPSHOTS`] set, writes the file instead.
pub(super) fn assert_matches_snapshot(path: &std::path::Path, body: &Value) {
    let sent = format!("{:#}\n", sorted(body));
    if std::env::var_os(UPDATE_SNAPSHOTS).is_some() {
        std::fs::write(path, &sent).expect("the snapshot is written");
        return;
    }
    let reviewed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        reviewed == sent,
        "the request body is not the reviewed one in {}\n--- reviewed\n{reviewed}\n--- sent\n{sent}\n\
         if the change is meant, run the test again with {UPDATE_SNAPSHOTS}=1 and commit the file",
        path.display()
    );
}

/// `value` with every object's keys in order, whatever order a map keeps
/// (serde_json's `preserve_order` keeps insertion order), so that a snapshot
/// is the same in every build.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(key, value)| (key.clone(), sorted(value)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
