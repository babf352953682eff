//! ConfigMaps and Secrets being created in the owner's own namespace are
//! not dry-run.
//!
//! Creating one has no effect besides its own existence (nothing runs,
//! nothing is scheduled or intercepted), and the API server's validation
//! of it depends only on its content, which [`validate`] checks here the
//! way the API server does: the name, the labels and annotations, the
//! keys, the sizes, the known fields. The applier creates them first in
//! their phase, so that a refusal the check cannot foresee (an admission
//! webhook, a quota) stops the reconcile before anything else is written:
//! what is left are new, unused objects, and the running revision is
//! untouched. Updates of existing objects are always dry-run.
//!
//! This halves the requests of a first apply, where ConfigMaps and Secrets
//! are most of the objects.

use serde_json::{Map, Value};

use super::ObjectRef;

/// Most bytes of a ConfigMap's or Secret's data (the API server's limit).
const MAX_DATA_BYTES: usize = 1024 * 1024;
/// Most bytes of all annotations of an object, keys included.
const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// Whether a new object of this kind is created without a dry-run.
pub fn is_inert(o: &ObjectRef) -> bool {
    o.group.is_empty() && o.version == "v1" && matches!(o.kind.as_str(), "ConfigMap" | "Secret")
}

/// Checks a ConfigMap or Secret as the API server validates its creation;
/// the error names the field.
pub fn validate(obj: &Value) -> Result<(), String> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let secret = kind == "Secret";
    let allowed: &[&str] = if secret {
        &[
            "apiVersion",
            "kind",
            "metadata",
            "data",
            "stringData",
            "type",
            "immutable",
        ]
    } else {
        &[
            "apiVersion",
            "kind",
            "metadata",
            "data",
            "binaryData",
            "immutable",
        ]
    };
    let top = obj.as_object().ok_or("not an object")?;
    for key in top.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(format!("{key}: field not declared in schema"));
        }
    }
    metadata(&obj["metadata"])?;
    if let Some(v) = top.get("immutable")
        && !v.is_boolean()
        && !v.is_null()
    {
        return Err("immutable: must be a boolean".into());
    }
    if secret {
        secret_data(top)
    } else {
        configmap_data(top)
    }
}

fn configmap_data(top: &Map<String, Value>) -> Result<(), String> {
    let data = string_map(top, "data")?;
    let binary = string_map(top, "binaryData")?;
    let mut size = 0;
    for (k, v) in &data {
        key(k).map_err(|e| format!("data[{k}]: {e}"))?;
        size += v.len();
    }
    for (k, v) in &binary {
        key(k).map_err(|e| format!("binaryData[{k}]: {e}"))?;
        if data.iter().any(|(d, _)| d == k) {
            return Err(format!(
                "binaryData[{k}]: duplicate of key {k} in data (keys must be unique across data and binaryData)"
            ));
        }
        size += base64_len(v).ok_or_else(|| format!("binaryData[{k}]: not valid base64"))?;
    }
    check_size(size)
}

fn secret_data(top: &Map<String, Value>) -> Result<(), String> {
    let data = string_map(top, "data")?;
    let string_data = string_map(top, "stringData")?;
    let mut size = 0;
    let mut keys: Vec<&str> = Vec::new();
    for (k, v) in &data {
        key(k).map_err(|e| format!("data[{k}]: {e}"))?;
        size += base64_len(v).ok_or_else(|| format!("data[{k}]: not valid base64"))?;
        keys.push(k);
    }
    for (k, v) in &string_data {
        key(k).map_err(|e| format!("stringData[{k}]: {e}"))?;
        // stringData replaces the data key of the same name
        if let Some((_, old)) = data.iter().find(|(d, _)| d == k) {
            size -= base64_len(old).unwrap_or(0);
        } else {
            keys.push(k);
        }
        size += v.len();
    }
    check_size(size)?;
    let ty = match top.get("type") {
        None | Some(Value::Null) => "Opaque",
        Some(Value::String(t)) => t.as_str(),
        Some(_) => return Err("type: must be a string".into()),
    };
    // the types whose content the API server checks
    let required: &[&str] = match ty {
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
        "kubernetes.io/service-account-token" => {
            // needs an existing ServiceAccount: left to the dry-run path
            return Err(
                "type kubernetes.io/service-account-token: checked by the API server".into(),
            );
        }
        _ => &[],
    };
    for r in required {
        if !keys.contains(r) {
            return Err(format!("data[{r}]: required for type {ty}"));
        }
    }
    if ty == "kubernetes.io/basic-auth"
        && !keys.contains(&"username")
        && !keys.contains(&"password")
    {
        return Err(format!("data: type {ty} needs username or password"));
    }
    Ok(())
}

