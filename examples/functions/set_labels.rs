//! `krmsync-fn-set-labels`: an example KRM function (a transformer).
//!
//! Its functionConfig (`apiVersion: fn.krmsync.dev/v1alpha1`, `kind:
//! SetLabels`) lists `labels:`; every item gets them in `metadata.labels`.
//! It reports, in `results`:
//! * `error` when a label value is empty (and exits 1: nothing changes);
//! * `warning` for each existing label it overwrites with another value;
//! * `info` with the number of items labelled.
//!
//! The wire format is the KRM functions specification's `ResourceList`
//! (YAML in; JSON, which is YAML, out). It needs nothing but stdin and
//! stdout, so it runs unchanged in krmsync's sandbox.

use std::io::Read;

use serde_json::{Map, Value, json};

fn main() {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("reading stdin: {e}");
        std::process::exit(1);
    }
    let mut rl: Value = match serde_saphyr::from_str(&input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("stdin is not a ResourceList: {e}");
            std::process::exit(1);
        }
    };
    let labels: Map<String, Value> = rl
        .pointer("/functionConfig/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut results = Vec::new();
    for (k, v) in &labels {
        if v.as_str().is_none_or(str::is_empty) {
            results.push(json!({
                "message": format!("label '{k}' has no value"),
                "severity": "error",
                "field": {"path": format!("labels.{k}")},
            }));
        }
    }
    if !results.is_empty() {
        rl["results"] = Value::Array(results);
        println!("{rl}");
        std::process::exit(1);
    }
    let mut count = 0;
    if let Some(items) = rl.get_mut("items").and_then(Value::as_array_mut) {
        for item in items.iter_mut() {
            let reference = json!({
                "apiVersion": item.get("apiVersion").cloned().unwrap_or(Value::Null),
                "kind": item.get("kind").cloned().unwrap_or(Value::Null),
                "name": item.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
            });
            let Some(meta) = item.get_mut("metadata").and_then(Value::as_object_mut) else {
                continue;
            };
            let existing = meta
                .entry("labels")
                .or_insert_with(|| Value::Object(Map::new()));
            if !existing.is_object() {
                *existing = Value::Object(Map::new());
            }
            let Some(existing) = existing.as_object_mut() else {
                continue;
            };
            for (k, v) in &labels {
                if let Some(old) = existing.get(k)
                    && old != v
                {
                    results.push(json!({
                        "message": format!("label '{k}' was {old}, now {v}"),
                        "severity": "warning",
                        "resourceRef": reference,
                        "field": {"path": format!("metadata.labels.{k}")},
                    }));
                }
                existing.insert(k.clone(), v.clone());
            }
            count += 1;
        }
    }
    results.push(json!({
        "message": format!("labelled {count} resources"),
        "severity": "info",
    }));
    rl["results"] = Value::Array(results);
    println!("{rl}");
}
