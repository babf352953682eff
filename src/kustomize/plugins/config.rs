//! Builtin plugin configurations checked the way kustomize's plugins
//! decode them, before any plugin runs.
//!
//! kustomize hands each builtin plugin its configuration as YAML, and the
//! plugin decodes it into a Go struct. Most use `sigs.k8s.io/yaml`: the
//! YAML becomes JSON (keys sorted; a number or boolean becomes text where
//! the field it goes to is a string), then Go's `encoding/json` decodes it
//! without refusing unknown fields. A value of the wrong type fails the
//! plugin's configuration with Go's message. The prefix and suffix plugins
//! decode with go-yaml v3 instead, which has its own rules and messages.
//!
//! The Go structs are described here by [`Ty`] as far as decoding needs:
//! field names, types and which fields an embedded struct promotes (the
//! YAML-to-JSON step looks a promoted field up in the embedded struct's
//! place, so its numbers are not turned into text).

use super::super::kustomization::go_type_of;
use super::super::yaml::{Mapping, Value, write_document};

/// A Go type, as decoding sees it.
#[derive(Debug)]
pub(super) enum Ty {
    /// A string kind, with its Go type name (`string`,
    /// `types.PatchStrategicMerge`).
    Str(&'static str),
    Bool,
    /// An integer kind (`int64`, `int`).
    Int(&'static str),
    /// A slice, with its type name (`[]types.FieldSpec`) and element type.
    Slice(&'static str, &'static Ty),
    /// A map with string keys, with its type name and value type.
    Map(&'static str, &'static Ty),
    /// A struct, or a pointer to one.
    Struct(&'static GoStruct),
}

#[derive(Debug)]
pub(super) struct GoStruct {
    /// The type's name without its package (`FieldSpec`).
    name: &'static str,
    /// The type as Go prints it (`types.FieldSpec`).
    go: &'static str,
    fields: &'static [GoField],
}

/// A struct field: `json` is its JSON name, empty for an embedded struct
/// whose fields are promoted.
#[derive(Debug)]
struct GoField {
    json: &'static str,
    ty: Ty,
}

const STRING: Ty = Ty::Str("string");
const STRINGS: Ty = Ty::Slice("[]string", &STRING);
const STRING_MAP: Ty = Ty::Map("map[string]string", &STRING);

const fn f(json: &'static str, ty: Ty) -> GoField {
    GoField { json, ty }
}

const fn embed(s: &'static GoStruct) -> GoField {
    GoField {
        json: "",
        ty: Ty::Struct(s),
    }
}

static GVK: GoStruct = GoStruct {
    name: "Gvk",
    go: "resid.Gvk",
    fields: &[f("group", STRING), f("version", STRING), f("kind", STRING)],
};

static RESID: GoStruct = GoStruct {
    name: "ResId",
    go: "resid.ResId",
    fields: &[embed(&GVK), f("name", STRING), f("namespace", STRING)],
};

static FIELD_SPEC: GoStruct = GoStruct {
    name: "FieldSpec",
    go: "types.FieldSpec",
    fields: &[embed(&GVK), f("path", STRING), f("create", Ty::Bool)],
};

const FIELD_SPECS: Ty = Ty::Slice("[]types.FieldSpec", &Ty::Struct(&FIELD_SPEC));

static OBJECT_META: GoStruct = GoStruct {
    name: "ObjectMeta",
    go: "types.ObjectMeta",
    fields: &[
        f("name", STRING),
        f("namespace", STRING),
        f("labels", STRING_MAP),
        f("annotations", STRING_MAP),
    ],
};

static GENERATOR_OPTIONS: GoStruct = GoStruct {
    name: "GeneratorOptions",
    go: "types.GeneratorOptions",
    fields: &[
        f("labels", STRING_MAP),
        f("annotations", STRING_MAP),
        f("disableNameSuffixHash", Ty::Bool),
        f("immutable", Ty::Bool),
    ],
};

static KV_PAIR_SOURCES: GoStruct = GoStruct {
    name: "KvPairSources",
    go: "types.KvPairSources",
    fields: &[
        f("literals", STRINGS),
        f("files", STRINGS),
        f("envs", STRINGS),
        f("env", STRING),
    ],
};

static GENERATOR_ARGS: GoStruct = GoStruct {
    name: "GeneratorArgs",
    go: "types.GeneratorArgs",
    fields: &[
        f("namespace", STRING),
        f("name", STRING),
        f("behavior", STRING),
        embed(&KV_PAIR_SOURCES),
        f("options", Ty::Struct(&GENERATOR_OPTIONS)),
    ],
};

static CONFIG_MAP_ARGS: GoStruct = GoStruct {
    name: "ConfigMapArgs",
    go: "types.ConfigMapArgs",
    fields: &[embed(&GENERATOR_ARGS)],
};

static SECRET_ARGS: GoStruct = GoStruct {
    name: "SecretArgs",
    go: "types.SecretArgs",
    fields: &[embed(&GENERATOR_ARGS), f("type", STRING)],
};

static SELECTOR: GoStruct = GoStruct {
    name: "Selector",
    go: "types.Selector",
    fields: &[
        embed(&RESID),
        f("annotationSelector", STRING),
        f("labelSelector", STRING),
    ],
};

static IMAGE: GoStruct = GoStruct {
    name: "Image",
    go: "types.Image",
    fields: &[
        f("name", STRING),
        f("newName", STRING),
        f("tagSuffix", STRING),
        f("newTag", STRING),
        f("digest", STRING),
    ],
};

static REPLICA: GoStruct = GoStruct {
    name: "Replica",
    go: "types.Replica",
    fields: &[f("name", STRING), f("count", Ty::Int("int64"))],
};

static FIELD_OPTIONS: GoStruct = GoStruct {
    name: "FieldOptions",
    go: "types.FieldOptions",
    fields: &[
        f("delimiter", STRING),
        f("index", Ty::Int("int")),
        f("encoding", STRING),
        f("create", Ty::Bool),
    ],
};

static SOURCE_SELECTOR: GoStruct = GoStruct {
    name: "SourceSelector",
    go: "types.SourceSelector",
    fields: &[
        embed(&RESID),
        f("fieldPath", STRING),
        f("options", Ty::Struct(&FIELD_OPTIONS)),
    ],
};

static TARGET_SELECTOR: GoStruct = GoStruct {
    name: "TargetSelector",
    go: "types.TargetSelector",
    fields: &[
        f("select", Ty::Struct(&SELECTOR)),
        f(
            "reject",
            Ty::Slice("[]*types.Selector", &Ty::Struct(&SELECTOR)),
        ),
        f("fieldPaths", STRINGS),
        f("options", Ty::Struct(&FIELD_OPTIONS)),
    ],
};

static REPLACEMENT: GoStruct = GoStruct {
    name: "Replacement",
    go: "types.Replacement",
    fields: &[
        f("source", Ty::Struct(&SOURCE_SELECTOR)),
        f(
            "targets",
            Ty::Slice("[]*types.TargetSelector", &Ty::Struct(&TARGET_SELECTOR)),
        ),
    ],
};

static REPLACEMENT_FIELD: GoStruct = GoStruct {
    name: "ReplacementField",
    go: "types.ReplacementField",
    fields: &[embed(&REPLACEMENT), f("path", STRING)],
};

static KUBERNETES_SERVICE: GoStruct = GoStruct {
    name: "KubernetesService",
    go: "types.KubernetesService",
    fields: &[f("name", STRING), f("namespace", STRING)],
};

static SERVICE_ACCOUNT: GoStruct = GoStruct {
    name: "ServiceAccount",
    go: "types.ServiceAccount",
    fields: &[f("name", STRING), f("projectId", STRING)],
};

static IAM_POLICY_ARGS: GoStruct = GoStruct {
    name: "IAMPolicyGeneratorArgs",
    go: "types.IAMPolicyGeneratorArgs",
    fields: &[
        f("cloud", Ty::Str("types.Cloud")),
        f("kubernetesService", Ty::Struct(&KUBERNETES_SERVICE)),
        f("serviceAccount", Ty::Struct(&SERVICE_ACCOUNT)),
    ],
};

static VALUE_ADD_TARGET: GoStruct = GoStruct {
    name: "Target",
    go: "builtins.Target",
    fields: &[
        f("selector", Ty::Struct(&SELECTOR)),
        f("fieldPath", STRING),
        f("filePathPosition", Ty::Int("int")),
    ],
};

macro_rules! plugin {
    ($name:literal, [$($field:expr),* $(,)?]) => {
        GoStruct {
            name: $name,
            go: concat!("builtins.", $name),
            fields: &[$($field),*],
        }
    };
}

static ANNOTATIONS: GoStruct = plugin!(
    "AnnotationsTransformerPlugin",
    [f("annotations", STRING_MAP), f("fieldSpecs", FIELD_SPECS)]
);
static LABELS: GoStruct = plugin!(
    "LabelTransformerPlugin",
    [f("labels", STRING_MAP), f("fieldSpecs", FIELD_SPECS)]
);
static CONFIG_MAP_GENERATOR: GoStruct = plugin!(
    "ConfigMapGeneratorPlugin",
    [
        f("metadata", Ty::Struct(&OBJECT_META)),
        embed(&CONFIG_MAP_ARGS)
    ]
);
static SECRET_GENERATOR: GoStruct = plugin!(
    "SecretGeneratorPlugin",
    [f("metadata", Ty::Struct(&OBJECT_META)), embed(&SECRET_ARGS)]
);
static IAM_POLICY_GENERATOR: GoStruct =
    plugin!("IAMPolicyGeneratorPlugin", [embed(&IAM_POLICY_ARGS)]);
static IMAGE_TAG: GoStruct = plugin!(
    "ImageTagTransformerPlugin",
    [
        f("imageTag", Ty::Struct(&IMAGE)),
        f("fieldSpecs", FIELD_SPECS)
    ]
);
static NAMESPACE: GoStruct = plugin!(
    "NamespaceTransformerPlugin",
    [
        f("metadata", Ty::Struct(&OBJECT_META)),
        f("fieldSpecs", FIELD_SPECS),
        f("unsetOnly", Ty::Bool),
        f(
            "setRoleBindingSubjects",
            Ty::Str("namespace.RoleBindingSubjectMode")
        ),
    ]
);
static PATCH_JSON6902: GoStruct = plugin!(
    "PatchJson6902TransformerPlugin",
    [
        f("target", Ty::Struct(&SELECTOR)),
        f("path", STRING),
        f("jsonOp", STRING)
    ]
);
static PATCH_STRATEGIC_MERGE: GoStruct = plugin!(
    "PatchStrategicMergeTransformerPlugin",
    [
        f(
            "paths",
            Ty::Slice(
                "[]types.PatchStrategicMerge",
                &Ty::Str("types.PatchStrategicMerge")
            )
        ),
        f("patches", STRING),
    ]
);
static PATCH: GoStruct = plugin!(
    "PatchTransformerPlugin",
    [
        f("path", STRING),
        f("patch", STRING),
        f("target", Ty::Struct(&SELECTOR)),
        f("options", Ty::Map("map[string]bool", &Ty::Bool)),
    ]
);
static REPLACEMENT_TRANSFORMER: GoStruct = plugin!(
    "ReplacementTransformerPlugin",
    [
        f(
            "replacements",
            Ty::Slice("[]types.ReplacementField", &Ty::Struct(&REPLACEMENT_FIELD))
        ),
        // the field's tag is `json:"omitempty"`: it is named so
        f(
            "omitempty",
            Ty::Slice("[]types.Replacement", &Ty::Struct(&REPLACEMENT))
        ),
    ]
);
static REPLICA_COUNT: GoStruct = plugin!(
    "ReplicaCountTransformerPlugin",
    [
        f("replica", Ty::Struct(&REPLICA)),
        f("fieldSpecs", FIELD_SPECS)
    ]
);
static VALUE_ADD: GoStruct = plugin!(
    "ValueAddTransformerPlugin",
    [
        f("value", STRING),
        f(
            "targets",
            Ty::Slice("[]builtins.Target", &Ty::Struct(&VALUE_ADD_TARGET))
        ),
        f("targetFilePath", STRING),
    ]
);

static NAME_BACK_REFERENCES: GoStruct = GoStruct {
    name: "NameBackReferences",
    go: "builtinconfig.NameBackReferences",
    fields: &[embed(&GVK), f("fieldSpecs", FS_SLICE)],
};

const FS_SLICE: Ty = Ty::Slice("types.FsSlice", &Ty::Struct(&FIELD_SPEC));

static TRANSFORMER_CONFIG: GoStruct = GoStruct {
    name: "TransformerConfig",
    go: "builtinconfig.TransformerConfig",
    fields: &[
        f("namePrefix", FS_SLICE),
        f("nameSuffix", FS_SLICE),
        f("namespace", FS_SLICE),
        f("commonLabels", FS_SLICE),
        f("labels", FS_SLICE),
        f("templateLabels", FS_SLICE),
        f("commonAnnotations", FS_SLICE),
        f(
            "nameReference",
            Ty::Slice("builtinconfig.nbrSlice", &Ty::Struct(&NAME_BACK_REFERENCES)),
        ),
        f("varReference", FS_SLICE),
        f("images", FS_SLICE),
        f("replicas", FS_SLICE),
    ],
};

/// Checks the types of a `configurations:` file's document as kustomize
/// decodes it (`sigs.k8s.io/yaml` into its TransformerConfig); unknown
/// fields are left to the caller.
pub(crate) fn check_transformer_config(doc: &Value) -> Result<(), String> {
    let ty = Ty::Struct(&TRANSFORMER_CONFIG);
    let converted = to_json(doc, Some(&ty));
    decode(&converted, &ty, &TRANSFORMER_CONFIG, &mut Vec::new())
        .map_err(|e| format!("error unmarshaling JSON: while decoding JSON: {e}"))
}

/// The prefix and suffix plugins' struct, decoded by go-yaml v3.
static PREFIX_SUFFIX_FIELD_SPECS: Ty = Ty::Slice("types.FsSlice", &Ty::Struct(&FIELD_SPEC));

/// The struct a builtin plugin kind decodes its configuration into through
/// `sigs.k8s.io/yaml`; `None` for kinds that decode otherwise or not at all.
fn json_struct(kind: &str) -> Option<&'static GoStruct> {
    Some(match kind {
        "AnnotationsTransformer" => &ANNOTATIONS,
        "LabelTransformer" => &LABELS,
        "ConfigMapGenerator" => &CONFIG_MAP_GENERATOR,
        "SecretGenerator" => &SECRET_GENERATOR,
        "IAMPolicyGenerator" => &IAM_POLICY_GENERATOR,
        "ImageTagTransformer" => &IMAGE_TAG,
        "NamespaceTransformer" => &NAMESPACE,
        "PatchJson6902Transformer" => &PATCH_JSON6902,
        "PatchStrategicMergeTransformer" => &PATCH_STRATEGIC_MERGE,
        "PatchTransformer" => &PATCH,
        "ReplacementTransformer" => &REPLACEMENT_TRANSFORMER,
        "ReplicaCountTransformer" => &REPLICA_COUNT,
        "ValueAddTransformer" => &VALUE_ADD,
        _ => return None,
    })
}

/// Checks a builtin plugin's configuration (the whole config document) as
/// the plugin's `Config` decodes it. The error is the reason kustomize
/// gives after `plugin <id> fails configuration: `.
pub(super) fn check(kind: &str, config: &Value) -> Result<(), String> {
    match kind {
        "PrefixTransformer" | "SuffixTransformer" | "PrefixSuffixTransformer" => {
            check_prefix_suffix(kind, config)
        }
        _ => match json_struct(kind) {
            Some(s) => {
                let converted = to_json(config, Some(&Ty::Struct(s)));
                let mut path = Vec::new();
                decode(&converted, &Ty::Struct(s), s, &mut path).map_err(|e| {
                    let e = format!("error unmarshaling JSON: while decoding JSON: {e}");
                    if kind == "NamespaceTransformer" {
                        format!("unmarshalling NamespaceTransformer config: {e}")
                    } else {
                        e
                    }
                })
            }
            None => Ok(()),
        },
    }
}

/// A struct's fields by JSON name, embedded structs' fields promoted:
/// `(name, type, the top-level field's type)`. The last is what
/// `sigs.k8s.io/yaml` converts the value for.
fn fields(s: &'static GoStruct) -> Vec<(&'static str, &'static Ty, &'static Ty)> {
    let mut out = Vec::new();
    for field in s.fields {
        if field.json.is_empty()
            && let Ty::Struct(inner) = &field.ty
        {
            for (name, ty, _) in fields(inner) {
                if !out.iter().any(|(n, _, _)| *n == name) {
                    out.push((name, ty, &field.ty));
                }
            }
        } else {
            out.retain(|(n, _, _)| *n != field.json);
            out.push((field.json, &field.ty, &field.ty));
        }
    }
    out
}

/// The field Go's JSON decoding picks for a key: an exact match, else one
/// that matches ignoring case.
fn lookup(s: &'static GoStruct, key: &str) -> Option<(&'static str, &'static Ty, &'static Ty)> {
    let all = fields(s);
    all.iter()
        .find(|(n, _, _)| *n == key)
        .or_else(|| all.iter().find(|(n, _, _)| n.eq_ignore_ascii_case(key)))
        .copied()
}

/// `sigs.k8s.io/yaml`'s YAML-to-JSON step: numbers and booleans become
/// text where the value goes to a string; keys are sorted.
fn to_json(v: &Value, target: Option<&Ty>) -> Value {
    match v {
        Value::Bool(_) | Value::Int(_) | Value::UInt(_) | Value::Float(_)
            if matches!(target, Some(Ty::Str(_))) =>
        {
            Value::String(v.scalar_to_string().unwrap_or_default())
        }
        Value::Map(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Mapping::with_capacity(m.len());
            for k in keys {
                let child = match target {
                    Some(Ty::Struct(s)) => lookup(s, k).map(|(_, _, convert)| convert),
                    Some(Ty::Map(_, value)) => Some(*value),
                    _ => None,
                };
                out.insert(k.clone(), to_json(&m[k.as_str()], child));
            }
            Value::Map(out)
        }
        Value::Seq(items) => {
            let elem = match target {
                Some(Ty::Slice(_, elem)) => Some(*elem),
                _ => None,
            };
            Value::Seq(items.iter().map(|i| to_json(i, elem)).collect())
        }
        other => other.clone(),
    }
}

fn type_name(ty: &Ty) -> &'static str {
    match ty {
        Ty::Str(n) | Ty::Int(n) | Ty::Slice(n, _) | Ty::Map(n, _) => n,
        Ty::Bool => "bool",
        Ty::Struct(s) => s.go,
    }
}

/// Go's `encoding/json` decoding of `v` into `ty`: the first error, as
/// `json: cannot unmarshal <kind> into Go struct field <Struct>.<path> of
/// type <type>`. `owner` is the struct decoding the enclosing object and
/// `path` the JSON field names from the top.
fn decode(
    v: &Value,
    ty: &Ty,
    owner: &'static GoStruct,
    path: &mut Vec<String>,
) -> Result<(), String> {
    let mismatch = |what: String| {
        Err(format!(
            "json: cannot unmarshal {what} into Go struct field {}.{} of type {}",
            owner.name,
            path.join("."),
            type_name(ty)
        ))
    };
    match (ty, v) {
        (_, Value::Null) => Ok(()),
        (Ty::Str(_), Value::String(_)) | (Ty::Bool, Value::Bool(_)) => Ok(()),
        (Ty::Int(_), Value::Int(_) | Value::UInt(_) | Value::Float(_)) => {
            // Go's int is 64 bits here; JSON writes an integral float
            // without a fraction, which then reads as an integer
            let fits = match v {
                Value::Int(_) => true,
                Value::Float(x) => x.fract() == 0.0 && x.abs() < 9.2e18,
                _ => false,
            };
            if fits {
                Ok(())
            } else {
                mismatch(format!(
                    "number {}",
                    v.scalar_to_string().unwrap_or_default()
                ))
            }
        }
        (Ty::Slice(_, elem), Value::Seq(items)) => {
            for item in items {
                decode(item, elem, owner, path)?;
            }
            Ok(())
        }
        (Ty::Map(_, value), Value::Map(m)) => {
            for (_, item) in m {
                decode(item, value, owner, path)?;
            }
            Ok(())
        }
        (Ty::Struct(s), Value::Map(m)) => {
            for (k, item) in m {
                if let Some((name, field_ty, _)) = lookup(s, k) {
                    path.push(name.to_string());
                    let r = decode(item, field_ty, s, path);
                    path.pop();
                    r?;
                }
            }
            Ok(())
        }
        _ => mismatch(go_type_of(v).to_string()),
    }
}

/// go-yaml v3's decoding of the prefix and suffix plugins' configuration
/// (`prefix` or `suffix`, and `fieldSpecs`, which must be set), with its
/// messages: every error, each with the line of the value in the
/// configuration as kustomize prints it.
fn check_prefix_suffix(kind: &str, config: &Value) -> Result<(), String> {
    // PrefixSuffixTransformer configures both plugins with the same text
    match kind {
        "PrefixTransformer" => check_v3_plugin("prefix", config),
        "SuffixTransformer" => check_v3_plugin("suffix", config),
        _ => check_v3_plugin("prefix", config).and_then(|()| check_v3_plugin("suffix", config)),
    }
}

/// One of the prefix and suffix plugins: `field` and `fieldSpecs`.
fn check_v3_plugin(field: &str, config: &Value) -> Result<(), String> {
    let Some(m) = config.as_map() else {
        return Ok(());
    };
    let mut errors = Vec::new();
    let mut field_specs_set = false;
    for (k, v) in m {
        if k == field {
            yaml3(v, &STRING, &[k.as_str()], config, &mut errors);
        } else if k == "fieldSpecs" {
            field_specs_set = !v.is_null();
            yaml3(
                v,
                &PREFIX_SUFFIX_FIELD_SPECS,
                &[k.as_str()],
                config,
                &mut errors,
            );
        }
    }
    if !errors.is_empty() {
        return Err(format!(
            "yaml: unmarshal errors:\n  {}",
            errors.join("\n  ")
        ));
    }
    if !field_specs_set {
        return Err("fieldSpecs is not expected to be nil".into());
    }
    Ok(())
}

/// The YAML 1.1 words go-yaml v3 still decodes into a bool field.
const V3_BOOL_WORDS: [&str; 16] = [
    "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off",
    "OFF",
];

/// A v3 decoding of `v` (at `path` in `config`) into `ty`; errors are
/// collected.
fn yaml3(v: &Value, ty: &'static Ty, path: &[&str], config: &Value, errors: &mut Vec<String>) {
    let tag = match v {
        Value::Null => return,
        Value::Bool(_) => "!!bool",
        Value::Int(_) | Value::UInt(_) => "!!int",
        Value::Float(_) => "!!float",
        Value::String(_) => "!!str",
        Value::Seq(_) => "!!seq",
        Value::Map(_) => "!!map",
    };
    let ok = match (ty, v) {
        (Ty::Str(_), Value::Seq(_) | Value::Map(_)) => false,
        (Ty::Str(_), _) => true,
        (Ty::Bool, Value::Bool(_)) => true,
        // v3 still reads YAML 1.1 spellings into a bool field
        (Ty::Bool, Value::String(b)) => V3_BOOL_WORDS.contains(&b.as_str()),
        (Ty::Slice(_, elem), Value::Seq(items)) => {
            for (i, item) in items.iter().enumerate() {
                let index = i.to_string();
                let mut p = path.to_vec();
                p.push(&index);
                yaml3(item, elem, &p, config, errors);
            }
            true
        }
        (Ty::Struct(s), Value::Map(m)) => {
            // v3 matches field names exactly
            let all = fields(s);
            for (k, item) in m {
                if let Some((_, field_ty, _)) = all.iter().find(|(n, _, _)| *n == k.as_str()) {
                    let mut p = path.to_vec();
                    p.push(k);
                    yaml3(item, field_ty, &p, config, errors);
                }
            }
            true
        }
        _ => false,
    };
    if ok {
        return;
    }
    let line = line_of(
        config,
        path,
        matches!(v, Value::Seq(s) if !s.is_empty()) || matches!(v, Value::Map(m) if !m.is_empty()),
    );
    let what = match v {
        Value::Seq(_) | Value::Map(_) => tag.to_string(),
        other => format!("{tag} `{}`", other.scalar_to_string().unwrap_or_default()),
    };
    errors.push(format!(
        "line {line}: cannot unmarshal {what} into {}",
        type_name(ty)
    ));
}

/// The line of the value at `path` in the configuration as kustomize
/// prints it for the plugin (keys sorted, block style, as krmsync prints
/// resources): the value is replaced by a marker in a printed copy; a
/// block collection starts on the line after its key.
fn line_of(config: &Value, path: &[&str], block: bool) -> usize {
    const MARKER: &str = "krmsync-line-marker-7f3a";
    let mut copy = config.clone();
    let mut node = &mut copy;
    for (i, step) in path.iter().enumerate() {
        let next = match node {
            Value::Map(m) => m.get_mut(*step),
            Value::Seq(s) => step.parse::<usize>().ok().and_then(|n| s.get_mut(n)),
            _ => None,
        };
        let Some(next) = next else {
            return 0;
        };
        node = next;
        if i + 1 == path.len() {
            *node = Value::String(MARKER.into());
        }
    }
    let mut text = String::new();
    if write_document(&mut text, &copy).is_err() {
        return 0;
    }
    let at = text
        .lines()
        .position(|l| l.contains(MARKER))
        .map_or(0, |i| i + 1);
    let item = path.last().is_some_and(|p| p.parse::<usize>().is_ok());
    if block && !item { at + 1 } else { at }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kustomize::yaml::parse::parse_documents;

    fn config(text: &str) -> Value {
        parse_documents(text).unwrap().remove(0)
    }

    fn err(kind: &str, text: &str) -> String {
        check(kind, &config(text)).unwrap_err()
    }

    #[test]
    fn wrong_types_fail_with_gos_messages() {
        assert_eq!(
            err("ConfigMapGenerator", "literals: 5\n"),
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal number into Go struct field ConfigMapGeneratorPlugin.literals of type []string"
        );
        assert!(err("ConfigMapGenerator", "literals: [a=1, 5]\n").ends_with(
            "cannot unmarshal number into Go struct field ConfigMapGeneratorPlugin.literals of type string"
        ));
        assert!(
            err("ConfigMapGenerator", "options:\n  labels: 5\n").ends_with(
                "Go struct field GeneratorOptions.options.labels of type map[string]string"
            )
        );
        assert!(err("LabelTransformer", "labels: {a: b}\nfieldSpecs: [{path: p, create: 1}]\n").ends_with(
            "cannot unmarshal number into Go struct field FieldSpec.fieldSpecs.create of type bool"
        ));
        assert!(err("ReplicaCountTransformer", "replica: {count: 1.5}\n").ends_with(
            "cannot unmarshal number 1.5 into Go struct field Replica.replica.count of type int64"
        ));
        assert!(
            err("PatchTransformer", "options: {allowNameChange: 1}\n")
                .ends_with("Go struct field PatchTransformerPlugin.options of type bool")
        );
        assert!(err("PatchTransformer", "target: 5\n").ends_with("of type types.Selector"));
        assert!(
            err("NamespaceTransformer", "unsetOnly: 1\n")
                .starts_with("unmarshalling NamespaceTransformer config: error unmarshaling JSON")
        );
    }

    #[test]
    fn numbers_become_text_only_where_a_string_field_is_looked_up_directly() {
        // direct fields and map values: converted
        assert!(
            check(
                "LabelTransformer",
                &config("labels: {a: 1}\nfieldSpecs: [{path: 5}]\n")
            )
            .is_ok()
        );
        assert!(check("ConfigMapGenerator", &config("metadata: {name: 5}\n")).is_ok());
        // fields promoted from an embedded struct: not converted
        assert!(
            err("ConfigMapGenerator", "name: 5\n")
                .ends_with("Go struct field ConfigMapGeneratorPlugin.name of type string")
        );
        assert!(
            err("LabelTransformer", "fieldSpecs: [{kind: 5, path: p}]\n")
                .ends_with("Go struct field FieldSpec.fieldSpecs.kind of type string")
        );
        // the first error in the JSON's sorted key order
        assert!(
            err("ConfigMapGenerator", "literals: 5\nbehavior: [x]\n").contains(".behavior of type")
        );
        // unknown fields are ignored, keys match ignoring case
        assert!(check("PatchTransformer", &config("bogus: 1\nPatch: x\n")).is_ok());
        assert!(
            err("PatchTransformer", "PATCH: [x]\n")
                .contains("PatchTransformerPlugin.patch of type string")
        );
    }

    #[test]
    fn prefix_and_suffix_decode_with_go_yaml_v3() {
        let text = "apiVersion: builtin\nkind: PrefixTransformer\nmetadata:\n  name: x\nprefix: [a]\nfieldSpecs: []\n";
        assert_eq!(
            err("PrefixTransformer", text),
            // kustomize prints the config with sorted keys: `- a` is line 7
            "yaml: unmarshal errors:\n  line 7: cannot unmarshal !!seq into string"
        );
        let text = "apiVersion: builtin\nkind: SuffixTransformer\nmetadata:\n  name: x\nsuffix: 5\nfieldSpecs:\n- path: a\n  create: x\n";
        assert_eq!(
            err("SuffixTransformer", text),
            "yaml: unmarshal errors:\n  line 3: cannot unmarshal !!str `x` into bool"
        );
        assert_eq!(
            err("PrefixTransformer", "prefix: a\n"),
            "fieldSpecs is not expected to be nil"
        );
        assert!(check("PrefixTransformer", &config("prefix: 5\nfieldSpecs: []\n")).is_ok());
    }
}
