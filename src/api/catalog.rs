//! The `Catalog` resource (KEP-2906): a cluster admin's approval of a set of
//! KRM functions, pinned by digest. It is cluster-scoped, so creating one
//! takes cluster-admin rights: its existence is the approval.

// The `#[kube(printcolumn(...))]` entries repeat `type_ = "string"` by design.
#![allow(clippy::duplicated_attributes)]

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A catalog of approved KRM functions (KEP-2906), plus the namespaces
/// whose Kustomizations may use it.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "krmsync.dev",
    version = "v1alpha1",
    kind = "Catalog",
    plural = "catalogs",
    status = "CatalogStatus",
    category = "krmsync",
    derive = "PartialEq",
    doc = "A cluster-scoped catalog of approved KRM functions (KEP-2906); its existence is the approval.",
    printcolumn(
        name = "Functions",
        type_ = "integer",
        json_path = ".status.functionCount"
    ),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CatalogSpec {
    /// The functions, searched in order (the first match wins).
    #[serde(default)]
    pub krm_functions: Vec<KrmFunctionDefinitionSpec>,
    /// Which namespaces' Kustomizations may use this catalog (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_namespaces: Option<AllowedNamespaces>,
}

/// Namespaces allowed to use a catalog: listed by name, or selected by
/// their labels (either matches).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllowedNamespaces {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// Metadata of one KRM function (KEP-2906 `KRMFunctionDefinitionSpec`).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KrmFunctionDefinitionSpec {
    /// Group of the functionConfig.
    pub group: String,
    pub names: KrmFunctionNames,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The organisation that produced and owns the function.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub publisher: String,
    pub versions: Vec<KrmFunctionVersion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct KrmFunctionNames {
    /// Kind of the functionConfig.
    pub kind: String,
}

/// One version of a function.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KrmFunctionVersion {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<KrmFunctionSchema>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    pub runtime: FunctionRuntime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maintainers: Vec<String>,
}

/// The functionConfig schema of a version.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KrmFunctionSchema {
    #[serde(rename = "openAPIV3Schema")]
    #[schemars(schema_with = "preserve_unknown")]
    pub open_api_v3_schema: serde_json::Value,
}

fn preserve_unknown(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true
    })
}

/// How a function runs: a container image or per-platform executables.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FunctionRuntime {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerRuntime>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecRuntime>,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRuntime {
    pub image: String,
    /// Digest of the image (required when the image is not pinned by digest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default)]
    pub require_network: bool,
    #[serde(default)]
    pub require_storage_mount: bool,
}

#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecRuntime {
    pub platforms: Vec<ExecPlatform>,
    /// krmsync extension: the function needs the network. It gets it only
    /// when the operator allows it too (`krmsync build --network`,
    /// `krmsync controller --function-network`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub require_network: bool,
    /// krmsync extension: the function's environment, `KEY=VALUE` (`KEY`
    /// alone passes krmsync's own variable through on the CLI; refused
    /// in-cluster). Nothing else of the environment is visible to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub envs: Vec<String>,
}

/// One executable of an exec runtime. `sha256` is required (KEP-2906); a
/// catalog without it is accepted by the API server but reported not Ready.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ExecPlatform {
    pub bin: String,
    pub os: String,
    pub arch: String,
    pub uri: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

/// What the controller found in the catalog.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`: `False` with reason `ValidationFailed` lists every error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Number of functions (versions counted once per function).
    #[serde(default)]
    pub function_count: i64,
}

fn is_sha256(s: &str) -> bool {
    let hex = s.strip_prefix("sha256:").unwrap_or(s);
    hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit())
}