fn check_size(size: usize) -> Result<(), String> {
    if size > MAX_DATA_BYTES {
        return Err(format!(
            "data: {size} bytes, more than the API server's limit of {MAX_DATA_BYTES}"
        ));
    }
    Ok(())
}

/// The entries of `top[field]`, a map of strings (absent or null: none).
fn string_map<'a>(
    top: &'a Map<String, Value>,
    field: &str,
) -> Result<Vec<(&'a str, &'a str)>, String> {
    match top.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.as_str(), s.as_str())),
                _ => Err(format!("{field}[{k}]: must be a string")),
            })
            .collect(),
        Some(_) => Err(format!("{field}: must be a map of strings")),
    }
}

/// The decoded length of standard base64 text, if it is valid.
fn base64_len(s: &str) -> Option<usize> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .ok()
        .map(|d| d.len())
}

/// A ConfigMap or Secret key: at most 253 of `[-._a-zA-Z0-9]`, not `.`,
/// `..` nor starting with `..`.
fn key(k: &str) -> Result<(), String> {
    if k.is_empty() || k.len() > 253 {
        return Err("a key must have 1 to 253 characters".into());
    }
    if !k
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    {
        return Err("a key must consist of alphanumeric characters, '-', '_' or '.'".into());
    }
    if k == "." || k.starts_with("..") {
        return Err("a key must not be '.' or '..', nor start with '..'".into());
    }
    Ok(())
}

