//! `krmsync-fn-hello-generator`: an example KRM function (a generator).
//!
//! Its functionConfig (`apiVersion: fn.krmsync.dev/v1alpha1`, `kind:
//! HelloGenerator`, `metadata.name`, `greeting:`) becomes a ConfigMap of
//! the same name with `data.greeting`, whose name kustomize suffixes with a
//! content hash (`kustomize.config.k8s.io/needs-hash`), as for a
//! configMapGenerator. A missing greeting is an `error` result.

use std::io::Read;

use serde_json::{Value, json};

fn main() {
    let mut input = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut input) {
        eprintln!("reading stdin: {e}");
        std::process::exit(1);
    }
    let rl: Value = match serde_saphyr::from_str(&input) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("stdin is not a ResourceList: {e}");
            std::process::exit(1);
        }
    };
    let name = rl
        .pointer("/functionConfig/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("hello");
    let Some(greeting) = rl
        .pointer("/functionConfig/greeting")
        .and_then(Value::as_str)
        .filter(|g| !g.is_empty())
    else {
        let out = json!({
            "apiVersion": "config.kubernetes.io/v1",
            "kind": "ResourceList",
            "items": [],
            "results": [{"message": "greeting: required", "severity": "error", "field": {"path": "greeting"}}],
        });
        println!("{out}");
        std::process::exit(1);
    };
    let out = json!({
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": [{
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": name,
                "annotations": {"kustomize.config.k8s.io/needs-hash": "true"},
            },
            "data": {"greeting": greeting},
        }],
    });
    println!("{out}");
}