impl CatalogSpec {
    /// Every validation error, each naming its field; empty when valid.
    pub fn validate(&self) -> Vec<String> {
        let mut errs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, f) in self.krm_functions.iter().enumerate() {
            let at = format!("spec.krmFunctions[{i}]");
            if f.group.is_empty() {
                errs.push(format!("{at}.group: must not be empty"));
            }
            if f.names.kind.is_empty() {
                errs.push(format!("{at}.names.kind: must not be empty"));
            }
            if f.versions.is_empty() {
                errs.push(format!("{at}.versions: at least one version is required"));
            }
            for (j, v) in f.versions.iter().enumerate() {
                let at = format!("{at}.versions[{j}]");
                if v.name.is_empty() {
                    errs.push(format!("{at}.name: must not be empty"));
                }
                if !seen.insert((f.group.clone(), v.name.clone(), f.names.kind.clone())) {
                    errs.push(format!(
                        "{at}: {}/{} {} is defined twice (the first definition would always win)",
                        f.group, v.name, f.names.kind
                    ));
                }
                let rt = &v.runtime;
                if rt.container.is_none() && rt.exec.is_none() {
                    errs.push(format!(
                        "{at}.runtime: at least one of container or exec must be set"
                    ));
                }
                if let Some(c) = &rt.container {
                    if c.image.is_empty() {
                        errs.push(format!("{at}.runtime.container.image: must not be empty"));
                    }
                    if let Some(d) = &c.sha256
                        && !is_sha256(d)
                    {
                        errs.push(format!(
                            "{at}.runtime.container.sha256: '{d}' is not a sha256 digest"
                        ));
                    }
                }
                if let Some(e) = &rt.exec {
                    if e.platforms.is_empty() {
                        errs.push(format!(
                            "{at}.runtime.exec.platforms: at least one platform is required"
                        ));
                    }
                    for (k, p) in e.platforms.iter().enumerate() {
                        let at = format!("{at}.runtime.exec.platforms[{k}]");
                        match &p.sha256 {
                            None => errs.push(format!(
                                "{at}.sha256: required for an exec runtime (KEP-2906: exec \
                                 functions must be pinned by sha256)"
                            )),
                            Some(d) if !is_sha256(d) => {
                                errs.push(format!("{at}.sha256: '{d}' is not a sha256 digest"))
                            }
                            _ => {}
                        }
                        if !matches!(p.os.as_str(), "linux" | "darwin" | "windows") {
                            errs.push(format!(
                                "{at}.os: '{}' must be one of linux, darwin, windows",
                                p.os
                            ));
                        }
                        if !matches!(p.arch.as_str(), "amd64" | "arm64") {
                            errs.push(format!(
                                "{at}.arch: '{}' must be one of amd64, arm64",
                                p.arch
                            ));
                        }
                        if p.bin.is_empty() {
                            errs.push(format!("{at}.bin: must not be empty"));
                        }
                        if p.uri.is_empty() {
                            errs.push(format!("{at}.uri: must not be empty"));
                        }
                    }
                }
            }
        }
        errs
    }

    /// Whether a namespace (with its labels) may use this catalog.
    pub fn allows_namespace(&self, namespace: &str, labels: &BTreeMap<String, String>) -> bool {
        let Some(a) = &self.allowed_namespaces else {
            return false;
        };
        a.names.iter().any(|n| n == namespace)
            || a.selector
                .as_ref()
                .is_some_and(|s| selector_matches(s, labels))
    }
}

/// Label selector semantics of the Kubernetes API (`matchLabels` and
/// `matchExpressions` with In, NotIn, Exists, DoesNotExist). An empty
/// selector matches everything; an unknown operator matches nothing.
pub fn selector_matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if let Some(ml) = &sel.match_labels
        && ml.iter().any(|(k, v)| labels.get(k) != Some(v))
    {
        return false;
    }
    for e in sel.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default();
        let v = labels.get(&e.key);
        let ok = match e.operator.as_str() {
            "In" => v.is_some_and(|v| values.contains(v)),
            "NotIn" => v.is_none_or(|v| !values.contains(v)),
            "Exists" => v.is_some(),
            "DoesNotExist" => v.is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn spec(yaml: &str) -> CatalogSpec {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn exec_runtime_without_sha256_is_invalid() {
        let s = spec(
            "krmFunctions:\n- group: example.com\n  names: {kind: SetNs}\n  versions:\n  - name: v1\n    runtime:\n      exec:\n        platforms:\n        - {bin: f, os: linux, arch: amd64, uri: 'https://x/f.tgz'}\n",
        );
        let errs = s.validate();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0]
                .starts_with("spec.krmFunctions[0].versions[0].runtime.exec.platforms[0].sha256")
        );
    }

    #[test]
    fn valid_catalog_and_errors_name_fields() {
        let ok = spec(&format!(
            "krmFunctions:\n- group: example.com\n  names: {{kind: A}}\n  versions:\n  - name: v1\n    runtime: {{container: {{image: 'img:v1', sha256: '{}'}}}}\n",
            "a".repeat(64)
        ));
        assert!(ok.validate().is_empty());
        let bad = spec(
            "krmFunctions:\n- group: ''\n  names: {kind: A}\n  versions:\n  - name: v1\n    runtime: {}\n  - name: v1\n    runtime: {container: {image: i, sha256: nope}}\n",
        );
        let errs = bad.validate();
        assert!(
            errs.iter()
                .any(|e| e.starts_with("spec.krmFunctions[0].group"))
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("versions[0].runtime: at least one"))
        );
        assert!(errs.iter().any(|e| e.contains("defined twice")));
        assert!(errs.iter().any(|e| e.contains("container.sha256: 'nope'")));
    }

    #[test]
    fn namespace_allowance() {
        let mut s = spec("krmFunctions: []\n");
        let labels: BTreeMap<String, String> = [("team".to_string(), "a".to_string())].into();
        assert!(
            !s.allows_namespace("apps", &labels),
            "no allowedNamespaces: nobody"
        );
        s.allowed_namespaces = Some(AllowedNamespaces {
            names: vec!["apps".into()],
            selector: None,
        });
        assert!(s.allows_namespace("apps", &BTreeMap::new()));
        assert!(!s.allows_namespace("other", &labels));
        s.allowed_namespaces = Some(AllowedNamespaces {
            names: vec![],
            selector: Some(LabelSelector {
                match_labels: None,
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "team".into(),
                    operator: "In".into(),
                    values: Some(vec!["a".into(), "b".into()]),
                }]),
            }),
        });
        assert!(s.allows_namespace("other", &labels));
        assert!(!s.allows_namespace("other", &BTreeMap::new()));
    }
}