const METADATA_FIELDS: &[&str] = &[
    "name",
    "namespace",
    "labels",
    "annotations",
    "finalizers",
    "ownerReferences",
    "generateName",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

fn metadata(meta: &Value) -> Result<(), String> {
    let m = meta.as_object().ok_or("metadata: must be an object")?;
    for k in m.keys() {
        if !METADATA_FIELDS.contains(&k.as_str()) {
            return Err(format!("metadata.{k}: field not declared in schema"));
        }
    }
    let name = m.get("name").and_then(Value::as_str).unwrap_or_default();
    dns_subdomain(name).map_err(|e| format!("metadata.name: {e}"))?;
    if let Some(labels) = m.get("labels").filter(|v| !v.is_null()) {
        let labels = labels.as_object().ok_or("metadata.labels: must be a map")?;
        for (k, v) in labels {
            qualified_name(k).map_err(|e| format!("metadata.labels[{k}]: {e}"))?;
            let v = v
                .as_str()
                .ok_or_else(|| format!("metadata.labels[{k}]: must be a string"))?;
            label_value(v).map_err(|e| format!("metadata.labels[{k}]: {e}"))?;
        }
    }
    if let Some(ann) = m.get("annotations").filter(|v| !v.is_null()) {
        let ann = ann
            .as_object()
            .ok_or("metadata.annotations: must be a map")?;
        let mut size = 0;
        for (k, v) in ann {
            qualified_name(&k.to_ascii_lowercase())
                .map_err(|e| format!("metadata.annotations[{k}]: {e}"))?;
            let v = v
                .as_str()
                .ok_or_else(|| format!("metadata.annotations[{k}]: must be a string"))?;
            size += k.len() + v.len();
        }
        if size > MAX_ANNOTATIONS_BYTES {
            return Err(format!(
                "metadata.annotations: {size} bytes, more than the limit of {MAX_ANNOTATIONS_BYTES}"
            ));
        }
    }
    // the rest is rare in rendered ConfigMaps and Secrets: the dry-run path
    for k in ["finalizers", "ownerReferences", "generateName"] {
        if m.get(k).is_some_and(|v| !v.is_null()) {
            return Err(format!("metadata.{k}: checked by the API server"));
        }
    }
    Ok(())
}

/// RFC 1123 subdomain: at most 253 characters, lowercase alphanumeric
/// labels separated by '.', '-' inside a label.
fn dns_subdomain(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > 253 {
        return Err(format!("{s:?}: must have 1 to 253 characters"));
    }
    let ok = s.split('.').all(|label| {
        !label.is_empty()
            && label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    });
    if !ok {
        return Err(format!(
            "{s:?}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

/// `[prefix/]name`: prefix a DNS subdomain, name at most 63 of
/// `[-._a-zA-Z0-9]` starting and ending alphanumeric.
fn qualified_name(s: &str) -> Result<(), String> {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix {
        dns_subdomain(p).map_err(|e| format!("prefix {e}"))?;
    }
    if name.is_empty() || name.len() > 63 || !name_chars(name) {
        return Err(format!(
            "name part {name:?} must have 1 to 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric character"
        ));
    }
    Ok(())
}

fn name_chars(s: &str) -> bool {
    let b = s.as_bytes();
    b.iter()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.last().is_some_and(u8::is_ascii_alphanumeric)
}

/// A label value: empty, or at most 63 characters like a name.
fn label_value(v: &str) -> Result<(), String> {
    if v.is_empty() {
        return Ok(());
    }
    if v.len() > 63 || !name_chars(v) {
        return Err(format!(
            "value {v:?} must have at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric character"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm(extra: Value) -> Value {
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-config", "labels": {"app.kubernetes.io/name": "web", "empty": ""}, "annotations": {"Example.COM/Note": "anything at all"}}});
        for (k, v) in extra.as_object().unwrap() {
            o[k] = v.clone();
        }
        o
    }

    #[test]
    fn valid_configmaps_and_secrets_pass() {
        validate(&cm(json!({"data": {"a.properties": "x", "B_2-c": "y"}, "binaryData": {"bin": "AAEC"}, "immutable": true}))).unwrap();
        validate(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "eA==", "tls.key": "eA=="}})).unwrap();
        validate(&json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": "p"}})).unwrap();
    }

    #[test]
    fn what_the_api_server_refuses_is_refused_naming_the_field() {
        let cases = [
            (cm(json!({"data": {"bad key": "x"}})), "data[bad key]"),
            (cm(json!({"data": {"..x": "x"}})), "data[..x]"),
            (cm(json!({"data": {"k": 1}})), "data[k]: must be a string"),
            (
                cm(json!({"data": {"k": "x"}, "binaryData": {"k": "eA=="}})),
                "binaryData[k]: duplicate",
            ),
            (
                cm(json!({"binaryData": {"k": "not base64!"}})),
                "binaryData[k]: not valid base64",
            ),
            (cm(json!({"spec": {}})), "spec: field not declared"),
            (
                cm(json!({"data": {"big": "x".repeat(MAX_DATA_BYTES + 1)}})),
                "data: 1048577 bytes",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Upper"}}),
                "metadata.name",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"k": "has space"}}}),
                "metadata.labels[k]",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": {"bad/prefix/x": "v"}}}),
                "metadata.labels[bad/prefix/x]",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "nme": "typo"}}),
                "metadata.nme",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "%%%"}}),
                "data[k]: not valid base64",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "eA=="}}),
                "data[tls.key]: required",
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/service-account-token"}),
                "checked by the API server",
            ),
        ];
        for (obj, want) in cases {
            let err = validate(&obj).expect_err(&obj.to_string());
            assert!(err.contains(want), "{err:?} should contain {want:?}");
        }
    }

    #[test]
    fn only_new_core_configmaps_and_secrets_are_inert() {
        let r = |g: &str, v: &str, k: &str| ObjectRef {
            group: g.into(),
            version: v.into(),
            kind: k.into(),
            namespace: Some("ns".into()),
            name: "x".into(),
        };
        assert!(is_inert(&r("", "v1", "ConfigMap")));
        assert!(is_inert(&r("", "v1", "Secret")));
        assert!(!is_inert(&r("", "v1", "Service")));
        assert!(!is_inert(&r("example.com", "v1", "ConfigMap")));
    }
}
