//! Rules of kustomize v5.5.0's build that krmsync follows, each checked on
//! several variants. Every expectation was verified with `kubectl kustomize`
//! (kustomize v5.5.0) on the same tree; the tests themselves need no kubectl.

use std::path::Path;
use std::sync::Arc;

use krmsync::kustomize::fs::MemFs;
use krmsync::kustomize::{BuildOptions, build};

fn render(files: &[(&str, &str)], root: &str) -> Result<String, krmsync::kustomize::Error> {
    let files: Vec<(&str, &[u8])> = files.iter().map(|(p, c)| (*p, c.as_bytes())).collect();
    render_with(&files, root, &BuildOptions::default())
}

/// [`render`] with file bytes and build options of the test's own.
fn render_with(
    files: &[(&str, &[u8])],
    root: &str,
    opts: &BuildOptions,
) -> Result<String, krmsync::kustomize::Error> {
    let mut fs = MemFs::new();
    for (p, c) in files {
        fs.add_file(p, c.to_vec());
    }
    build(Arc::new(fs), Path::new(root), opts)?.to_yaml()
}

fn ok(files: &[(&str, &str)], root: &str) -> String {
    render(files, root).unwrap_or_else(|e| panic!("build failed: {e}"))
}

fn err(files: &[(&str, &str)], root: &str) -> String {
    match render(files, root) {
        Ok(out) => panic!("build succeeded, expected an error:\n{out}"),
        Err(e) => e.to_string(),
    }
}

// Rule: a generated Secret always carries a `data` map, empty when the
// generator has no sources (and the empty map is part of the hashed
// content); a generated ConfigMap without sources has no `data` at all.
#[test]
fn empty_generators_secret_gets_empty_data_configmap_none() {
    let out = ok(
        &[(
            "/r/kustomization.yaml",
            "configMapGenerator:
- name: cm
  options: {disableNameSuffixHash: true}
- name: cm2
secretGenerator:
- name: s
  options: {labels: {a: b}}
- name: s2
  type: kubernetes.io/tls
",
        )],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cm2-6ct58987ht
---
apiVersion: v1
data: {}
kind: Secret
metadata:
  labels:
    a: b
  name: s-46f8b28mk5
type: Opaque
---
apiVersion: v1
data: {}
kind: Secret
metadata:
  name: s2-694464d966
type: kubernetes.io/tls
"
    );
}

// Rule: a generator `behavior` kustomize does not know (any spelling other
// than exactly `create`, `merge`, `replace`) is read as unspecified, which
// means create: the build succeeds, names are hashed, and a clash with an
// existing resource fails as create does.
#[test]
fn unknown_generator_behavior_is_create() {
    let out = ok(
        &[(
            "/r/kustomization.yaml",
            "secretGenerator:
- name: s
  behavior: add
  options: {disableNameSuffixHash: true}
- name: t
  literals: [k=v]
  behavior: Create
configMapGenerator:
- name: c
  behavior: replace-me
  options: {annotations: {x: z}}
- name: d
  behavior: MERGE
  literals: [a=b]
",
        )],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1
kind: ConfigMap
metadata:
  annotations:
    x: z
  name: c-6ct58987ht
---
apiVersion: v1
data:
  a: b
kind: ConfigMap
metadata:
  name: d-4h2mbtbbt6
---
apiVersion: v1
data: {}
kind: Secret
metadata:
  name: s
type: Opaque
---
apiVersion: v1
data:
  k: dg==
kind: Secret
metadata:
  name: t-ftgtgc4t9f
type: Opaque
"
    );
    let e = err(
        &[
            (
                "/r/base/kustomization.yaml",
                "configMapGenerator:\n- name: c\n  literals: [a=1]\n",
            ),
            (
                "/r/ov/kustomization.yaml",
                "resources: [../base]\nconfigMapGenerator:\n- name: c\n  behavior: add\n  literals: [b=2]\n",
            ),
        ],
        "/r/ov",
    );
    assert!(
        e.contains("exists; behavior must be merge or replace"),
        "{e}"
    );
}

fn one_file(cm: &str) -> String {
    ok(
        &[
            ("/r/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("/r/cm.yaml", cm),
        ],
        "/r",
    )
}

const CM_HEAD: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n";

// Rule (libyaml, go-yaml v2/v3): a block scalar only keeps the line breaks
// that are in the input. When its last content line ends the file without
// a line break, there is no final newline whatever the chomping indicator
// (`|`, `|+`, `>`, `>+`, `|2`); `|-`/`>-` strip as always. Breaks inside the
// scalar, and a final whitespace-only line, are read as usual.
#[test]
fn block_scalar_ending_the_file_without_newline_has_no_final_newline() {
    let literal = format!("{CM_HEAD}  a: |-\n    line1\n    }}\n");
    for ind in ["|", "|-", "|+", "|2"] {
        let out = one_file(&format!("{CM_HEAD}  a: {ind}\n    line1\n    }}"));
        assert_eq!(
            out,
            format!(
                "apiVersion: v1\ndata:\n  a: |-\n    line1\n    }}\nkind: ConfigMap\nmetadata:\n  name: c\n"
            ),
            "{ind}"
        );
        assert!(out.contains(literal.trim_start_matches(CM_HEAD)), "{ind}");
    }
    for ind in [">", ">-", ">+"] {
        let out = one_file(&format!("{CM_HEAD}  a: {ind}\n    line1\n    }}"));
        assert_eq!(
            out, "apiVersion: v1\ndata:\n  a: line1 }\nkind: ConfigMap\nmetadata:\n  name: c\n",
            "{ind}"
        );
    }
    // Inner blank lines stay with keep chomping.
    let out = one_file(&format!("{CM_HEAD}  a: |+\n    x\n\n    }}"));
    assert!(out.contains("  a: |-\n    x\n\n    }\n"), "{out}");
    // A whitespace-only last line: the break before it is in the input.
    let out = one_file(&format!("{CM_HEAD}  a: |\n    x\n  "));
    assert!(out.contains("  a: |\n    x\n"), "{out}");
    let out = one_file(&format!("{CM_HEAD}  a: |+\n    x\n\n  "));
    assert!(out.contains("  a: |+\n    x\n\n"), "{out}");
    // Only the last document of a stream ends the file.
    let out = one_file(&format!(
        "{CM_HEAD}  a: |\n    x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  b: |\n    y"
    ));
    assert!(out.contains("  a: |\n    x\n"), "{out}");
    assert!(out.contains("  b: \"y\"\n"), "{out}");
    // Inside a List, and in the kustomization file itself.
    let out = one_file(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: c\n  data:\n    b: |\n      x\n      y",
    );
    assert!(out.contains("  b: |-\n    x\n    y\n"), "{out}");
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\ncommonAnnotations:\n  note: |\n    hi\n    there",
            ),
            (
                "/r/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
            ),
        ],
        "/r",
    );
    assert!(
        out.contains("    note: |-\n      hi\n      there\n"),
        "{out}"
    );
}

fn sorted(sort_options: &str) -> Result<String, krmsync::kustomize::Error> {
    render(
        &[
            (
                "/r/kustomization.yaml",
                &format!("resources: [a.yaml]\nsortOptions:\n{sort_options}"),
            ),
            (
                "/r/a.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\napiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: w\n",
            ),
        ],
        "/r",
    )
}

// Rule: `sortOptions.order` must be exactly `fifo` or `legacy` (anything
// else, missing or empty included, is one error); `legacySortOptions` given
// (even `{}`; `null` is not given) with `order: fifo` is an error. Only the
// top-level kustomization's sortOptions are checked.
#[test]
fn sort_options_are_validated() {
    const FIFO_ERR: &str = "the field 'sortOptions.legacySortOptions' is set but the selected sort order is 'fifo', not 'legacy'";
    const ORDER_ERR: &str = "the field 'sortOptions.order' must be one of [fifo, legacy]";
    for (so, want) in [
        ("  order: fifo\n  legacySortOptions: {}\n", FIFO_ERR),
        (
            "  order: fifo\n  legacySortOptions: {orderFirst: [A]}\n",
            FIFO_ERR,
        ),
        (
            "  order: fifo\n  legacySortOptions: {orderFirst: null}\n",
            FIFO_ERR,
        ),
        ("  legacySortOptions: {}\n", ORDER_ERR),
        ("  order: \"\"\n", ORDER_ERR),
        ("  {}\n", ORDER_ERR),
        ("  order: Fifo\n", ORDER_ERR),
    ] {
        let e = sorted(so).expect_err(so);
        assert!(e.to_string().ends_with(want), "{so}: {e}");
    }
    let kinds = |so: &str| -> Vec<String> {
        let out = sorted(so).unwrap_or_else(|e| panic!("{so}: {e}"));
        out.lines()
            .filter_map(|l| l.strip_prefix("kind: "))
            .map(str::to_owned)
            .collect()
    };
    let (d, n, s, w) = (
        "Deployment",
        "Namespace",
        "Service",
        "ValidatingWebhookConfiguration",
    );
    for (so, want) in [
        ("  order: fifo\n  legacySortOptions: null\n", [d, n, s, w]),
        ("  order: fifo\n", [d, n, s, w]),
        // Without legacySortOptions (or null): the default kind lists.
        ("  order: legacy\n", [n, s, d, w]),
        ("  order: legacy\n  legacySortOptions: null\n", [n, s, d, w]),
        // With them, a missing list is empty, not the default; what no list
        // names is ordered by group/version/kind (core group last).
        ("  order: legacy\n  legacySortOptions: {}\n", [w, d, n, s]),
        (
            "  order: legacy\n  legacySortOptions: {orderLast: null, orderFirst: []}\n",
            [w, d, n, s],
        ),
        (
            "  order: legacy\n  legacySortOptions: {orderFirst: [Service]}\n",
            [s, w, d, n],
        ),
        (
            "  order: legacy\n  legacySortOptions: {orderLast: [Namespace]}\n",
            [w, d, s, n],
        ),
    ] {
        assert_eq!(kinds(so), want, "{so}");
    }
    // A base's sortOptions are not checked.
    let out = ok(
        &[
            ("/r/kustomization.yaml", "resources: [base]\n"),
            (
                "/r/base/kustomization.yaml",
                "resources: [cm.yaml]\nsortOptions:\n  order: fifo\n  legacySortOptions: {}\n",
            ),
            (
                "/r/base/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
    );
}

const THREE_CMS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: prod\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: dev\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: solo\n  namespace: x\n";

fn smp(meta: &str) -> Result<String, krmsync::kustomize::Error> {
    render(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [r.yaml]\npatches:\n- path: p.yaml\n",
            ),
            ("/r/r.yaml", THREE_CMS),
            (
                "/r/p.yaml",
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n{meta}data: {{a: b}}\n"),
            ),
        ],
        "/r",
    )
}

fn no_match(id: &str, why: &str) -> String {
    format!(
        "no resource matches strategic merge patch \"{id}\": {why} for Id {id}; failed to find unique target for patch {id}"
    )
}

// Rule: a strategic-merge patch in `patches:` without a target applies to
// the one resource whose id (kind, name, namespace; current or original)
// equals the patch's own, taken literally (no patterns, an absent
// namespace is not a wildcard). None or several such resources is an
// error, in a Kustomization and in a Component built directly; a patch with
// a target that selects nothing is not.
#[test]
fn untargeted_strategic_merge_patch_needs_exactly_one_resource() {
    for (meta, id) in [
        ("  name: c\n", "ConfigMap.v1.[noGrp]/c.[noNs]"),
        ("  name: solo\n", "ConfigMap.v1.[noGrp]/solo.[noNs]"),
        (
            "  name: s.lo\n  namespace: x\n",
            "ConfigMap.v1.[noGrp]/s.lo.x",
        ),
        (
            "  name: s.*\n  namespace: x\n",
            "ConfigMap.v1.[noGrp]/s.*.x",
        ),
    ] {
        let e = smp(meta).expect_err(meta).to_string();
        assert!(e.ends_with(&no_match(id, "no matches")), "{meta}: {e}");
    }
    let out = smp("  name: c\n  namespace: dev\n").unwrap();
    assert!(
        out.contains("data:\n  a: b\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: dev\n"),
        "{out}"
    );
    assert_eq!(out.matches("a: b").count(), 1, "{out}");
    let out = smp("  name: solo\n  namespace: x\n").unwrap();
    assert!(
        out.contains("data:\n  a: b\nkind: ConfigMap\nmetadata:\n  name: solo\n"),
        "{out}"
    );

    // Several resources with the patch's id (here as original names).
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    let e = err(
        &[
            (
                "/r/a/kustomization.yaml",
                "resources: [cm.yaml]\nnamePrefix: a-\n",
            ),
            ("/r/a/cm.yaml", cm),
            (
                "/r/b/kustomization.yaml",
                "resources: [cm.yaml]\nnamePrefix: b-\n",
            ),
            ("/r/b/cm.yaml", cm),
            (
                "/r/kustomization.yaml",
                "resources: [a, b]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: c\n    data: {a: b}\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.ends_with(&no_match(
            "ConfigMap.v1.[noGrp]/c.[noNs]",
            "multiple matches"
        )),
        "{e}"
    );

    // A Component built directly follows the same rule.
    let patch = "- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: other\n    data: {x: \"1\"}\n";
    let head = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n";
    let other = no_match("ConfigMap.v1.[noGrp]/other.[noNs]", "no matches");
    for res in ["resources: [cm.yaml]\n", ""] {
        let e = err(
            &[
                (
                    "/r/kustomization.yaml",
                    &format!("{head}{res}patches:\n{patch}"),
                ),
                ("/r/cm.yaml", cm),
            ],
            "/r",
        );
        assert!(e.ends_with(&other), "{e}");
    }
    // With a target that selects nothing, nothing happens.
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                &format!(
                    "{head}resources: [cm.yaml]\npatches:\n{patch}  target: {{kind: Secret}}\n"
                ),
            ),
            ("/r/cm.yaml", cm),
        ],
        "/r",
    );
    assert_eq!(out, cm);
}

const PLAIN_CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n";

fn json_patch(op: &str) -> String {
    format!("resources: [cm.yaml]\npatches:\n- target: {{kind: ConfigMap}}\n  patch: |\n{op}")
}

// Rule: the annotations map a JSON patch of `patches:` sees holds
// kustomize's bookkeeping (previous ids, including the one stored just
// before the patch; name prefixes and suffixes of earlier builds; generator
// behavior and hash option), which a patch can copy out; the user's
// annotations stay as they were.
#[test]
fn json_patches_can_copy_kustomizes_bookkeeping_annotations() {
    let copy = "  patch: |\n    - op: copy\n      from: /metadata/annotations\n      path: /x\n";
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                &format!(
                    "configMapGenerator:\n- name: g\n  literals: [a=b]\n\
                     - name: h\n  behavior: create\n  literals: [a=b]\n  options: {{disableNameSuffixHash: true}}\n\
                     resources: [svc.yaml]\npatches:\n- target: {{kind: ConfigMap}}\n{copy}\
                     - target: {{kind: Service}}\n{copy}"
                ),
            ),
            (
                "/r/svc.yaml",
                "apiVersion: v1\nkind: Service\nmetadata: {name: web, annotations: {z: \"1\", a: \"2\"}}\n",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1
data:
  a: b
kind: ConfigMap
metadata:
  name: g-4h2mbtbbt6
x:
  internal.config.kubernetes.io/generatorBehavior: unspecified
  internal.config.kubernetes.io/needsHashSuffix: enabled
  internal.config.kubernetes.io/previousKinds: ConfigMap
  internal.config.kubernetes.io/previousNames: g
  internal.config.kubernetes.io/previousNamespaces: default
---
apiVersion: v1
data:
  a: b
kind: ConfigMap
metadata:
  name: h
x:
  internal.config.kubernetes.io/generatorBehavior: create
  internal.config.kubernetes.io/previousKinds: ConfigMap
  internal.config.kubernetes.io/previousNames: h
  internal.config.kubernetes.io/previousNamespaces: default
---
apiVersion: v1
kind: Service
metadata:
  annotations:
    a: \"2\"
    z: \"1\"
  name: web
x:
  a: \"2\"
  internal.config.kubernetes.io/previousKinds: Service
  internal.config.kubernetes.io/previousNames: web
  internal.config.kubernetes.io/previousNamespaces: default
  z: \"1\"
"
    );
    let out = ok(
        &[
            (
                "/r/base/kustomization.yaml",
                "namePrefix: p-\nnameSuffix: -s\nresources: [cm.yaml]\n",
            ),
            (
                "/r/base/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: n\n",
            ),
            (
                "/r/ov/kustomization.yaml",
                &format!("resources: [../base]\npatches:\n- target: {{kind: ConfigMap}}\n{copy}"),
            ),
        ],
        "/r/ov",
    );
    assert_eq!(
        out,
        "apiVersion: v1
kind: ConfigMap
metadata:
  name: p-c-s
  namespace: \"n\"
x:
  internal.config.kubernetes.io/prefixes: p-
  internal.config.kubernetes.io/previousKinds: ConfigMap,ConfigMap,ConfigMap
  internal.config.kubernetes.io/previousNames: c,p-c,p-c-s
  internal.config.kubernetes.io/previousNamespaces: n,n,n
  internal.config.kubernetes.io/suffixes: -s
"
    );
}

// Rule: while `patches:` run, kustomize's resources carry its internal
// annotations, so `/metadata/annotations` always exists: a JSON patch may
// add an annotation to a resource that has none (and the map does not
// survive when the patch left it empty), while `/metadata/labels` exists
// only when the resource has labels. The legacy `patchesJson6902:` field
// sees no such map.
#[test]
fn json_patches_see_an_annotations_map_but_no_labels_map() {
    let add = |path: &str| {
        json_patch(&format!(
            "    - op: add\n      path: {path}\n      value: hello\n"
        ))
    };
    let out = ok(
        &[
            ("/r/kustomization.yaml", &add("/metadata/annotations/x")),
            ("/r/cm.yaml", PLAIN_CM),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  annotations:\n    x: hello\n  name: c\n"
    );
    let e = err(
        &[
            ("/r/kustomization.yaml", &add("/metadata/labels/x")),
            ("/r/cm.yaml", PLAIN_CM),
        ],
        "/r",
    );
    assert!(
        e.contains("doc is missing path: \"/metadata/labels/x\""),
        "{e}"
    );
    // the whole map is never just the user's: a test against {} fails
    let e = err(
        &[
            (
                "/r/kustomization.yaml",
                &json_patch("    - op: test\n      path: /metadata/annotations\n      value: {}\n"),
            ),
            ("/r/cm.yaml", PLAIN_CM),
        ],
        "/r",
    );
    assert!(
        e.contains("testing value /metadata/annotations failed"),
        "{e}"
    );
    // patches that leave annotations empty leave no `annotations` field
    for op in [
        "    - op: replace\n      path: /data/k\n      value: w\n",
        "    - op: remove\n      path: /metadata/annotations\n",
    ] {
        let out = ok(
            &[
                ("/r/kustomization.yaml", &json_patch(op)),
                ("/r/cm.yaml", PLAIN_CM),
            ],
            "/r",
        );
        assert!(!out.contains("annotations"), "{op}: {out}");
    }
    // the legacy field: no annotations map to add to
    let legacy = "resources: [cm.yaml]\npatchesJson6902:\n- target: {version: v1, kind: ConfigMap, name: c}\n  patch: |\n    - op: add\n      path: /metadata/annotations/x\n      value: hello\n";
    let e = err(
        &[("/r/kustomization.yaml", legacy), ("/r/cm.yaml", PLAIN_CM)],
        "/r",
    );
    assert!(
        e.contains("doc is missing path: \"/metadata/annotations/x\""),
        "{e}"
    );
}

// Rule: annotations leave the build as a map of strings: a value a patch
// made a boolean, a number or null comes out as its text (YAML 1.1 in the
// patch: `y` is true).
#[test]
fn annotation_values_set_by_patches_come_out_as_strings() {
    for (value, text) in [
        ("y", "\"true\""),
        ("true", "\"true\""),
        ("5", "\"5\""),
        ("1.5", "\"1.5\""),
        ("0x1F", "\"31\""),
        ("null", "\"null\""),
        ("'007'", "\"007\""),
    ] {
        let op =
            format!("    - op: add\n      path: /metadata/annotations/x\n      value: {value}\n");
        let out = ok(
            &[
                ("/r/kustomization.yaml", &json_patch(&op)),
                ("/r/cm.yaml", PLAIN_CM),
            ],
            "/r",
        );
        assert!(out.contains(&format!("    x: {text}\n")), "{value}: {out}");
    }
    // the same through a strategic-merge patch
    let smp = "resources: [cm.yaml]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: c\n      annotations:\n        x: true\n";
    let out = ok(
        &[("/r/kustomization.yaml", smp), ("/r/cm.yaml", PLAIN_CM)],
        "/r",
    );
    assert!(out.contains("    x: \"true\"\n"), "{out}");
}

const VA_HEAD: &str = "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata:\n  name: va\n";

fn value_add(config: &str, extra: &[(&str, &str)]) -> Result<String, krmsync::kustomize::Error> {
    let mut files = vec![
        (
            "/app/kustomization.yaml",
            "resources: [cm.yaml, rb.yaml, ns.yaml]\ntransformers: [va.yaml]\n".to_string(),
        ),
        (
            "/app/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  rel: a/nice/warm/pie\n  abs: /raw\n".to_string(),
        ),
        (
            "/app/rb.yaml",
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\n  namespace: old\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: r}\nsubjects:\n- kind: ServiceAccount\n  name: default\n  namespace: old\n- kind: ServiceAccount\n  name: other\n  namespace: old\n".to_string(),
        ),
        ("/app/ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n".to_string()),
        ("/app/va.yaml", format!("{VA_HEAD}{config}")),
    ];
    files.extend(extra.iter().map(|(p, c)| (*p, c.to_string())));
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    render(&refs, "/app")
}

// Rule (plugin/builtin/valueaddtransformer): `metadata/namespace` targets
// go through the namespace transformer (namespaced kinds only, RoleBinding
// subjects named `default`, filePathPosition ignored); other field paths
// are created when missing, must be scalars, and filePathPosition > 0
// inserts the value as that path segment (past the end: appended; a
// leading `/` stays). The value is trimmed, defaults to the kustomization
// directory's name; `targetFilePath` adds targets from a file.
#[test]
fn value_add_transformer_follows_kustomize() {
    let out = value_add(
        "value: PEACH\ntargets:\n- fieldPath: metadata/namespace\n  filePathPosition: 2\n",
        &[],
    )
    .unwrap();
    assert!(
        out.contains("kind: Namespace\nmetadata:\n  name: \"n\"\n---"),
        "cluster-scoped untouched:\n{out}"
    );
    assert!(out.contains("  name: c\n  namespace: PEACH\n"), "{out}");
    assert!(
        out.contains("- kind: ServiceAccount\n  name: default\n  namespace: PEACH\n- kind: ServiceAccount\n  name: other\n  namespace: old\n"),
        "{out}"
    );
    assert!(out.contains("  name: rb\n  namespace: PEACH\n"), "{out}");

    for (pos, rel, abs) in [
        (1, "PEACH/a/nice/warm/pie", "/PEACH/raw"),
        (4, "a/nice/warm/PEACH/pie", "/raw/PEACH"),
        (99, "a/nice/warm/pie/PEACH", "/raw/PEACH"),
    ] {
        let cfg = format!(
            "value: '  PEACH '\ntargets:\n- selector: {{kind: ConfigMap}}\n  fieldPath: data/rel\n  filePathPosition: {pos}\n- selector: {{kind: ConfigMap}}\n  fieldPath: data/abs\n  filePathPosition: {pos}\n"
        );
        let out = value_add(&cfg, &[]).unwrap();
        assert!(out.contains(&format!("  rel: {rel}\n")), "{pos}: {out}");
        assert!(out.contains(&format!("  abs: {abs}\n")), "{pos}: {out}");
        assert!(
            !out.contains("namespace: PEACH"),
            "selector respected: {out}"
        );
    }
    // a missing field is created; no value: the directory's name
    let out = value_add(
        "targets:\n- selector: {kind: ConfigMap}\n  fieldPath: data/new\n",
        &[],
    )
    .unwrap();
    assert!(out.contains("  new: app\n"), "{out}");
    // targets from a file
    let out = value_add(
        "value: PEACH\ntargetFilePath: t.yaml\n",
        &[(
            "/app/t.yaml",
            "targets:\n- selector: {kind: ConfigMap}\n  fieldPath: data/fromfile\n",
        )],
    )
    .unwrap();
    assert!(out.contains("  fromfile: PEACH\n"), "{out}");

    for (cfg, msg) in [
        (
            "value: PEACH\n",
            "fails configuration: must specify at least one target",
        ),
        (
            "value: PEACH\ntargets:\n- selector: {kind: ConfigMap}\n",
            "fails configuration: fieldPath cannot be empty",
        ),
        (
            "value: PEACH\ntargets:\n- fieldPath: data/rel\n  filePathPosition: -1\n",
            "fails configuration: value of FilePathPosition (-1) cannot be negative",
        ),
        (
            "value: PEACH\ntargets:\n- selector: {kind: RoleBinding}\n  fieldPath: subjects\n",
            "is not a scalar",
        ),
    ] {
        let e = value_add(cfg, &[]).unwrap_err().to_string();
        assert!(e.contains(msg), "{cfg}: {e}");
    }
}

// Rule (kyaml node sharing): a labels or annotations transformer that
// creates a key at several field specs of one resource creates one YAML
// node for all of them. A later in-place write of that node anywhere (the
// key set again by an upper layer's labels, a strategic-merge patch, a
// replacement) shows at every linked field, even where the later
// transformer does not reach (selectors with `includeSelectors: false`).
// A JSON patch re-creates the resource's nodes (unlinks them); a patch
// that deletes one linked field only takes that field out; labels written
// literally in a file are never linked.
const LINK_DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx
";
const LINK_SERVICE: &str = "apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector:
    app: web
";
const LINK_MID: &str = "resources: [../base]
labels:
- pairs: {env: dev}
  includeSelectors: true
";

/// The `env:` and `note:` values of the output, in order (Service first:
/// metadata, selector; then the Deployment: metadata, selector, template).
fn linked_values(layers: &[(&str, &str)], deployment: &str) -> Vec<String> {
    let mut files = vec![
        ("/t/base/d.yaml", deployment),
        ("/t/base/s.yaml", LINK_SERVICE),
        (
            "/t/base/kustomization.yaml",
            "resources: [d.yaml, s.yaml]\n",
        ),
    ];
    let owned: Vec<(String, &str)> = layers
        .iter()
        .map(|(dir, k)| (format!("/t/{dir}/kustomization.yaml"), *k))
        .collect();
    files.extend(owned.iter().map(|(p, k)| (p.as_str(), *k)));
    ok(&files, "/t/top")
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("env:") || l.starts_with("note:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn fields_a_labels_transformer_created_together_stay_linked() {
    let top_prod = "resources: [../mid]\nlabels:\n- pairs: {env: prod}\n";
    // an upper layer without selectors still changes the linked selectors
    assert_eq!(
        linked_values(&[("mid", LINK_MID), ("top", top_prod)], LINK_DEPLOYMENT),
        ["env: prod"; 5]
    );
    // includeTemplates links metadata and template labels
    assert_eq!(
        linked_values(
            &[
                (
                    "mid",
                    "resources: [../base]\nlabels:\n- pairs: {env: dev}\n  includeTemplates: true\n"
                ),
                ("top", top_prod)
            ],
            LINK_DEPLOYMENT
        ),
        ["env: prod"; 3]
    );
    // a strategic-merge patch writes in place: the group follows
    assert_eq!(
        linked_values(
            &[
                ("mid", LINK_MID),
                (
                    "top",
                    "resources: [../mid]\npatches:\n\
                     - patch: '{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, labels: {env: patched}}}'\n\
                     - patch: '{apiVersion: v1, kind: Service, metadata: {name: web}, spec: {selector: {env: sel}}}'\n"
                )
            ],
            LINK_DEPLOYMENT
        ),
        [
            "env: sel",
            "env: sel",
            "env: patched",
            "env: patched",
            "env: patched"
        ]
    );
    // so does a replacement
    assert_eq!(
        linked_values(
            &[
                ("mid", LINK_MID),
                (
                    "top",
                    "resources: [../mid]\nreplacements:\n- source: {kind: Deployment, fieldPath: metadata.name}\n  \
                     targets:\n  - select: {kind: Deployment}\n    fieldPaths: [metadata.labels.env]\n"
                )
            ],
            LINK_DEPLOYMENT
        ),
        ["env: dev", "env: dev", "env: web", "env: web", "env: web"]
    );
    // and annotations are linked the same way
    assert_eq!(
        linked_values(
            &[
                (
                    "mid",
                    "resources: [../base]\ncommonAnnotations: {note: one}\n"
                ),
                (
                    "top",
                    "resources: [../mid]\npatches:\n\
                     - patch: '{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, annotations: {note: two}}}'\n"
                )
            ],
            LINK_DEPLOYMENT
        ),
        ["note: one", "note: two", "note: two"]
    );
}

#[test]
fn json_patches_and_deletions_unlink_and_literal_labels_never_link() {
    let top_prod = "resources: [../mid2]\nlabels:\n- pairs: {env: prod}\n";
    // a JSON patch (any path) re-creates the Deployment's nodes; the
    // Service it does not touch stays linked
    assert_eq!(
        linked_values(
            &[
                ("mid", LINK_MID),
                (
                    "mid2",
                    "resources: [../mid]\npatches:\n- target: {kind: Deployment}\n  \
                     patch: '[{\"op\": \"add\", \"path\": \"/spec/replicas\", \"value\": 2}]'\n"
                ),
                ("top", top_prod)
            ],
            LINK_DEPLOYMENT
        ),
        [
            "env: prod",
            "env: prod",
            "env: prod",
            "env: dev",
            "env: dev"
        ]
    );
    // a patch deleting the metadata label takes only it out of the group
    assert_eq!(
        linked_values(
            &[
                ("mid", LINK_MID),
                (
                    "mid2",
                    "resources: [../mid]\npatches:\n\
                     - patch: '{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, labels: {env: null}}}'\n"
                ),
                ("top", top_prod)
            ],
            LINK_DEPLOYMENT
        ),
        [
            "env: prod",
            "env: prod",
            "env: prod",
            "env: dev",
            "env: dev"
        ]
    );
    // labels written in the file are separate nodes
    let literal = LINK_DEPLOYMENT
        .replace(
            "  name: web\nspec:",
            "  name: web\n  labels:\n    env: file\nspec:",
        )
        .replace(
            "      app: web\n  template:",
            "      app: web\n      env: file\n  template:",
        );
    assert_eq!(
        linked_values(
            &[
                ("mid", "resources: [../base]\n"),
                ("mid2", "resources: [../mid]\n"),
                ("top", top_prod)
            ],
            &literal
        ),
        ["env: prod", "env: prod", "env: file"]
    );
    // within one layer patches run before labels: nothing is linked yet
    assert_eq!(
        linked_values(
            &[(
                "top",
                "resources: [../base]\nlabels:\n- pairs: {env: dev}\n  includeSelectors: true\npatches:\n\
                 - patch: '{apiVersion: apps/v1, kind: Deployment, metadata: {name: web, labels: {env: smp}}}'\n"
            )],
            LINK_DEPLOYMENT
        ),
        ["env: dev"; 5]
    );
}

// Rule (name references across a diamond): among several referral
// candidates, kustomize 5.5 first keeps those whose prefix and suffix
// histories end like the referrer's, an empty history matching any; only
// when several remain does it require exact same endings. So a base
// reached through overlays with different prefixes (or suffixes) refers
// to its own copy of a generated ConfigMap even when the referrer, in a
// nested kustomization, got a prefix or suffix of its own.
fn diamond_refs(outer: (&str, &str), service: &str, cms: &str) -> Vec<String> {
    let deployment = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx
        envFrom:
        - configMapRef:
            name: example-configmap
";
    let a = format!("resources: [../common]\n{}\n", outer.0);
    let b = format!("resources: [../common]\n{}\n", outer.1);
    let svc = format!("resources: [deployment.yaml]\n{service}");
    let cm = format!("configMapGenerator:\n- name: example-configmap\n  literals: [a=b]\n{cms}");
    ok(
        &[
            ("/d/kustomization.yaml", "resources: [a, b]\n"),
            ("/d/a/kustomization.yaml", &a),
            ("/d/b/kustomization.yaml", &b),
            (
                "/d/common/kustomization.yaml",
                "resources: [service, cms]\n",
            ),
            ("/d/common/service/kustomization.yaml", &svc),
            ("/d/common/service/deployment.yaml", deployment),
            ("/d/common/cms/kustomization.yaml", &cm),
        ],
        "/d",
    )
    .lines()
    .filter(|l| l.starts_with("            name: "))
    .map(|l| l.trim().trim_start_matches("name: ").to_string())
    .collect()
}

#[test]
fn diamond_name_references_match_on_prefix_and_suffix_history() {
    let prefixes = ("namePrefix: a-", "namePrefix: b-");
    let suffixes = ("nameSuffix: -a", "nameSuffix: -b");
    // the referrer has a suffix of its own; the ConfigMap has none
    assert_eq!(
        diamond_refs(prefixes, "nameSuffix: -api\n", ""),
        [
            "a-example-configmap-4h2mbtbbt6",
            "b-example-configmap-4h2mbtbbt6"
        ]
    );
    // the ConfigMap has a prefix of its own; the referrer none
    assert_eq!(
        diamond_refs(prefixes, "", "namePrefix: q-\n"),
        [
            "a-q-example-configmap-4h2mbtbbt6",
            "b-q-example-configmap-4h2mbtbbt6"
        ]
    );
    // the same with the overlays adding suffixes
    assert_eq!(
        diamond_refs(suffixes, "namePrefix: p-\n", ""),
        [
            "example-configmap-a-4h2mbtbbt6",
            "example-configmap-b-4h2mbtbbt6"
        ]
    );
    assert_eq!(
        diamond_refs(suffixes, "", "nameSuffix: -cm\n"),
        [
            "example-configmap-cm-a-4h2mbtbbt6",
            "example-configmap-cm-b-4h2mbtbbt6"
        ]
    );
    // histories that differ where both have entries never match: the
    // reference is left alone
    assert_eq!(
        diamond_refs(prefixes, "namePrefix: p-\n", "namePrefix: q-\n"),
        ["example-configmap", "example-configmap"]
    );
    assert_eq!(
        diamond_refs(prefixes, "nameSuffix: -api\n", "nameSuffix: -cm\n"),
        ["example-configmap", "example-configmap"]
    );
}

// Rule (nulls written as nothing): kyaml keeps a `key:` with no value apart
// from an explicit `null`/`~`. Without patches both print as `null`. A
// strategic-merge patch applied to the resource walks its maps (and the
// items of lists it merges by key) and drops the fields whose value was
// written as nothing, unless the patch sets them; explicit nulls, nulls in
// lists it does not merge by key (and in a CRD's lists), items of a `*List`
// file and fields a JSON patch saw (it writes JSON, so they are explicit by
// then) stay `null`.
#[test]
fn strategic_merge_drops_nulls_written_as_nothing() {
    let resources = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  replicas:
  template:
    spec:
      affinity:
        nodeAffinity:
          required:
          preferred: ~
          other: null
      tolerations:
      - key: k
        value:
      containers:
      - name: c
        image: x
        args:
        env: ~
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w
spec:
  size:
  items:
  - name: a
    value:
status:
";
    let build = |k: &str| {
        ok(
            &[("/n/r.yaml", resources), ("/n/kustomization.yaml", k)],
            "/n",
        )
    };
    let smp = "patches:
- patch: '{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {paused: true}}'
- patch: '{apiVersion: example.com/v1, kind: Widget, metadata: {name: w}, spec: {other: 1}}'
";
    let nulls = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| l.ends_with(": null"))
            .map(|l| l.trim().trim_start_matches("- ").to_string())
            .collect()
    };
    // no patch: every null is printed
    let plain = build("resources: [r.yaml]\n");
    assert_eq!(nulls(&plain).len(), 10, "{plain}");
    // a patch drops the ones written as nothing, where it walks
    let patched = build(&format!("resources: [r.yaml]\n{smp}"));
    assert_eq!(
        nulls(&patched),
        [
            "other: null",
            "preferred: null",
            "env: null",
            "value: null",
            "value: null"
        ],
        "{patched}"
    );
    assert!(!patched.contains("status"), "{patched}");
    // a patch that sets one keeps its value
    let set = build(
        "resources: [r.yaml]\npatches:\n- patch: '{apiVersion: apps/v1, kind: Deployment, metadata: {name: d}, spec: {replicas: 2}}'\n",
    );
    assert!(
        set.contains("  replicas: 2\n") && !set.contains("required"),
        "{set}"
    );
    // after a JSON patch they are explicit nulls: a later merge keeps them
    let json_first = ok(
        &[
            ("/n/base/r.yaml", resources),
            (
                "/n/base/kustomization.yaml",
                "resources: [r.yaml]\npatches:\n- target: {kind: Deployment}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/paused\", \"value\": true}]'\n",
            ),
            (
                "/n/kustomization.yaml",
                &format!("resources: [base]\n{smp}"),
            ),
        ],
        "/n",
    );
    assert!(
        json_first.contains("required: null") && json_first.contains("replicas: null"),
        "{json_first}"
    );
    // (the Widget, which no JSON patch touched, still loses its own)
    assert_eq!(nulls(&json_first).len(), 8, "{json_first}");
}

// Rule (empty nulls, continued): what makes a null "written as nothing" is
// its empty text, whatever its tag or collection: `!!null`, `!!null ""`,
// an alias of one, and `b: ` in a flow map (which prints as `""`) are
// dropped too where the merge walks; `null` and `~` stay.
#[test]
fn strategic_merge_drops_every_null_of_empty_text() {
    let resource = "apiVersion: example.com/v1
kind: Gadget
metadata:
  name: one
spec:
  b: !!null
  c: !!null ''
  f: !!null \"\"
  g: [!!null , !!null \"\", x, ]
  h: {a: !!null , b: , c: !!null '', d: null}
  i:
  - !!null
  - !!null \"\"
  - k: !!null
  j: &a !!null
  k: *a
  l: !!null # comment
  m: ~
  n:
  - {x: 1, b}
";
    let build = |k: &str| {
        ok(
            &[("/n/r.yaml", resource), ("/n/kustomization.yaml", k)],
            "/n",
        )
    };
    let head = "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: one\nspec:\n";
    let list = "  g:\n  - null\n  - null\n  - x\n";
    let items = "  i:\n  - null\n  - null\n  - k: null\n";
    // (a list the merge does not walk keeps it, `""` in a flow map)
    let kept = "  \"n\":\n  - b: \"\"\n    x: 1\n";
    assert_eq!(
        build("resources: [r.yaml]\n"),
        format!(
            "{head}  b: null\n  c: null\n  f: null\n{list}  h:\n    a: null\n    b: \"\"\n    \
             c: null\n    d: null\n{items}  j: null\n  k: null\n  l: null\n  m: null\n{kept}"
        )
    );
    assert_eq!(
        build(
            "resources: [r.yaml]\npatches:\n- patch: '{apiVersion: example.com/v1, kind: Gadget, metadata: {name: one}, spec: {z: 1}}'\n"
        ),
        format!("{head}{list}  h:\n    d: null\n{items}  m: null\n{kept}  z: 1\n")
    );
}

// Rule (a map merged into itself): go-yaml registers an anchor where its
// map starts, so `x: &a {<<: *a, k: v}` is a merge with itself, which kyaml
// expands to the map; go-yaml v2, which reads JSON patches, gives up, so
// such a patch is a strategic-merge one.
#[test]
fn a_map_merged_into_itself_is_read_in_resources_and_patches() {
    let resource =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: &d\n  <<: *d\n  x: y\n";
    let patch =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: &d\n  <<: *d\n  q: r\n";
    let out = ok(
        &[
            ("/n/r.yaml", resource),
            ("/n/p.yaml", patch),
            (
                "/n/kustomization.yaml",
                "resources: [r.yaml]\npatches:\n- path: p.yaml\n",
            ),
        ],
        "/n",
    );
    assert_eq!(
        out,
        "apiVersion: v1\ndata:\n  q: r\n  x: \"y\"\nkind: ConfigMap\nmetadata:\n  name: a\n"
    );
}

// Rule (annotations of a renaming patch): a `patches` entry allowed to
// change names or kinds marks its patch with an annotation first, through
// kustomize's string maps, so that patch's annotations are their text
// (`~`, `null` and nothing set the annotation to that text instead of
// deleting it, and `annotations: null` deletes nothing); labels stay as
// written (their nulls delete).
#[test]
fn renaming_patches_read_their_annotations_as_text() {
    let resource =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    x: y\n";
    let patch = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    team: ~\n    n: null\n    e:\n    s: 'x'\n  labels:\n    l: ~\n    m:\n";
    let nulled = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations: null\n";
    let build = |patch_file: &str, options: &str| {
        ok(
            &[
                ("/n/r.yaml", resource),
                ("/n/p.yaml", patch),
                ("/n/null.yaml", nulled),
                (
                    "/n/kustomization.yaml",
                    &format!("resources: [r.yaml]\npatches:\n- path: {patch_file}\n{options}"),
                ),
            ],
            "/n",
        )
    };
    let head = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n";
    assert_eq!(
        build("p.yaml", ""),
        format!("{head}    s: x\n    x: \"y\"\n  labels: {{}}\n  name: a\n")
    );
    for option in ["allowNameChange", "allowKindChange"] {
        let options = format!("  options:\n    {option}: true\n");
        assert_eq!(
            build("p.yaml", &options),
            format!(
                "{head}    e: \"\"\n    \"n\": \"null\"\n    s: x\n    team: \"~\"\n    x: \"y\"\n  labels: {{}}\n  name: a\n"
            )
        );
        assert_eq!(
            build("null.yaml", &options),
            format!("{head}    x: \"y\"\n  name: a\n")
        );
    }
    // without the option, `annotations: null` deletes them
    assert_eq!(
        build("null.yaml", ""),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
    );
}

// Rule (annotation values): kustomize prints a resource's annotations from
// their text (`null` and `~` stay as the strings "null" and "~", nothing
// becomes ""), but in a strategic-merge patch a null annotation value
// (`null`, `~` or nothing) deletes the annotation (and adds nothing where
// there was none), and the patch drops annotations written as nothing.
#[test]
fn annotation_nulls_in_patches_delete_and_resources_keep_their_text() {
    let cm = "apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  annotations:
    a: null
    b:
    c: ~
    d: 'null'
    x: keep
";
    let build = |k: &str| ok(&[("/a/cm.yaml", cm), ("/a/kustomization.yaml", k)], "/a");
    let annotations = |out: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| *l != "  annotations:")
            .skip(1)
            .take_while(|l| l.starts_with("    "))
            .map(|l| l.trim().to_string())
            .collect()
    };
    assert_eq!(
        annotations(&build("resources: [cm.yaml]\n")),
        [
            "a: \"null\"",
            "b: \"\"",
            "c: \"~\"",
            "d: \"null\"",
            "x: keep"
        ]
    );
    let patch = |meta: &str| {
        build(&format!(
            "resources: [cm.yaml]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: c\n{meta}"
        ))
    };
    // a patch that does not touch annotations drops the one written as nothing
    assert_eq!(
        annotations(&patch("    data: {k: v}\n")),
        ["a: \"null\"", "c: \"~\"", "d: \"null\"", "x: keep"]
    );
    // null values delete, whatever their spelling; absent ones add nothing
    assert_eq!(
        annotations(&patch(
            "      annotations:\n        a: null\n        d: ~\n        x:\n        new1: null\n        new2:\n"
        )),
        ["c: \"~\""]
    );
}

// Rule (field paths): a leading delimiter is ignored, as kyaml's
// PathSplitter does: `.metadata.annotations.[a/b]` in a replacement is
// `metadata.annotations.[a/b]`.
#[test]
fn a_leading_dot_in_a_replacement_field_path_is_ignored() {
    let out = ok(
        &[
            (
                "/p/r.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\n  namespace: ns1\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n",
            ),
            (
                "/p/kustomization.yaml",
                "resources: [r.yaml]\nreplacements:\n- source: {kind: ConfigMap, fieldPath: .metadata.namespace}\n  targets:\n  - select: {kind: Service}\n    fieldPaths:\n    - .metadata.annotations.[cert-manager.io/inject-ca-from]\n    options: {create: true, delimiter: /}\n",
            ),
        ],
        "/p",
    );
    assert!(
        out.contains("  annotations:\n    cert-manager.io/inject-ca-from: ns1\n"),
        "{out}"
    );
    assert!(!out.contains("\"\":"), "{out}");
}

// Rule (empty lists): transformers that walk lists (images through
// `containers`/`initContainers`, the ImageTagTransformer, namespace on
// RoleBinding subjects, labels, prefixes, replicas) leave an empty list
// empty: it is printed `[]`, never `null`.
#[test]
fn transformers_keep_empty_lists() {
    let files = [
        (
            "/e/d.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      containers: []\n      initContainers: []\n---\napiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: cj\nspec:\n  jobTemplate:\n    spec:\n      template:\n        spec:\n          containers: []\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: rb\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\nsubjects: []\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: s\nspec:\n  ports: []\n",
        ),
        (
            "/e/t.yaml",
            "apiVersion: builtin\nkind: ImageTagTransformer\nmetadata:\n  name: x\nimageTag:\n  name: redis\n  newTag: '7'\n",
        ),
        (
            "/e/kustomization.yaml",
            "resources: [d.yaml]\nnamespace: team\nnamePrefix: p-\nlabels:\n- pairs: {a: b}\n  includeSelectors: true\nimages:\n- name: nginx\n  newTag: '2'\nreplicas:\n- name: d\n  count: 2\ntransformers:\n- t.yaml\n",
        ),
    ];
    let out = ok(&files, "/e");
    let empty: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with(": []"))
        .map(str::trim)
        .collect();
    assert_eq!(
        empty,
        [
            "subjects: []",
            "ports: []",
            "containers: []",
            "initContainers: []",
            "containers: []"
        ],
        "{out}"
    );
    assert!(!out.contains(": null"), "{out}");
}

// Rule: the images transformer walks its field specs (`spec/containers[]/image`
// and the template ones) even where the search for container lists already
// rewrote the image, and a null list on such a path becomes an empty list;
// a null list elsewhere stays null. CustomResourceDefinitions are left alone
// (kustomize issue 890), images inside them included.
#[test]
fn images_turn_null_container_lists_on_their_paths_empty_and_skip_crds() {
    let files = [
        (
            "/r/kustomization.yaml",
            "resources: [r.yaml]\nimages:\n- name: nginx\n  newTag: v2\n",
        ),
        (
            "/r/r.yaml",
            "apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  template:
    spec:
      containers:
      initContainers: ~
      volumes:
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: cj
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.example.com
spec:
  containers:
  - image: nginx
  template:
    spec:
      containers:
",
        ),
    ];
    assert_eq!(
        ok(&files, "/r"),
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.example.com
spec:
  containers:
  - image: nginx
  template:
    spec:
      containers: null
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  template:
    spec:
      containers: []
      initContainers: []
      volumes: null
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: cj
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers: null
"
    );
    // without images: nothing walks those paths
    let mut plain = files;
    plain[0].1 = "resources: [r.yaml]\n";
    assert!(ok(&plain, "/r").contains("      containers: null\n      initContainers: null\n"));
}

// Rule: a kustomization is decoded as JSON, strictly: a number or a
// boolean (YAML 1.1 `yes`, `on`, `y`, ...) where a string belongs fails
// the build, naming the field; builtin plugin configurations take the same
// scalars as text.
#[test]
fn kustomization_strings_refuse_numbers_and_booleans_plugin_configs_do_not() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";
    for (k, want) in [
        (
            "namespace: on\n",
            "bool into Go struct field Kustomization.namespace of type string",
        ),
        (
            "commonAnnotations:\n  a: 1.5\n",
            "number into Go struct field Kustomization.commonAnnotations of type string",
        ),
        (
            "nameSuffix: 0x1F\n",
            "number into Go struct field Kustomization.nameSuffix of type string",
        ),
        (
            "configMapGenerator:\n- name: 1\n  literals: [a=b]\n",
            "number into Go struct field ConfigMapArgs.configMapGenerator.name of type string",
        ),
    ] {
        let e = err(
            &[
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [c.yaml]\n{k}"),
                ),
                ("/r/c.yaml", cm),
            ],
            "/r",
        );
        assert!(e.contains(want), "{k}: {e}");
    }
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [c.yaml]\ntransformers: [t.yaml]\n",
            ),
            ("/r/c.yaml", cm),
            (
                "/r/t.yaml",
                "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: x\nlabels:\n  a: 1\n  b: yes\nfieldSpecs:\n- path: metadata/labels\n  create: true\n",
            ),
        ],
        "/r",
    );
    assert!(
        out.contains("  labels:\n    a: \"1\"\n    b: \"yes\"\n"),
        "{out}"
    );
}

// Rule: kustomize applies `patchesStrategicMerge` patches, and `patches`
// entries with a target, through its resource map, which first copies the
// patch's labels and annotations through string maps: `b: null` sets the
// text "null" instead of deleting, `1.50` stays `"1.50"`, and an empty or
// null `labels:` leaves the target's alone. A `patches` entry without a
// target merges the patch as written (null deletes).
#[test]
fn targeted_and_legacy_patches_copy_labels_and_annotations_as_text() {
    let cm = "apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  labels: {a: x, b: y}
  annotations: {a: x, b: y}
";
    let patch = "apiVersion: v1
kind: ConfigMap
metadata:
  name: c
  labels: {b: null, c: 1.50}
  annotations: {b: ~}
";
    let build = |k: &str| {
        ok(
            &[
                ("/r/kustomization.yaml", k),
                ("/r/c.yaml", cm),
                ("/r/p.yaml", patch),
            ],
            "/r",
        )
    };
    let as_text = "apiVersion: v1
kind: ConfigMap
metadata:
  annotations:
    a: x
    b: \"~\"
  labels:
    a: x
    b: \"null\"
    c: \"1.50\"
  name: c
";
    assert_eq!(
        build("resources: [c.yaml]\npatchesStrategicMerge: [p.yaml]\n"),
        as_text
    );
    assert_eq!(
        build("resources: [c.yaml]\npatches:\n- path: p.yaml\n  target: {kind: ConfigMap}\n"),
        as_text
    );
    assert_eq!(
        build("resources: [c.yaml]\npatches:\n- path: p.yaml\n"),
        "apiVersion: v1
kind: ConfigMap
metadata:
  annotations:
    a: x
  labels:
    a: x
    c: 1.5
  name: c
"
    );
    let kept = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [c.yaml]\npatchesStrategicMerge: [p.yaml]\n",
            ),
            ("/r/c.yaml", cm),
            (
                "/r/p.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: null\n  annotations: {}\n",
            ),
        ],
        "/r",
    );
    assert!(
        kept.contains("  labels:\n    a: x\n    b: \"y\"\n"),
        "{kept}"
    );
    assert!(
        kept.contains("  annotations:\n    a: x\n    b: \"y\"\n"),
        "{kept}"
    );
}

// Rule: generated data keys are not checked (kustomize's validator is a
// no-op): `a b`, `1A`, `..` are keys. A file that is not UTF-8 goes into a
// ConfigMap's binaryData and, byte for byte, into a Secret's data.
#[test]
fn generator_keys_are_unchecked_and_binary_secret_data_is_the_bytes() {
    let out = render_with(
        &[
            (
                "/r/kustomization.yaml",
                b"configMapGenerator:\n- name: c\n  literals: ['a b=1']\n  envs: [a.env]\n  files: [bin.dat]\n\
                  secretGenerator:\n- name: s\n  files: [bin.dat, '..=bin.dat']\n",
            ),
            ("/r/a.env", b"1A=x\nexport B=y\n=gone\n"),
            ("/r/bin.dat", &[0u8, 1, 2, 255, 254]),
        ],
        "/r",
        &BuildOptions::default(),
    )
    .unwrap_or_else(|e| panic!("build failed: {e}"));
    assert!(out.contains("binaryData:\n  bin.dat: AAEC//4=\n"), "{out}");
    assert!(
        out.contains("  1A: x\n  a b: \"1\"\n  export B: \"y\"\n"),
        "{out}"
    );
    assert!(
        out.contains("  ..: AAEC//4=\n  bin.dat: AAEC//4=\n"),
        "{out}"
    );
}

// Rule: kustomize's resource factory replaces each `*List` (with `items`)
// by its items at the end of the file's queue, after the documents still
// to come; an item is read as a stream of its own, so a `List` item is
// unwrapped in place, and a lone `List` document is unwrapped when read.
#[test]
fn list_items_join_the_end_of_the_file() {
    let cm = |n: &str| format!("- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: {n}\n");
    let r = format!(
        "apiVersion: v1\nkind: List\nitems:\n\
         - apiVersion: v1\n  kind: FooList\n  items:\n  {}\
         - apiVersion: v1\n  kind: List\n  items:\n  - apiVersion: v1\n    kind: List\n    items:\n    {}  {}\
         {}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: z\n",
        cm("foo-item").replace("\n  ", "\n    "),
        cm("deep").replace("\n  ", "\n      "),
        cm("mid").replace("\n  ", "\n    "),
        cm("y"),
    );
    let opts = BuildOptions {
        reorder: Some(krmsync::kustomize::Reorder::None),
        ..Default::default()
    };
    let out = render_with(
        &[
            ("/r/kustomization.yaml", b"resources: [r.yaml]\n"),
            ("/r/r.yaml", r.as_bytes()),
        ],
        "/r",
        &opts,
    )
    .unwrap_or_else(|e| panic!("build failed: {e}"));
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .collect();
    assert_eq!(
        names,
        ["z", "mid", "\"y\"", "foo-item", "deep"],
        "{r}\n{out}"
    );
}

// Rule: `configurations:` are merged into the default field specs the way
// kustomize merges field specs: a spec counts as present when one with the
// same path exists whose kind the new one selects, and the lists are then
// sorted by kind and merged again into the layer's empty configuration. So
// a file's `metadata/name` of kind Other takes the place of the default
// `metadata/name` of every kind (nothing else is prefixed), while a spec at
// another path leaves the defaults alone. The same path with another
// `create` is a conflict.
#[test]
fn configurations_merge_into_the_defaults_like_kustomize() {
    let d = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  selector:
    matchLabels: {app: a}
  template:
    metadata:
      labels: {app: a}
";
    let build = |c: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    "resources: [d.yaml]\nconfigurations: [c.yaml]\nnamePrefix: p-\ncommonLabels: {l: v}\n",
                ),
                ("/r/d.yaml", d),
                ("/r/c.yaml", c),
            ],
            "/r",
        )
    };
    let same_path = build(
        "namePrefix:\n- path: metadata/name\n  kind: Other\ncommonLabels:\n- path: metadata/labels\n  kind: Foo\n  create: true\n",
    )
    .unwrap();
    assert!(
        same_path
            .starts_with("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n"),
        "{same_path}"
    );
    assert!(
        same_path.contains("      labels:\n        app: a\n        l: v\n"),
        "{same_path}"
    );
    let other_path = build(
        "namePrefix:\n- path: spec/zzz\n  kind: Other\ncommonLabels:\n- path: spec/zzz\n  kind: Foo\n  create: true\n",
    )
    .unwrap();
    assert!(
        other_path.contains("metadata:\n  labels:\n    l: v\n  name: p-d\n"),
        "{other_path}"
    );
    let e = build("commonLabels:\n- path: metadata/labels\n  kind: Foo\n").unwrap_err();
    assert!(e.to_string().contains("conflicting fieldspecs"), "{e}");
    // read strictly: a repeated key is an error
    let e = build("commonLabels:\n- path: spec/a\ncommonLabels:\n- path: spec/b\n").unwrap_err();
    assert!(
        e.to_string().contains("c.yaml")
            && e.to_string().contains("\"commonLabels\" already defined"),
        "{e}"
    );
}

// Rule: a `tagSuffix` applies only without `newTag` and `digest`, and drops
// the digest; kustomize rewrites each entry's images twice (every
// `containers` list, then the field specs), so where a default field spec
// reaches (a Deployment's template) the suffix is added twice, elsewhere
// (a CronJob's containers) once.
#[test]
fn tag_suffix_drops_the_digest_and_repeats_where_field_specs_reach() {
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [r.yaml]\nimages:\n- name: nginx\n  tagSuffix: -x\n",
            ),
            (
                "/r/r.yaml",
                "apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  template:
    spec:
      containers:
      - name: a
        image: nginx@sha256:0000000000000000000000000000000000000000000000000000000000000000
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: cj
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: a
            image: nginx:1
",
            ),
        ],
        "/r",
    );
    assert!(out.contains("image: nginx:-x-x\n"), "{out}");
    assert!(out.contains("image: nginx:1-x\n"), "{out}");
}

// Rule: kustomize reads a `patches` text both as resources and as JSON
// operations. Text that gives no resource and reads as null or a list
// (`[]`, a comment, `---`) qualifies as both: an error. An empty file is a
// JSON patch of nothing: it needs a target, and then does nothing. In
// `patchesJson6902`, an empty file or an empty patch is an error.
#[test]
fn empty_patch_texts_fail_or_pass_as_kustomize_decides() {
    let d = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n";
    let build = |k: &str, p: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [d.yaml]\n{k}"),
                ),
                ("/r/d.yaml", d),
                ("/r/p.yaml", p),
            ],
            "/r",
        )
    };
    let targeted = "patches:\n- target: {kind: Deployment}\n  path: p.yaml\n";
    let untargeted = "patches:\n- path: p.yaml\n";
    let legacy = "patchesJson6902:\n- target: {group: apps, version: v1, kind: Deployment, name: d}\n  path: p.yaml\n";
    for p in ["[]", "# only a comment\n", "---\n", "null\n"] {
        for k in [targeted, untargeted] {
            let e = build(k, p).unwrap_err().to_string();
            assert!(
                e.contains("illegally qualifies as both an SM and JSON patch"),
                "{p:?}: {e}"
            );
        }
        let e = build(legacy, p).unwrap_err().to_string();
        assert!(e.contains("patch appears to be empty"), "{p:?}: {e}");
    }
    assert_eq!(build(targeted, "").unwrap(), d);
    let e = build(untargeted, "").unwrap_err().to_string();
    assert!(e.contains("must specify a target for JSON patch"), "{e}");
    let e = build(legacy, "").unwrap_err().to_string();
    assert!(e.contains("empty seems to be empty"), "{e}");
}

// Rule: resources and strategic-merge patches are read as kyaml resources:
// without a name (only a `*List` may go without) a resource file fails
// with kustomize's message, and such a patch is not a patch at all.
#[test]
fn resources_and_patches_need_a_name_unless_lists() {
    let e = err(
        &[
            ("/r/kustomization.yaml", "resources: [x.yaml]\n"),
            (
                "/r/x.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: ns\n  labels: {b: c, a: d}\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.contains("missing metadata.name in object {{v1 ConfigMap} {{ ns} map[a:d b:c] map[]}}"),
        "{e}"
    );
    let list = ok(
        &[
            ("/r/kustomization.yaml", "resources: [x.yaml]\n"),
            ("/r/x.yaml", "apiVersion: v1\nkind: FooList\nmetadata: {}\n"),
        ],
        "/r",
    );
    assert!(list.contains("kind: FooList"), "{list}");
    let e = err(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [d.yaml]\npatches:\n- target: {kind: Deployment}\n  patch: |-\n    apiVersion: apps/v1\n    kind: Deployment\n    spec:\n      replicas: 3\n",
            ),
            (
                "/r/d.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n",
            ),
        ],
        "/r",
    );
    assert!(e.contains("unable to parse SM or JSON patch"), "{e}");
}

// Rule: patch text whose first byte is `[` is decoded as strict JSON, with
// JSON's escapes (`\/`, UTF-16 surrogate pairs); YAML flow syntax, trailing
// commas and comments there fail. Text that starts otherwise (an inline
// patch is trimmed first, a file is not) is read as YAML.
#[test]
fn patch_text_starting_with_a_bracket_is_strict_json() {
    let build = |text: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    "resources: [cm.yaml]\npatches:\n- target: {kind: ConfigMap}\n  path: p.json\n",
                ),
                ("/r/cm.yaml", PLAIN_CM),
                ("/r/p.json", text),
            ],
            "/r",
        )
    };
    let out = build(r#"[{"op": "add", "path": "/data/x", "value": "a\/b \ud83d\ude80"}]"#).unwrap();
    assert!(out.contains("  x: \"a/b \\U0001F680\"\n"), "{out}");
    for bad in [
        "[{op: add, path: /data/x, value: y}]",
        r#"[{"op": "add", "path": "/data/x", "value": "a"},]"#,
        r#"[{"op": "add", "path": "/data/x", "value": "a"}] # c"#,
        "[{'op': 'add', 'path': '/data/x', 'value': 'a'}]",
    ] {
        let e = build(bad).expect_err(bad).to_string();
        assert!(e.contains("unable to parse SM or JSON patch"), "{bad}: {e}");
    }
    // not first: YAML, where `y` is true
    let out = build(" [{op: add, path: /data/x, value: y}]").unwrap();
    assert!(out.contains("  x: true\n"), "{out}");
    let inline = "resources: [cm.yaml]\npatches:\n- target: {kind: ConfigMap}\n  patch: ' [{op: add, path: /data/x, value: y}]'\n";
    let e = err(
        &[("/r/kustomization.yaml", inline), ("/r/cm.yaml", PLAIN_CM)],
        "/r",
    );
    assert!(e.contains("unable to parse SM or JSON patch"), "{e}");
}

// Rule: kustomize's last step reads every resource again: a transformer
// that removed a kind, or a name (not of a `*List`), fails the build, and so
// does one that gave two resources the same id (a local one too).
#[test]
fn transformed_resources_need_a_kind_a_name_and_their_own_id() {
    let two = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {z: \"1\", a-b: \"2\", a: \"3\"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n";
    let local = two.replace(
        "name: b\n",
        "name: b\n  annotations: {config.kubernetes.io/local-config: \"true\"}\n",
    );
    let build = |ops: &str, resources: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    &format!(
                        "resources: [r.yaml]\npatches:\n- target: {{kind: ConfigMap}}\n  patch: '{ops}'\n"
                    ),
                ),
                ("/r/r.yaml", resources),
            ],
            "/r",
        )
    };
    let e = build(r#"[{"op": "remove", "path": "/kind"}]"#, two)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("missing kind in object {{v1 } {{a } map[a:3 a-b:2 z:1] map[]}}"),
        "{e}"
    );
    let e = build(r#"[{"op": "remove", "path": "/metadata/name"}]"#, two)
        .unwrap_err()
        .to_string();
    assert!(e.contains("missing metadata.name in object"), "{e}");
    for resources in [two, local.as_str()] {
        let e = build(
            r#"[{"op": "replace", "path": "/metadata/name", "value": "x"}]"#,
            resources,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains(
                "may not add resource with an already registered id: ConfigMap.v1.[noGrp]/x.[noNs]"
            ),
            "{e}"
        );
    }
    // a `*List` needs no name, and one resource renamed is fine
    let list = build(
        r#"[{"op": "replace", "path": "/kind", "value": "FooList"}, {"op": "remove", "path": "/metadata/name"}]"#,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
    )
    .unwrap();
    assert_eq!(list, "apiVersion: v1\nkind: FooList\nmetadata: {}\n");
}

// Rule: `patchesJson6902` runs after the name, namespace, label and
// annotation transformers, on resources that may carry kustomize's internal
// annotations: a resource renamed, moved to a namespace, generated or
// recorded for build metadata has a `/metadata/annotations` map to add to;
// one that only got labels has none. Its inline text is not trimmed.
#[test]
fn legacy_json_patches_see_annotations_of_renamed_or_generated_resources() {
    let patch =
        "patchesJson6902:\n- target: {version: v1, kind: ConfigMap, name: c}\n  path: p.yaml\n";
    let add = "- op: add\n  path: /metadata/annotations/j\n  value: x\n";
    for (kust, works) in [
        ("resources: [cm.yaml]\nnamePrefix: p-\n", true),
        ("resources: [cm.yaml]\nnameSuffix: -s\n", true),
        ("resources: [cm.yaml]\nnamespace: default\n", true),
        (
            "resources: [cm.yaml]\nbuildMetadata: [originAnnotations]\n",
            true,
        ),
        (
            "configMapGenerator:\n- name: c\n  literals: [a=b]\n  options: {disableNameSuffixHash: true}\n",
            true,
        ),
        ("resources: [cm.yaml]\nlabels:\n- pairs: {a: b}\n", false),
        ("resources: [cm.yaml]\n", false),
    ] {
        let k = format!("{kust}{patch}");
        let got = render(
            &[
                ("/r/kustomization.yaml", &k),
                ("/r/cm.yaml", PLAIN_CM),
                ("/r/p.yaml", add),
            ],
            "/r",
        );
        match got {
            Ok(out) => assert!(works && out.contains("\n    j: x\n"), "{k}: {out}"),
            Err(e) => assert!(
                !works && e.to_string().contains("doc is missing path"),
                "{k}: {e}"
            ),
        }
    }
    // the whole map is not the user's: a test against {} fails
    let e = err(
        &[
            (
                "/r/kustomization.yaml",
                &format!("resources: [cm.yaml]\nnamePrefix: p-\n{patch}"),
            ),
            ("/r/cm.yaml", PLAIN_CM),
            (
                "/r/p.yaml",
                "- op: test\n  path: /metadata/annotations\n  value: {}\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.contains("testing value /metadata/annotations failed"),
        "{e}"
    );
    // inline text keeps its final newline (`patches:` trims it)
    let inline = "resources: [cm.yaml]\npatchesJson6902:\n- target: {version: v1, kind: ConfigMap, name: c}\n  patch: |\n    - op: add\n      path: /data/q\n      value: |\n        one\n";
    let out = ok(
        &[("/r/kustomization.yaml", inline), ("/r/cm.yaml", PLAIN_CM)],
        "/r",
    );
    assert!(out.contains("  q: |\n    one\n"), "{out}");
}

// Rule: `configurations:` files and replacement `path:` files are decoded
// like sigs.k8s.io/yaml does: only the first document counts, and a
// configuration is strict (a key that is no field, at any level, fails;
// field names match without regard to case).
#[test]
fn configuration_and_replacement_files_read_their_first_document_strictly() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {x: \"1\", y: \"2\", z: \"3\"}\n";
    let repl = "source: {kind: ConfigMap, fieldPath: data.x}\ntargets:\n- select: {kind: ConfigMap}\n  fieldPaths: [data.y]\n---\nsource: {kind: ConfigMap, fieldPath: data.x}\ntargets:\n- select: {kind: ConfigMap}\n  fieldPaths: [data.z]\n";
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\nreplacements:\n- path: repl.yaml\n",
            ),
            ("/r/cm.yaml", cm),
            ("/r/repl.yaml", repl),
        ],
        "/r",
    );
    assert!(out.contains("  \"y\": \"1\"\n  z: \"3\"\n"), "{out}");
    let with_config = |config: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    "resources: [cm.yaml]\nconfigurations: [c.yaml]\nreplicas:\n- name: a\n  count: 5\n",
                ),
                ("/r/cm.yaml", &format!("{cm}spec: {{size: 1, other: 1}}\n")),
                ("/r/c.yaml", config),
            ],
            "/r",
        )
    };
    let out = with_config(
        "replicas:\n- path: spec/size\n  kind: ConfigMap\n---\nreplicas:\n- path: spec/other\n  kind: ConfigMap\n",
    )
    .unwrap();
    assert!(out.contains("spec:\n  other: 1\n  size: 5\n"), "{out}");
    let out = with_config("REPLICAS:\n- PATH: spec/size\n  Kind: ConfigMap\n").unwrap();
    assert!(out.contains("size: 5"), "{out}");
    for (config, field) in [
        ("foo: []\n", "foo"),
        ("replicas:\n- path: spec/size\n  foo: 1\n", "foo"),
        (
            "replicas:\n- path: spec/size\n  isClusterScoped: true\n",
            "isClusterScoped",
        ),
        ("nameReference:\n- kind: X\n  bar: 1\n", "bar"),
        (
            "nameReference:\n- kind: X\n  fieldSpecs:\n  - {path: a, x: 1}\n",
            "x",
        ),
    ] {
        let e = with_config(config).unwrap_err().to_string();
        assert!(
            e.contains(&format!("c.yaml: error unmarshaling JSON: while decoding JSON: json: unknown field \"{field}\"")),
            "{config}: {e}"
        );
    }
}

// Rule: a scalar that a strategic-merge patch or the replicas transformer
// writes over a quoted (or block) string keeps that quoting: a number or
// boolean there comes out as a string. Over a plain string it stays what
// it is.
#[test]
fn scalars_written_over_quoted_strings_stay_strings() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  q: \"3\"\n  p: foo\n  b: |\n    multi\n  c: \"*x\"\n  f: \" lead\"\n  g: \"-\"\n";
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: a}\n    data: {q: 5, p: 7, b: 8, c: true, f: 9, g: 10}\n",
            ),
            ("/r/cm.yaml", cm),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1\ndata:\n  b: \"8\"\n  c: \"true\"\n  f: \"9\"\n  g: \"10\"\n  p: 7\n  q: \"5\"\nkind: ConfigMap\nmetadata:\n  name: a\n"
    );
    let deployments = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: a\nspec:\n  replicas: \"2\"\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: b\nspec:\n  replicas: foo\n";
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [d.yaml]\nreplicas:\n- {name: a, count: 3}\n- {name: b, count: 4}\n",
            ),
            ("/r/d.yaml", deployments),
        ],
        "/r",
    );
    assert!(out.contains("  replicas: \"3\"\n"), "{out}");
    assert!(out.contains("  replicas: 4\n"), "{out}");
}

// Rule: a generator merging into an existing ConfigMap reads its data as
// strings: numbers and booleans become their text, null an empty string.
#[test]
fn generator_merge_reads_existing_data_as_text() {
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\nconfigMapGenerator:\n- name: cfg\n  behavior: merge\n  literals: [z=1]\n",
            ),
            (
                "/r/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  b: 1\n  e: true\n  f: ~\n",
            ),
        ],
        "/r",
    );
    assert!(
        out.starts_with(
            "apiVersion: v1\ndata:\n  b: \"1\"\n  e: \"true\"\n  f: \"\"\n  z: \"1\"\n"
        ),
        "{out}"
    );
}

// Rule: every resource leaves the build with a metadata map: a `*List`
// without one (or whose metadata a patch removed) gets `metadata: {}`; a
// null one stays null.
#[test]
fn resources_without_metadata_get_an_empty_map() {
    let out = ok(
        &[
            ("/r/kustomization.yaml", "resources: [r.yaml]\n"),
            (
                "/r/r.yaml",
                "kind: List\n---\napiVersion: v1\nkind: FooList\nspec: {a: 1}\n---\napiVersion: v1\nkind: BarList\nmetadata: ~\n",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1\nkind: BarList\nmetadata: null\n---\napiVersion: v1\nkind: FooList\nmetadata: {}\nspec:\n  a: 1\n---\nkind: List\nmetadata: {}\n"
    );
}

// Rule: a strategic-merge patch may repeat a top-level key (kyaml merges
// each field once, from its first entry); a repeated key in a map that the
// target lacks is copied along and fails the build.
#[test]
fn strategic_merge_patches_take_the_first_of_repeated_top_level_keys() {
    let build = |patch: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    "resources: [cm.yaml]\npatches:\n- path: p.yaml\n",
                ),
                (
                    "/r/cm.yaml",
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: \"1\"}\n",
                ),
                ("/r/p.yaml", patch),
            ],
            "/r",
        )
    };
    let out = build("apiVersion: v1\nkind: ConfigMap\nkind: ConfigMap\nmetadata: {name: a}\nmetadata: {name: b}\ndata: {x: \"2\"}\ndata: {y: \"3\"}\n").unwrap();
    assert_eq!(
        out,
        "apiVersion: v1\ndata:\n  x: \"2\"\nkind: ConfigMap\nmetadata:\n  name: a\n"
    );
    // (kustomize fails when it prints the result, krmsync when it reads
    // the patch)
    let nested =
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, labels: {a: \"1\", a: \"2\"}}\n";
    assert!(build(nested).is_err());
}

// Rule: a var's objref matches group, version and kind exactly (kustomize's
// GvknEquals): without its apiVersion it matches no resource.
#[test]
fn var_objrefs_need_the_exact_group_version_kind() {
    let files = |objref: &str| {
        vec![
            (
                "/r/kustomization.yaml".to_string(),
                format!("resources: [pod.yaml, svc.yaml]\nvars:\n- name: V\n  objref: {objref}\n"),
            ),
            (
                "/r/pod.yaml".to_string(),
                "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: i\n    command: [echo, $(V)]\n".to_string(),
            ),
            (
                "/r/svc.yaml".to_string(),
                "apiVersion: v1\nkind: Service\nmetadata:\n  name: svc\n".to_string(),
            ),
        ]
    };
    let build = |objref: &str| {
        let f = files(objref);
        let refs: Vec<(&str, &str)> = f.iter().map(|(p, c)| (p.as_str(), c.as_str())).collect();
        render(&refs, "/r")
    };
    let out = build("{kind: Service, name: svc, apiVersion: v1}").unwrap();
    assert!(out.contains("- svc\n"), "{out}");
    for objref in [
        "{kind: Service, name: svc}",
        "{kind: Service, name: svc, apiVersion: apps/v1}",
    ] {
        let e = build(objref).unwrap_err().to_string();
        assert!(
            e.contains("var 'V' cannot be mapped to a field in the set of known resources"),
            "{objref}: {e}"
        );
    }
    // a name that reads as a number is still a name
    let out = ok(
        &[
            ("/r/kustomization.yaml", "resources: [x.yaml]\n"),
            (
                "/r/x.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 1\n",
            ),
        ],
        "/r",
    );
    assert!(out.contains("  name: 1\n"), "{out}");
}

// Rule: a `crds:` file (its first document) is a map of OpenAPI
// definitions; another shape is an error naming the file (an empty file
// makes kustomize panic).
#[test]
fn crds_files_must_be_maps_of_definitions() {
    let build = |crd: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    "resources: [cm.yaml]\ncrds: [crd.json]\n",
                ),
                (
                    "/r/cm.yaml",
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
                ),
                ("/r/crd.json", crd),
            ],
            "/r",
        )
    };
    for ok in [
        "{\"a\": {\"Schema\": {}}}",
        "a: null\n",
        "a: {}\n---\nb: 1\n",
    ] {
        assert!(build(ok).is_ok(), "{ok}");
    }
    for (bad, msg) in [
        (
            "a: b\n",
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal string into Go value of type accumulator.OpenAPIDefinition",
        ),
        (
            "{\"a\": [1]}",
            "json: cannot unmarshal array into Go value of type accumulator.OpenAPIDefinition",
        ),
        (
            "[1]\n",
            "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array into Go value of type accumulator.nameToApiMap",
        ),
        ("", "the file is empty"),
    ] {
        let e = build(bad).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "unable to parse open API definition from 'crd.json': {msg}"
            )),
            "{bad}: {e}"
        );
    }
}

// Rule: a field that a replacement creates is read as plain YAML (`"0777"`
// becomes the integer 511, `"~"` and `""` become null), except an
// annotation: kustomize reads every annotation back as its text at the end
// of a build, so a created annotation keeps the text it was given. A later
// replacement that reads such an annotation gets that text.
#[test]
fn created_annotations_keep_the_text_of_their_value() {
    let out = ok(
        &[
            ("/r/r.yaml", R_CREATED_ANNOTATIONS),
            (
                "/r/kustomization.yaml",
                "resources: [r.yaml]
replacements:
- source: {kind: ConfigMap, fieldPath: data.octal}
  targets:
  - select: {kind: Service}
    fieldPaths: [metadata.annotations.octal, metadata.labels.octal, spec.octal]
    options: {create: true}
- source: {kind: ConfigMap, fieldPath: data.float}
  targets:
  - select: {kind: Service}
    fieldPaths: [metadata.annotations.float, spec.float]
    options: {create: true}
- source: {kind: ConfigMap, fieldPath: data.tilde}
  targets:
  - select: {kind: Service}
    fieldPaths: [metadata.annotations.tilde, spec.tilde]
    options: {create: true}
- source: {kind: ConfigMap, fieldPath: data.empty}
  targets:
  - select: {kind: Service}
    fieldPaths: [metadata.annotations.empty, spec.empty]
    options: {create: true}
- source: {kind: ConfigMap, fieldPath: data.num}
  targets:
  - select: {kind: Service}
    fieldPaths: [metadata.annotations.num, metadata.annotations.kept, spec.num]
    options: {create: true}
- source: {kind: Service, fieldPath: metadata.annotations.octal}
  targets:
  - select: {kind: ConfigMap}
    fieldPaths: [data.copied]
    options: {create: true}
",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1
data:
  copied: 511
  empty: \"\"
  float: \"1.50\"
  num: \"42\"
  octal: \"0777\"
  tilde: \"~\"
kind: ConfigMap
metadata:
  name: src
---
apiVersion: v1
kind: Service
metadata:
  annotations:
    empty: \"\"
    float: \"1.50\"
    kept: \"42\"
    num: \"42\"
    octal: \"0777\"
    tilde: \"~\"
  labels:
    octal: 511
  name: s
spec:
  empty: null
  float: 1.5
  num: 42
  octal: 511
  tilde: null
"
    );
}

const R_CREATED_ANNOTATIONS: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: src
data:
  octal: \"0777\"
  float: \"1.50\"
  tilde: \"~\"
  empty: \"\"
  num: \"42\"
---
apiVersion: v1
kind: Service
metadata:
  name: s
  annotations:
    kept: \"0777\"
";

// Rule: a field a replacement created stays untyped (kyaml leaves the node
// without a tag) until something re-creates the resource's nodes: a later
// replacement writing there, in the same kustomization or an overlay,
// reads its new text as plain YAML again, a delimiter splits the text it
// holds, and a replacement reading it gets that text (`007`, not `7`). A
// JSON patch in between types it.
#[test]
fn fields_created_by_a_replacement_stay_untyped() {
    let files: &[(&str, &str)] = &[
        (
            "/r/base/r.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\ndata:\n  word: abc\n  num: \"42\"\n  zeros: \"007\"\n  dash: \"- z\"\n  copied: x\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        env:\n        - name: E\n          value: v\n",
        ),
        (
            "/r/base/kustomization.yaml",
            "resources: [r.yaml]\nreplacements:\n- source: {kind: ConfigMap, fieldPath: data.word}\n  targets:\n  - select: {kind: Deployment}\n    fieldPaths: [spec.template.metadata.labels.from-word, metadata.annotations.from-word]\n    options: {create: true}\n- source: {kind: ConfigMap, fieldPath: data.zeros}\n  targets:\n  - select: {kind: Deployment}\n    fieldPaths: ['spec.template.spec.containers.[name=c].env.[name=NEW].value']\n    options: {create: true}\n# the created field gives its text, not the number it reads as\n- source: {kind: Deployment, fieldPath: 'spec.template.spec.containers.[name=c].env.[name=NEW].value'}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [data.copied]\n# [name=E] also matches NEW: the field made just before takes the text as it comes\n- source: {kind: ConfigMap, fieldPath: data.dash}\n  targets:\n  - select: {kind: Deployment}\n    fieldPaths: ['spec.template.spec.containers.[name=c].env.[name=E].value']\n",
        ),
        (
            "/r/ov/kustomization.yaml",
            "resources: [../base]\nnamePrefix: p-\nreplacements:\n- source: {kind: ConfigMap, fieldPath: data.num}\n  targets:\n  - select: {kind: Deployment}\n    fieldPaths: [spec.template.metadata.labels.from-word, metadata.annotations.from-word]\n- source: {kind: ConfigMap, fieldPath: data.word}\n  targets:\n  - select: {kind: Deployment}\n    fieldPaths: [spec.template.metadata.labels.from-word]\n    options: {delimiter: '-', index: 1}\n",
        ),
        (
            "/r/ovj/kustomization.yaml",
            "resources: [../base]\npatches:\n- target: {kind: Deployment}\n  patch: '[{\"op\": \"add\", \"path\": \"/spec/replicas\", \"value\": 2}]'\nreplacements:\n- source: {kind: ConfigMap, fieldPath: data.num}\n  targets:\n  - select: {kind: Deployment}\n    fieldPaths: [spec.template.metadata.labels.from-word]\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r/base"),
        "apiVersion: v1\ndata:\n  copied: \"007\"\n  dash: '- z'\n  num: \"42\"\n  word: abc\n  zeros: \"007\"\nkind: ConfigMap\nmetadata:\n  name: src\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    from-word: abc\n  name: web\nspec:\n  template:\n    metadata:\n      labels:\n        from-word: abc\n    spec:\n      containers:\n      - env:\n        - name: E\n          value: '- z'\n        - name: NEW\n          value: '- z'\n        image: nginx\n        name: c\n",
        "base"
    );
    assert_eq!(
        ok(files, "/r/ov"),
        "apiVersion: v1\ndata:\n  copied: \"007\"\n  dash: '- z'\n  num: \"42\"\n  word: abc\n  zeros: \"007\"\nkind: ConfigMap\nmetadata:\n  name: p-src\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    from-word: \"42\"\n  name: p-web\nspec:\n  template:\n    metadata:\n      labels:\n        from-word: 42-abc\n    spec:\n      containers:\n      - env:\n        - name: E\n          value: '- z'\n        - name: NEW\n          value: '- z'\n        image: nginx\n        name: c\n",
        "ov"
    );
    assert_eq!(
        ok(files, "/r/ovj"),
        "apiVersion: v1\ndata:\n  copied: \"007\"\n  dash: '- z'\n  num: \"42\"\n  word: abc\n  zeros: \"007\"\nkind: ConfigMap\nmetadata:\n  name: src\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    from-word: abc\n  name: web\nspec:\n  replicas: 2\n  template:\n    metadata:\n      labels:\n        from-word: \"42\"\n    spec:\n      containers:\n      - env:\n        - name: E\n          value: '- z'\n        - name: NEW\n          value: '- z'\n        image: nginx\n        name: c\n",
        "ovj"
    );
}

// Rule: text a replacement writes into a typed field that the type cannot
// read (`xhigh` into `replicas: 1`) fails only when kustomize decodes the
// resource: at the build's output, or a JSON patch on it (reported without
// the map type). Fitting text written over it first, by an overlay's
// `replicas:` or a later replacement, makes the build succeed.
#[test]
fn text_that_does_not_fit_a_typed_field_fails_only_if_it_stays() {
    let files: &[(&str, &str)] = &[
        (
            "/r/base/r.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\ndata:\n  word: xhigh\n  num: \"3\"\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: db\nspec:\n  replicas: 1\n",
        ),
        (
            "/r/base/kustomization.yaml",
            "resources: [r.yaml]\nreplacements:\n- source: {name: src, fieldPath: data.word}\n  targets:\n  - select: {name: db}\n    fieldPaths: [spec.replicas]\n",
        ),
        (
            "/r/fixed/kustomization.yaml",
            "resources: [../base]\nreplicas:\n- name: db\n  count: 2\n",
        ),
        (
            "/r/prefixed/kustomization.yaml",
            "resources: [../base]\nnamePrefix: p-\n",
        ),
        (
            "/r/patched/kustomization.yaml",
            "resources: [../base]\npatches:\n- target: {kind: Deployment}\n  patch: '[{\"op\": \"add\", \"path\": \"/metadata/labels\", \"value\": {\"a\": \"b\"}}]'\n",
        ),
        (
            "/r/again/kustomization.yaml",
            "resources: [../base]\nreplacements:\n- source: {name: src, fieldPath: data.num}\n  targets:\n  - select: {name: db}\n    fieldPaths: [spec.replicas]\n",
        ),
    ];
    let fails = |root: &str| match render(files, root) {
        Ok(out) => panic!("{root}: build succeeded:\n{out}"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        fails("/r/base"),
        "map[string]interface {}(nil): yaml: cannot decode !!str `xhigh` as a !!int"
    );
    assert_eq!(
        fails("/r/prefixed"),
        "map[string]interface {}(nil): yaml: cannot decode !!str `xhigh` as a !!int"
    );
    assert_eq!(
        fails("/r/patched"),
        "yaml: cannot decode !!str `xhigh` as a !!int"
    );
    assert_eq!(
        ok(files, "/r/fixed"),
        "apiVersion: v1\ndata:\n  num: \"3\"\n  word: xhigh\nkind: ConfigMap\nmetadata:\n  name: src\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: db\nspec:\n  replicas: 2\n"
    );
    assert_eq!(
        ok(files, "/r/again"),
        "apiVersion: v1\ndata:\n  num: \"3\"\n  word: xhigh\nkind: ConfigMap\nmetadata:\n  name: src\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: db\nspec:\n  replicas: 3\n"
    );
}

/// kyaml prints a folded block scalar with go-yaml v3 and reads it back
/// before output; that printer adds a line break before a more-indented
/// line and at the end of a kept value, and joins the lines of a value that
/// starts with a blank (expected text from `kubectl kustomize`). A field a
/// strategic-merge patch adds keeps the patch's folded style too.
#[test]
fn folded_scalars_come_out_as_kyaml_prints_and_rereads_them() {
    let out = ok(
        &[
            (
                "/r/r.yaml",
                "apiVersion: v1
kind: ConfigMap
metadata:
  name: notes
data:
  plain: >
    joined
    lines
  indented: >
    text
      more indented
    back
  kept: >+
    keep

  blank_first: >2
      indented
    second
    third
",
            ),
            (
                "/r/p.yaml",
                "apiVersion: v1
kind: ConfigMap
metadata:
  name: notes
data:
  added: >-
    from
      the patch
",
            ),
            (
                "/r/kustomization.yaml",
                "resources: [r.yaml]\npatches:\n- path: p.yaml\n",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1
data:
  added: |-
    from

      the patch
  blank_first: |2
      indented
    second third
  indented: |
    text

      more indented
    back
  kept: |+
    keep


  plain: |
    joined lines
kind: ConfigMap
metadata:
  name: notes
"
    );
}

/// go-yaml takes a tab for indentation where a block scalar's indentation
/// is not known yet: in the input (no indentation indicator), and when
/// kyaml prints a value starting with a tab (it writes no indicator).
#[test]
fn block_scalars_starting_with_a_tab_fail_as_in_kustomize() {
    let tab = |header: &str| {
        err(
            &[
                (
                    "/r/r.yaml",
                    &format!(
                        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tabs\ndata:\n  k: \
                         {header}\n    \tstarts with a tab\n"
                    ),
                ),
                ("/r/kustomization.yaml", "resources: [r.yaml]\n"),
            ],
            "/r",
        )
    };
    assert_eq!(
        tab("|"),
        "accumulating resources: accumulating resources from 'r.yaml': MalformedYAMLError: \
         yaml: line 6: found a tab character where an indentation space is expected in File: \
         r.yaml"
    );
    let printed = tab("|2");
    assert!(
        printed.contains(
            "map[string]interface {}{\"apiVersion\":\"v1\", \"data\":map[string]interface \
             {}{\"k\":\"\\tstarts with a tab\\n\"}, \"kind\":\"ConfigMap\", \
             \"metadata\":map[string]interface {}{\"name\":\"tabs\"}}: yaml: line 6: found a \
             tab character where an indentation space is expected"
        ),
        "{printed}"
    );
}

// Rule: kyaml keeps the text a scalar was written with, and a replacement
// copies that text: into a string field, an annotation or a delimited part
// it stays as written (`0600`, `1.50`, `True`); a field the replacement
// creates reads it as plain YAML again (384). A JSON patch on the source
// re-creates its nodes from JSON, and the text is gone (expected text from
// `kubectl kustomize`).
#[test]
fn replacements_copy_a_scalar_as_its_file_wrote_it() {
    let files: &[(&str, &str)] = &[
        (
            "/r/src/r.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  mode: 0600\n  ratio: 1.50\n  flag: True\n  day: 2001-12-14\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\ndata:\n  mode: x\n  image: \"repo:tag\"\n  count: \"1\"\n",
        ),
        ("/r/src/kustomization.yaml", "resources: [r.yaml]\n"),
        (
            "/r/ov/kustomization.yaml",
            "resources: [../src]\nreplacements:\n- source: {kind: Widget, fieldPath: spec.mode}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [data.mode, metadata.annotations.mode, metadata.labels.mode, data.new-mode]\n    options: {create: true}\n- source: {kind: Widget, fieldPath: spec.ratio}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [data.image]\n    options: {delimiter: ':', index: 1}\n- source: {kind: Widget, fieldPath: spec.flag}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [metadata.annotations.flag]\n    options: {create: true}\n- source: {kind: Widget, fieldPath: spec.day}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [data.day]\n    options: {create: true}\n",
        ),
        (
            "/r/jp/kustomization.yaml",
            "resources: [../src]\nreplacements:\n- source: {kind: Widget, fieldPath: spec.mode}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [data.mode, metadata.annotations.mode, metadata.labels.mode, data.new-mode]\n    options: {create: true}\n- source: {kind: Widget, fieldPath: spec.ratio}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [data.image]\n    options: {delimiter: ':', index: 1}\n- source: {kind: Widget, fieldPath: spec.flag}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [metadata.annotations.flag]\n    options: {create: true}\n- source: {kind: Widget, fieldPath: spec.day}\n  targets:\n  - select: {kind: ConfigMap}\n    fieldPaths: [data.day]\n    options: {create: true}\npatches:\n- target: {kind: Widget}\n  patch: '[{\"op\": \"add\", \"path\": \"/metadata/labels\", \"value\": {\"a\": \"b\"}}]'\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r/ov"),
        "apiVersion: v1\ndata:\n  count: \"1\"\n  day: \"2001-12-14T00:00:00Z\"\n  image: repo:1.50\n  mode: \"0600\"\n  new-mode: 384\nkind: ConfigMap\nmetadata:\n  annotations:\n    flag: \"True\"\n    mode: \"0600\"\n  labels:\n    mode: 384\n  name: t\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  day: \"2001-12-14T00:00:00Z\"\n  flag: true\n  mode: 384\n  ratio: 1.5\n",
        "ov"
    );
    assert_eq!(
        ok(files, "/r/jp"),
        "apiVersion: v1\ndata:\n  count: \"1\"\n  day: \"2001-12-14T00:00:00Z\"\n  image: repo:1.5\n  mode: \"384\"\n  new-mode: 384\nkind: ConfigMap\nmetadata:\n  annotations:\n    flag: \"true\"\n    mode: \"384\"\n  labels:\n    mode: 384\n  name: t\n---\napiVersion: example.com/v1\nkind: Widget\nmetadata:\n  labels:\n    a: b\n  name: w\nspec:\n  day: \"2001-12-14T00:00:00Z\"\n  flag: true\n  mode: 384\n  ratio: 1.5\n",
        "jp"
    );
}

// Rule: a var reads a scalar the way kyaml's `GetFieldValue` does: from its
// text, by its type, with Go's `strconv` (`0600` is 600 and `-012` is -12,
// where the resource itself prints 384 and -10; `0x1F` does not parse, and
// the var is "not found"); a null or a timestamp gives its text (expected
// text from `kubectl kustomize`).
#[test]
fn vars_read_a_scalar_from_its_text_by_its_type() {
    let files: &[(&str, &str)] = &[
        (
            "/r/ok/r.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  mode: 0600\n  neg: -012\n  ratio: 1.50\n  none: ~\n  day: 2001-12-14\n  flag: TRUE\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: x\n    args: [\"$(MODE)\", \"$(NEG)\", \"$(RATIO)\", \"$(NONE)\", \"$(DAY)\", \"$(FLAG)\", \"--mode=$(MODE) --none=$(NONE)\"]\n",
        ),
        (
            "/r/ok/kustomization.yaml",
            "resources: [r.yaml]\nvars:\n- name: MODE\n  objref: {kind: Widget, name: w, apiVersion: example.com/v1}\n  fieldref: {fieldpath: spec.mode}\n- name: NEG\n  objref: {kind: Widget, name: w, apiVersion: example.com/v1}\n  fieldref: {fieldpath: spec.neg}\n- name: RATIO\n  objref: {kind: Widget, name: w, apiVersion: example.com/v1}\n  fieldref: {fieldpath: spec.ratio}\n- name: NONE\n  objref: {kind: Widget, name: w, apiVersion: example.com/v1}\n  fieldref: {fieldpath: spec.none}\n- name: DAY\n  objref: {kind: Widget, name: w, apiVersion: example.com/v1}\n  fieldref: {fieldpath: spec.day}\n- name: FLAG\n  objref: {kind: Widget, name: w, apiVersion: example.com/v1}\n  fieldref: {fieldpath: spec.flag}\n",
        ),
        (
            "/r/bad/r.yaml",
            "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  hex: 0x1F\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: x\n    args: [\"$(HEX)\"]\n",
        ),
        (
            "/r/bad/kustomization.yaml",
            "resources: [r.yaml]\nvars:\n- name: HEX\n  objref: {kind: Widget, name: w, apiVersion: example.com/v1}\n  fieldref: {fieldpath: spec.hex}\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r/ok"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  day: \"2001-12-14T00:00:00Z\"\n  flag: true\n  mode: 384\n  neg: -10\n  none: null\n  ratio: 1.5\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - args:\n    - 600\n    - -12\n    - 1.5\n    - \"~\"\n    - \"2001-12-14\"\n    - true\n    - --mode=600 --none=~\n    image: x\n    name: c\n"
    );
    assert_eq!(
        err(files, "/r/bad"),
        "field specified in var 'HEX' not found in corresponding resource: spec.hex"
    );
}

// Rule: the images transformer writes an image through kyaml's scalar
// setter, which leaves the node untyped: its text reads as plain YAML (a
// new name `7` is the number 7, `null` a null), and so does text a later
// replacement writes there (`3` into a rewritten image is a number, into
// an untouched one a string). The custom field specs of `configurations:`
// behave the same (expected text from `kubectl kustomize`).
#[test]
fn images_the_images_transformer_rewrote_are_untyped() {
    let files: &[(&str, &str)] = &[
        (
            "/r/base/r.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\ndata:\n  n: \"3\"\n  b: \"true\"\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: a\n        image: nginx\n      - name: b\n        image: busybox\n      - name: c\n        image: redis\n---\napiVersion: example.com/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  runner:\n    image: alpine\n",
        ),
        (
            "/r/base/images.yaml",
            "images:\n- path: spec/runner/image\n  kind: Job\n",
        ),
        (
            "/r/base/kustomization.yaml",
            "resources: [r.yaml]\nconfigurations: [images.yaml]\nimages:\n- name: nginx\n  newTag: \"1.25\"\n- name: busybox\n  newName: \"7\"\n- name: alpine\n  newName: \"null\"\n",
        ),
        (
            "/r/ov/kustomization.yaml",
            "resources: [../base]\nreplacements:\n- source: {kind: ConfigMap, fieldPath: data.n}\n  targets:\n  - select: {kind: Deployment}\n    fieldPaths: ['spec.template.spec.containers.[name=a].image', 'spec.template.spec.containers.[name=c].image']\n- source: {kind: ConfigMap, fieldPath: data.b}\n  targets:\n  - select: {kind: Job}\n    fieldPaths: [spec.runner.image]\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r/base"),
        "apiVersion: v1\ndata:\n  b: \"true\"\n  \"n\": \"3\"\nkind: ConfigMap\nmetadata:\n  name: src\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - image: nginx:1.25\n        name: a\n      - image: 7\n        name: b\n      - image: redis\n        name: c\n---\napiVersion: example.com/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  runner:\n    image: null\n",
        "base"
    );
    assert_eq!(
        ok(files, "/r/ov"),
        "apiVersion: v1\ndata:\n  b: \"true\"\n  \"n\": \"3\"\nkind: ConfigMap\nmetadata:\n  name: src\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - image: 3\n        name: a\n      - image: 7\n        name: b\n      - image: \"3\"\n        name: c\n---\napiVersion: example.com/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n  runner:\n    image: true\n",
        "ov"
    );
}

// Rule: kyaml reads a scalar's text whatever its type, so a name written
// as a number, a boolean or a float (`name: 23`, `name: 1.50`) is the name
// `23` or `1.50`: ids, patch targets, strategic-merge patches and name
// references all use that text. The scalar setters (namePrefix/nameSuffix,
// name references, images) keep the node's style and drop its tag: a
// plain-written scalar gets text that reads as plain YAML again (`1230`
// is a number, `11.500` prints as 11.5 but keeps its text for an overlay's
// prefix), a quoted one (`"42"`, `'123'`) stays a string.
#[test]
fn names_written_as_numbers_are_read_as_their_text() {
    let files: &[(&str, &str)] = &[
        (
            "/r/base/kustomization.yaml",
            "namePrefix: \"1\"\nnameSuffix: \"0\"\nresources: [r.yaml]\npatches:\n- path: p.yaml\n- target: {kind: ConfigMap, name: \"42\"}\n  patch: |-\n    - op: add\n      path: /metadata/labels\n      value: {t: x}\n",
        ),
        (
            "/r/base/r.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 23\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"42\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 1.50\n  namespace: 7\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: true\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod\nspec:\n  containers:\n  - name: c\n    image: 123\n  - name: d\n    image: '123'\n  - name: e\n    image: busybox\n  volumes:\n  - name: a\n    configMap:\n      name: 23\n  - name: b\n    configMap:\n      name: \"42\"\n  - name: c\n    secret:\n      secretName: true\n",
        ),
        (
            "/r/base/p.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 23\ndata:\n  patched: \"yes\"\n",
        ),
        (
            "/r/ov/kustomization.yaml",
            "namePrefix: a-\nresources: [../base]\nimages:\n- name: \"123\"\n  newName: \"456\"\n- name: busybox\n  newName: \"7\"\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r/base"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 11.5\n  namespace: 7\n---\napiVersion: v1\ndata:\n  patched: \"yes\"\nkind: ConfigMap\nmetadata:\n  name: 1230\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    t: x\n  name: \"1420\"\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: 1true0\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: 1pod0\nspec:\n  containers:\n  - image: 123\n    name: c\n  - image: \"123\"\n    name: d\n  - image: busybox\n    name: e\n  volumes:\n  - configMap:\n      name: 1230\n    name: a\n  - configMap:\n      name: \"1420\"\n    name: b\n  - name: c\n    secret:\n      secretName: 1true0\n",
        "base"
    );
    assert_eq!(
        ok(files, "/r/ov"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-11.500\n  namespace: 7\n---\napiVersion: v1\ndata:\n  patched: \"yes\"\nkind: ConfigMap\nmetadata:\n  name: a-1230\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels:\n    t: x\n  name: a-1420\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: a-1true0\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: a-1pod0\nspec:\n  containers:\n  - image: 456\n    name: c\n  - image: \"456\"\n    name: d\n  - image: 7\n    name: e\n  volumes:\n  - configMap:\n      name: a-1230\n    name: a\n  - configMap:\n      name: a-1420\n    name: b\n  - name: c\n    secret:\n      secretName: a-1true0\n",
        "ov"
    );
}

// Rule: a namespace transformer with `unsetOnly: true` leaves every
// namespace that has text, whatever its type: `namespace: 23` is set.
#[test]
fn unset_only_namespace_keeps_a_namespace_written_as_a_number() {
    let files: &[(&str, &str)] = &[
        (
            "/r/kustomization.yaml",
            "resources: [r.yaml]\ntransformers: [t.yaml]\n",
        ),
        (
            "/r/t.yaml",
            "apiVersion: builtin\nkind: NamespaceTransformer\nmetadata:\n  name: t\n  namespace: team\nunsetOnly: true\n",
        ),
        (
            "/r/r.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: 23\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\n  namespace: \"\"\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: 23\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"y\"\n  namespace: team\n"
    );
}

// Rule: a strategic-merge patch finds its target by the text of its
// `metadata.name` and `metadata.namespace`, as written in the patch file:
// `name: 0600` in both the resource and the patch matches, though the
// value prints as 384 (and `1.50`, `True`, `0x1F` alike), in
// `patchesStrategicMerge` and in a `patches` entry without a target.
#[test]
fn strategic_merge_patches_find_targets_by_the_text_of_their_names() {
    let files: &[(&str, &str)] = &[
        (
            "/r/kustomization.yaml",
            "resources: [r.yaml]\npatchesStrategicMerge: [p1.yaml]\npatches:\n- path: p2.yaml\n",
        ),
        (
            "/r/r.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 0600\n  namespace: 1.50\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: True\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 0x1F\n",
        ),
        (
            "/r/p1.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 0600\n  namespace: 1.50\ndata:\n  a: b\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: True\ndata:\n  c: d\n",
        ),
        (
            "/r/p2.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: 0x1F\ndata:\n  e: f\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r"),
        "apiVersion: v1\ndata:\n  a: b\nkind: ConfigMap\nmetadata:\n  name: 384\n  namespace: 1.5\n---\napiVersion: v1\ndata:\n  e: f\nkind: ConfigMap\nmetadata:\n  name: 31\n---\napiVersion: v1\ndata:\n  c: d\nkind: ConfigMap\nmetadata:\n  name: true\n"
    );
}

// Rule: after a strategic-merge patch, kustomize sets the target's name
// and namespace back with kyaml's `SetName`/`SetNamespace`, which leave
// plain-written fields untyped: an overlay's replacement writing `3` there
// gives the number 3, not the string "3".
#[test]
fn a_strategic_merge_patch_leaves_name_and_namespace_untyped() {
    let files: &[(&str, &str)] = &[
        (
            "/r/base/kustomization.yaml",
            "resources: [r.yaml]\npatches:\n- patch: |-\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: x\n      namespace: team\n    data:\n      p: q\n",
        ),
        (
            "/r/base/r.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: team\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\n  namespace: team\ndata:\n  n: \"3\"\n",
        ),
        (
            "/r/ov/kustomization.yaml",
            "resources: [../base]\nreplacements:\n- source: {kind: ConfigMap, name: src, fieldPath: data.n}\n  targets:\n  - select: {kind: ConfigMap, name: x}\n    fieldPaths: [metadata.name, metadata.namespace]\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r/ov"),
        "apiVersion: v1\ndata:\n  p: q\nkind: ConfigMap\nmetadata:\n  name: 3\n  namespace: 3\n---\napiVersion: v1\ndata:\n  \"n\": \"3\"\nkind: ConfigMap\nmetadata:\n  name: src\n  namespace: team\n"
    );
}

// Rule: label selectors (patch targets, replacement `select` and `reject`)
// read a label's value as the text its file wrote, as kyaml's `GetLabels`
// does: `tier: 1.50` matches `tier=1.50` (not `tier=1.5`, though it prints
// 1.5), `mode: 0600` is in `(0600,0700)`, `flag: True` matches
// `flag=True`. A JSON patch re-creates the nodes, so after one the label
// reads as it prints (`a` and `b` no longer match `flag=True`).
#[test]
fn label_selectors_read_labels_as_their_file_wrote_them() {
    let files: &[(&str, &str)] = &[
        (
            "/r/kustomization.yaml",
            "resources: [r.yaml]\npatches:\n- target: {labelSelector: \"tier=1.50\"}\n  patch: |-\n    - op: add\n      path: /data/patched\n      value: \"yes\"\n- target: {labelSelector: \"mode in (0600,0700)\"}\n  patch: |-\n    - op: add\n      path: /data/mode\n      value: matched\nreplacements:\n- source: {kind: ConfigMap, name: src, fieldPath: data.v}\n  targets:\n  - select: {kind: ConfigMap, labelSelector: \"flag=True\"}\n    reject: [{labelSelector: \"tier=1.5\"}]\n    fieldPaths: [data.copied]\n    options: {create: true}\n",
        ),
        (
            "/r/r.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    tier: 1.50\n    flag: True\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  labels:\n    mode: 0600\n    flag: True\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels:\n    tier: \"1.5\"\n    flag: True\ndata:\n  k: v\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: src\ndata:\n  v: from-src\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\n  labels:\n    flag: True\n",
        ),
    ];
    assert_eq!(
        ok(files, "/r"),
        "apiVersion: v1\ndata:\n  k: v\n  patched: \"yes\"\nkind: ConfigMap\nmetadata:\n  labels:\n    flag: true\n    tier: 1.5\n  name: a\n---\napiVersion: v1\ndata:\n  k: v\n  mode: matched\nkind: ConfigMap\nmetadata:\n  labels:\n    flag: true\n    mode: 384\n  name: b\n---\napiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  labels:\n    flag: true\n    tier: \"1.5\"\n  name: c\n---\napiVersion: v1\ndata:\n  copied: from-src\nkind: ConfigMap\nmetadata:\n  labels:\n    flag: true\n  name: d\n---\napiVersion: v1\ndata:\n  v: from-src\nkind: ConfigMap\nmetadata:\n  name: src\n"
    );
}

// Rule: kustomize keeps its build bookkeeping in annotations, so the same
// annotations in a resource file (as KRM tooling writes them) take effect
// and are removed from the output: previous names/kinds/namespaces are
// the resource's earlier ids (a replacement or patch finds it by them),
// `needsHashSuffix: enabled` adds the hash (and references follow it),
// `config.kubernetes.io/index`/`path` and the other internal ones vanish.
// Other annotations, `kustomize.config.k8s.io/id` among them, stay.
#[test]
fn bookkeeping_annotations_in_files_take_effect_and_are_removed() {
    let deploy = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  annotations:
    internal.config.kubernetes.io/previousNames: old-web
    internal.config.kubernetes.io/previousKinds: StatefulSet
    internal.config.kubernetes.io/previousNamespaces: default
    config.kubernetes.io/index: '0'
    config.kubernetes.io/path: web.yaml
    kustomize.config.k8s.io/id: '1'
spec:
  template:
    spec:
      containers:
      - name: a
        image: a:1
      - name: b
        image: b:1
        envFrom:
        - configMapRef:
            name: cm
";
    let cm = "apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
  annotations:
    internal.config.kubernetes.io/needsHashSuffix: enabled
    internal.config.kubernetes.io/refBy: x
    keep: me
data:
  k: v
";
    // the replacement selects the Deployment by its previous kind and name
    let kust = "resources:
- web.yaml
- cm.yaml
replacements:
- source:
    kind: StatefulSet
    name: old-web
    fieldPath: spec.template.spec.containers.0.image
  targets:
  - select:
      kind: Deployment
    fieldPaths:
    - spec.template.spec.containers.1.image
";
    let out = ok(
        &[
            ("/r/kustomization.yaml", kust),
            ("/r/web.yaml", deploy),
            ("/r/cm.yaml", cm),
        ],
        "/r",
    );
    assert!(!out.contains("internal.config.kubernetes.io"), "{out}");
    assert!(!out.contains("config.kubernetes.io/index"), "{out}");
    assert!(!out.contains("config.kubernetes.io/path"), "{out}");
    assert!(out.contains("kustomize.config.k8s.io/id: \"1\""), "{out}");
    assert!(out.contains("keep: me"), "{out}");
    assert!(out.contains("image: a:1\n        name: b"), "{out}");
    // the hashed name, in the ConfigMap and in the reference to it
    let hashed = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("name: cm-"))
        .unwrap_or_else(|| panic!("no hashed ConfigMap name:\n{out}"));
    assert_eq!(out.matches(&format!("cm-{hashed}")).count(), 2, "{out}");

    // without the annotations: no hash, and the previous id is unknown
    let plain_cm = cm.replace(
        "    internal.config.kubernetes.io/needsHashSuffix: enabled\n",
        "",
    );
    let out = ok(
        &[
            ("/r/kustomization.yaml", "resources:\n- cm.yaml\n"),
            ("/r/cm.yaml", &plain_cm),
        ],
        "/r",
    );
    assert!(out.contains("  name: cm\n"), "{out}");
}

// Rule: a builtin patch plugin configured in `transformers:` with a bad
// configuration fails as kustomize reports it when loading the plugin:
// `plugin <id> fails configuration: <reason>`, with kustomize's reasons;
// a PatchStrategicMergeTransformer's `patches` text is patch text only.
#[test]
fn bad_patch_plugin_configs_fail_configuration() {
    let base = [
        (
            "/r/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
        ),
        (
            "/r/kustomization.yaml",
            "resources:\n- cm.yaml\ntransformers:\n- p.yaml\n",
        ),
    ];
    for (config, reason) in [
        (
            "apiVersion: builtin\nkind: PatchJson6902Transformer\nmetadata:\n  name: p\ntarget:\n  name: a\n",
            "plugin PatchJson6902Transformer.builtin.[noGrp]/p.[noNs] fails configuration: empty file path and empty jsonOp",
        ),
        (
            "apiVersion: builtin\nkind: PatchJson6902Transformer\nmetadata:\n  name: p\ntarget:\n  name: a\npath: x.json\njsonOp: '[]'\n",
            "fails configuration: must specify a file path or jsonOp, not both",
        ),
        (
            "apiVersion: builtin\nkind: PatchJson6902Transformer\nmetadata:\n  name: p\ntarget:\n  kind: ConfigMap\njsonOp: '[]'\n",
            "fails configuration: must specify the target name",
        ),
        (
            "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npatch: '  '\n",
            "plugin PatchTransformer.builtin.[noGrp]/p.[noNs] fails configuration: must specify one of patch and path in\n",
        ),
        (
            "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: p\npatch: thisIsNotAPatch\n",
            "fails configuration: unable to parse SM or JSON patch from [patch: \"thisIsNotAPatch\"]",
        ),
        (
            "apiVersion: builtin\nkind: PatchStrategicMergeTransformer\nmetadata:\n  name: p\npatches: thisIsNotAPatch\n",
            "plugin PatchStrategicMergeTransformer.builtin.[noGrp]/p.[noNs] fails configuration: missing Resource metadata",
        ),
        (
            "apiVersion: builtin\nkind: PatchStrategicMergeTransformer\nmetadata:\n  name: p\npaths:\n- missing.yaml\n",
            "fails configuration: evalsymlink failure on '/r/missing.yaml'",
        ),
    ] {
        let mut files = base.to_vec();
        files.push(("/r/p.yaml", config));
        let e = err(&files, "/r");
        assert!(e.contains(reason), "{config}\n{e}");
    }
}

/// The names of the ConfigMaps of `out` that carry annotation `hit`.
fn hit_names(out: &str) -> Vec<String> {
    out.split("---\n")
        .filter(|d| d.contains("  hit: "))
        .filter_map(|d| {
            d.lines()
                .find_map(|l| l.strip_prefix("  name: "))
                .map(|n| n.trim_matches('\'').to_string())
        })
        .collect()
}

// Rule: selector fields are Go regular expressions, anchored. Go's syntax
// differs from the `regex` crate's where real trees depend on it (a `{`
// that starts no repetition is a literal: cluster-api templates target
// `\${CLUSTER_NAME}-control-plane`), and Go's own refusals are errors.
#[test]
fn selector_names_are_go_regular_expressions() {
    let names = ["${CLUSTER_NAME}-cp", "a{b}", "A.b", "x1", "x\u{663}", "a<b"];
    let cms: String = names
        .iter()
        .map(|n| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{n}'\n"))
        .collect();
    let targeting = |pattern: &str| {
        render(
            &[
                ("/r/cm.yaml", &cms),
                (
                    "/r/kustomization.yaml",
                    &format!(
                        "resources: [cm.yaml]\npatches:\n- target:\n    name: '{pattern}'\n  patch: |\n    - {{op: add, path: /metadata/annotations/hit, value: y}}\n"
                    ),
                ),
            ],
            "/r",
        )
        .map(|out| hit_names(&out))
    };
    for (pattern, hits) in [
        (r"\${CLUSTER_NAME}-cp", vec!["${CLUSTER_NAME}-cp"]),
        ("a{b}", vec!["a{b}"]),
        (r"\QA.b\E", vec!["A.b"]),
        (r"\101.b", vec!["A.b"]),
        (r"x\d", vec!["x1"]),
        (r"x\pN", vec!["x1", "x\u{663}"]),
        (r"a\<b", vec!["a<b"]),
        ("x{1}1|a(?i)+", vec!["x1"]),
        ("(?i)x1", vec!["x1"]),
    ] {
        assert_eq!(targeting(pattern).unwrap(), hits, "pattern {pattern}");
    }
    for (pattern, reason) in [
        ("x{1001}", "invalid repeat count: `{1001}`"),
        ("a**", "invalid nested repetition operator: `**`"),
        (r"\8", r"invalid escape sequence: `\8`"),
        ("(?x)a", "invalid or unsupported Perl syntax: `(?x`"),
        ("(x", "missing closing ): `^(?:(x)$`"),
    ] {
        let e = targeting(pattern).unwrap_err().to_string();
        assert!(
            e.contains(&format!("error parsing regexp: {reason}")),
            "pattern {pattern}: {e}"
        );
    }
}

// Rule: an `images:` name matches an image with that name, then an
// optional `:tag`, then an optional `@sha256:digest`; nothing else
// (`nginx@sha256` without a digest is left alone).
#[test]
fn image_names_match_with_tag_and_digest_only() {
    let out = ok(
        &[
            (
                "/r/pod.yaml",
                "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - {name: a, image: nginx@sha256}
  - {name: b, image: 'nginx@sha256:abc'}
  - {name: c, image: 'nginx:1@sha256:abc'}
  - {name: d, image: 'nginx:1'}
  - {name: e, image: nginxx}
",
            ),
            (
                "/r/kustomization.yaml",
                "resources: [pod.yaml]\nimages:\n- name: nginx\n  newTag: \"2\"\n",
            ),
        ],
        "/r",
    );
    let images: Vec<&str> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- image: "))
        .collect();
    assert_eq!(
        images,
        ["nginx@sha256", "nginx:2", "nginx:2", "nginx:2", "nginxx"]
    );
}

// Rule: ids of kinds the builtin schema knows as cluster-scoped compare
// without their namespace: a strategic-merge patch naming a ClusterRole
// with any namespace patches it, and two ClusterRoles of one name in two
// namespaces are one id twice.
#[test]
fn cluster_scoped_ids_ignore_the_namespace() {
    let role = |ns: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: viewer\n  namespace: {ns}\nrules: []\n"
        )
    };
    let patch = "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: viewer
  namespace: b
  labels: {patched: \"yes\"}
";
    let out = ok(
        &[
            ("/r/cr.yaml", &role("a")),
            ("/r/patch.yaml", patch),
            (
                "/r/kustomization.yaml",
                "resources: [cr.yaml]\npatches:\n- path: patch.yaml\n",
            ),
        ],
        "/r",
    );
    assert!(
        out.contains("patched: \"yes\"") && out.contains("namespace: a"),
        "{out}"
    );
    let e = err(
        &[
            ("/r/cr.yaml", &role("a")),
            ("/r/cr2.yaml", &role("c")),
            ("/r/kustomization.yaml", "resources: [cr.yaml, cr2.yaml]\n"),
        ],
        "/r",
    );
    assert!(
        e.contains("may not add resource with an already registered id"),
        "{e}"
    );
    // a namespaced kind keeps its namespace in its id
    let out = ok(
        &[
            (
                "/r/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: c}\n",
            ),
            ("/r/kustomization.yaml", "resources: [cm.yaml]\n"),
        ],
        "/r",
    );
    assert_eq!(out.matches("name: x").count(), 2);
}

// Rule: `generators:` and `transformers:` entries run inline configs
// first, then the files, whatever order the list gives.
#[test]
fn inline_plugin_configs_run_before_files() {
    let prefix = |p: &str| {
        format!(
            "apiVersion: builtin\nkind: PrefixTransformer\nmetadata:\n  name: {p}\nprefix: {p}-\nfieldSpecs:\n- path: metadata/name\n"
        )
    };
    let inline = prefix("i")
        .lines()
        .map(|l| format!("  {l}\n"))
        .collect::<String>();
    let out = ok(
        &[
            (
                "/r/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
            ),
            ("/r/p.yaml", &prefix("f")),
            (
                "/r/kustomization.yaml",
                &format!("resources: [cm.yaml]\ntransformers:\n- p.yaml\n- |\n{inline}"),
            ),
        ],
        "/r",
    );
    assert!(out.contains("name: f-i-x"), "{out}");
    let out = ok(
        &[
            (
                "/r/g.yaml",
                "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: file-cm}\nliterals: [a=1]\n",
            ),
            (
                "/r/kustomization.yaml",
                "generators:\n- g.yaml\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: inline-cm}\n  literals: [b=2]\nsortOptions: {order: fifo}\n",
            ),
        ],
        "/r",
    );
    let inline_at = out.find("name: inline-cm").unwrap();
    let file_at = out.find("name: file-cm").unwrap();
    assert!(inline_at < file_at, "{out}");
}

// Rule: ids made equal are an error where kustomize moves resources into a
// new map: the result of a component (a replacement renaming two
// ConfigMaps to one name), and a plugin config file repeating an inline
// config's id.
#[test]
fn duplicate_ids_after_a_component_or_among_plugin_configs_fail() {
    let e = err(
        &[
            (
                "/r/svc.yaml",
                "apiVersion: v1\nkind: Service\nmetadata: {name: cache}\n",
            ),
            (
                "/r/comp/kustomization.yaml",
                "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nreplacements:\n- source: {kind: Service, name: cache}\n  targets:\n  - select: {kind: ConfigMap}\n",
            ),
            (
                "/r/kustomization.yaml",
                "resources: [svc.yaml]\nconfigMapGenerator:\n- {name: a, literals: [x=1]}\n- {name: b, literals: [x=2]}\ncomponents: [comp]\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.contains("recursed merging from path '/r/comp': may not add resource with an already registered id: ConfigMap.v1.[noGrp]/cache.[noNs]"),
        "{e}"
    );
    let e = err(
        &[
            (
                "/r/gen.yaml",
                "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: cm}\nbehavior: merge\nliterals: [a=1]\n",
            ),
            (
                "/r/kustomization.yaml",
                "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: cm}\n  literals: [b=2]\n- gen.yaml\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.contains("may not add resource with an already registered id: ConfigMapGenerator.builtin.[noGrp]/cm.[noNs]"),
        "{e}"
    );
}

// Rule: a `labels:` entry's fields merge with the configured and default
// label specs as kustomize's FsSlice does: the same path for a kind the
// new spec selects is one spec, and differing `create` is an error.
#[test]
fn label_field_specs_conflict_on_create() {
    let tree = |labels: &str| {
        render(
            &[
                (
                    "/r/d.yaml",
                    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
                ),
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [d.yaml]\nlabels:\n{labels}"),
                ),
            ],
            "/r",
        )
    };
    let e = tree("- pairs: {env: prod}\n  fields:\n  - path: metadata/labels\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("failed to merge labels: conflicting fieldspecs"),
        "{e}"
    );
    let e = tree("- pairs: {team: a}\n  includeTemplates: true\n  fields:\n  - {path: spec/template/metadata/labels, kind: Deployment}\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("failed to merge template fieldSpec: conflicting fieldspecs"),
        "{e}"
    );
    // same create: one spec, no error
    let out = tree("- pairs: {env: prod}\n  fields:\n  - {path: metadata/labels, create: true}\n")
        .unwrap();
    assert!(out.contains("env: prod"), "{out}");
}

// Rule: kustomize hands `configMapGenerator`/`secretGenerator` entries to
// its builtin generators marshalled and read back by go-yaml v2: a NEL in
// a literal is folded before the value is hashed, and DEL, C1 controls,
// U+FFFE/U+FFFF fail the build, for Secrets as well as ConfigMaps.
#[test]
fn generator_literals_pass_through_go_yaml() {
    let generated = |field: &str, literal: &str| {
        render(
            &[(
                "/r/kustomization.yaml",
                &format!("{field}:\n- name: c\n  literals:\n  - \"{literal}\"\n"),
            )],
            "/r",
        )
    };
    let folded = generated("configMapGenerator", r"k=a\u0085b").unwrap();
    let spaced = generated("configMapGenerator", "k=a b").unwrap();
    assert_eq!(folded, spaced);
    let folded = generated("secretGenerator", r"k=a\u0085b").unwrap();
    let spaced = generated("secretGenerator", "k=a b").unwrap();
    assert_eq!(folded, spaced);
    for (field, plugin) in [
        ("configMapGenerator", "ConfigMapGenerator"),
        ("secretGenerator", "SecretGenerator"),
    ] {
        for literal in [r"k=a\u007fb", r"k=\u009f", r"k=\ufffe"] {
            let e = generated(field, literal).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("builtin {plugin} marshal: yaml: control characters are not allowed"),
                "{literal}"
            );
        }
        let e = generated(field, r"k=a\u0085--- x").unwrap_err().to_string();
        assert!(
            e.ends_with("yaml: line 2: found unexpected document indicator"),
            "{e}"
        );
    }
    // other control characters are escaped by Go's JSON: no error
    generated("secretGenerator", r"k=\u0001\u001b").unwrap();
}

// Rule: a JSON patch goes through Go's JSON encoder, which refuses a NaN
// or infinite float anywhere in the resource (a strategic-merge patch
// does not).
#[test]
fn json_patch_refuses_non_finite_floats() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  a: .nan\n  b: -.inf\n";
    let e = err(
        &[
            ("/r/cm.yaml", cm),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\npatches:\n- target: {kind: ConfigMap}\n  patch: |\n    - {op: replace, path: /data/a, value: z}\n",
            ),
        ],
        "/r",
    );
    assert!(e.contains("json: unsupported value: NaN"), "{e}");
    let e = err(
        &[
            ("/r/cm.yaml", cm),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: c}\n    data: {a: z}\n",
            ),
        ],
        "/r",
    );
    // the strategic merge succeeds; printing the -Inf left fails
    assert!(e.contains("json: unsupported value: -Inf"), "{e}");
}

// Rule: with `labels:` set, kustomize also runs (and, with
// `transformerAnnotations`, records) the commonLabels transformer, even
// when commonLabels is empty: one more LabelTransformer entry than there
// are `labels:` entries.
#[test]
fn labels_record_the_common_labels_transformer_too() {
    let count = |extra: &str| {
        ok(
            &[
                (
                    "/r/cm.yaml",
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
                ),
                (
                    "/r/kustomization.yaml",
                    &format!(
                        "resources: [cm.yaml]\nbuildMetadata: [transformerAnnotations]\n{extra}"
                    ),
                ),
            ],
            "/r",
        )
        .matches("kind: LabelTransformer")
        .count()
    };
    assert_eq!(count("labels:\n- pairs: {a: b}\n"), 2);
    assert_eq!(count("labels:\n- pairs: {a: b}\n- pairs: {c: d}\n"), 3);
    assert_eq!(count("labels:\n- pairs: {a: b}\ncommonLabels: {c: d}\n"), 2);
    assert_eq!(count("commonLabels: {c: d}\n"), 1);
    assert_eq!(count(""), 0);
}

// Rule: a `transformers:`/`generators:` entry is an inline config only when
// it reads as resources (a kind and a name); otherwise it is a path, and a
// config without `metadata.name` fails as a missing file.
#[test]
fn inline_plugin_config_needs_a_name() {
    let files = |config: &str| {
        render(
            &[
                (
                    "/r/cm.yaml",
                    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
                ),
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [cm.yaml]\ntransformers:\n- |\n{config}"),
                ),
            ],
            "/r",
        )
    };
    let e = files("  apiVersion: builtin\n  kind: PrefixTransformer\n  prefix: p-\n  fieldSpecs: [{path: metadata/name}]\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("accumulating resources from 'apiVersion: builtin"),
        "{e}"
    );
    let out = files("  apiVersion: builtin\n  kind: PrefixTransformer\n  metadata: {name: p}\n  prefix: p-\n  fieldSpecs: [{path: metadata/name}]\n")
        .unwrap();
    assert!(out.contains("name: p-x"), "{out}");
}

// Rule: messages that name a type print it as kyaml's `Gvk.String()`
// (`Kind.version.group`, `[noVer]`/`[noGrp]` for empty parts), and the
// replica kinds in kustomize's type order.
#[test]
fn type_names_in_messages_read_as_kyaml_prints_them() {
    let e = err(
        &[(
            "/r/kustomization.yaml",
            "transformers:\n- |\n  apiVersion: builtin\n  kind: Nope\n  metadata: {name: x}\n",
        )],
        "/r",
    );
    assert_eq!(e, "unable to load builtin Nope.builtin.[noGrp]");
    let e = err(
        &[
            (
                "/r/s.yaml",
                "apiVersion: v1\nkind: Service\nmetadata: {name: svc}\n",
            ),
            (
                "/r/kustomization.yaml",
                "resources: [s.yaml]\nreplicas:\n- {name: svc, count: 2}\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.ends_with("resource with name svc does not match a config with the following GVK [Deployment.[noVer].[noGrp] StatefulSet.[noVer].[noGrp] ReplicaSet.[noVer].[noGrp] ReplicationController.[noVer].[noGrp]]"),
        "{e}"
    );
}

const CM: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n";

fn with_plugin(field: &str, config: &str) -> Result<String, krmsync::kustomize::Error> {
    render(
        &[
            ("/r/cm.yaml", CM),
            ("/r/plugin.yaml", config),
            (
                "/r/kustomization.yaml",
                &format!("resources: [cm.yaml]\n{field}:\n- plugin.yaml\n"),
            ),
        ],
        "/r",
    )
}

// Rule: a builtin plugin's configuration is decoded as its Go struct is
// (through JSON): a value of the wrong type fails the configuration, with
// Go's message; numbers become text only for string fields the struct
// declares itself (not those an embedded struct promotes); unknown fields
// are ignored. A generator's loading errors are prefixed.
#[test]
fn builtin_plugin_configs_are_type_checked() {
    let e = with_plugin(
        "generators",
        "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata:\n  name: x\nliterals: 5\n",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "loading generator plugins: failed to load generator: plugin ConfigMapGenerator.builtin.[noGrp]/x.[noNs] fails configuration: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal number into Go struct field ConfigMapGeneratorPlugin.literals of type []string"
    );
    for (config, want) in [
        (
            "kind: ConfigMapGenerator\nmetadata:\n  name: x\noptions:\n  disableNameSuffixHash: \"true\"\n",
            "GeneratorOptions.options.disableNameSuffixHash of type bool",
        ),
        (
            "kind: ConfigMapGenerator\nmetadata:\n  name: x\nname: 5\nliterals: [a=b]\n",
            "ConfigMapGeneratorPlugin.name of type string",
        ),
        (
            "kind: ConfigMapGenerator\nmetadata:\n  name: x\n  labels: 5\n",
            "ObjectMeta.metadata.labels of type map[string]string",
        ),
    ] {
        let e = with_plugin("generators", &format!("apiVersion: builtin\n{config}"))
            .unwrap_err()
            .to_string();
        assert!(e.ends_with(want), "{e}");
    }
    for (config, want) in [
        (
            "kind: LabelTransformer\nmetadata:\n  name: x\nlabels: [a]\n",
            "LabelTransformerPlugin.labels of type map[string]string",
        ),
        (
            "kind: AnnotationsTransformer\nmetadata:\n  name: x\nannotations: {a: [b]}\n",
            "AnnotationsTransformerPlugin.annotations of type string",
        ),
        (
            "kind: LabelTransformer\nmetadata:\n  name: x\nlabels: {a: b}\nfieldSpecs: [{kind: 5, path: metadata/labels}]\n",
            "FieldSpec.fieldSpecs.kind of type string",
        ),
        (
            "kind: ReplicaCountTransformer\nmetadata:\n  name: x\nreplica: {name: a, count: x}\n",
            "Replica.replica.count of type int64",
        ),
        (
            "kind: PatchStrategicMergeTransformer\nmetadata:\n  name: x\npaths: a.yaml\n",
            "PatchStrategicMergeTransformerPlugin.paths of type []types.PatchStrategicMerge",
        ),
        (
            "kind: PatchTransformer\nmetadata:\n  name: x\npatch: \"{}\"\noptions: {allowNameChange: 1}\n",
            "PatchTransformerPlugin.options of type bool",
        ),
        (
            "kind: PrefixTransformer\nmetadata:\n  name: x\nprefix: a\n",
            "fails configuration: fieldSpecs is not expected to be nil",
        ),
        (
            "kind: ConfigMapGenerator\nmetadata:\n  name: x\nliterals: [a]\n",
            "plugin ConfigMapGenerator.builtin.[noGrp]/x.[noNs] not a transformer",
        ),
    ] {
        let e = with_plugin("transformers", &format!("apiVersion: builtin\n{config}"))
            .unwrap_err()
            .to_string();
        assert!(e.ends_with(want), "{e}");
    }
    let e = with_plugin(
        "generators",
        "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: x\npatch: \"{}\"\n",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "loading generator plugins: failed to load generator: plugin PatchTransformer.builtin.[noGrp]/x.[noNs] not a generator"
    );
    // numbers into the struct's own string fields and map values are text;
    // unknown fields are ignored
    let out = with_plugin(
        "transformers",
        "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: x\nbogus: [1]\nlabels: {a: 1}\nfieldSpecs: [{path: metadata/labels, create: true}]\n",
    )
    .unwrap();
    assert!(out.contains("  labels:\n    a: \"1\"\n"), "{out}");
    let out = with_plugin(
        "transformers",
        "apiVersion: builtin\nkind: SuffixTransformer\nmetadata:\n  name: x\nsuffix: 5\nfieldSpecs: [{path: metadata/name}]\n",
    )
    .unwrap();
    assert!(out.contains("  name: c5\n"), "{out}");
}

// Rule: all plugin configs of a `transformers:` list are configured before
// the first one runs, so a later entry's bad configuration is the error
// even when an earlier transformer would fail.
#[test]
fn transformer_configs_are_all_checked_before_any_runs() {
    let e = render(
        &[
            ("/r/cm.yaml", CM),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]
transformers:
- |
  apiVersion: builtin
  kind: ReplicaCountTransformer
  metadata:
    name: a
  replica: {name: nothing-named-so, count: 1}
  fieldSpecs: [{path: spec/replicas}]
- |
  apiVersion: builtin
  kind: LabelTransformer
  metadata:
    name: b
  labels: [x]
",
            ),
        ],
        "/r",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("plugin LabelTransformer.builtin.[noGrp]/b.[noNs] fails configuration"),
        "{e}"
    );
}

// Rule: a `generators:`/`transformers:` entry that reads as YAML documents
// that are all empty (nothing, a comment, null, `{}`, `[]`) is an inline
// config of no plugin; a scalar or a list that is not empty is a path.
#[test]
fn empty_inline_plugin_entries_configure_nothing() {
    for entry in [
        "\"\"", "\"# x\"", "null", "\"~\"", "\"---\"", "\"[]\"", "\"{}\"",
    ] {
        for field in ["generators", "transformers"] {
            let out = ok(
                &[
                    ("/r/cm.yaml", CM),
                    (
                        "/r/kustomization.yaml",
                        &format!("resources: [cm.yaml]\n{field}:\n- {entry}\n"),
                    ),
                ],
                "/r",
            );
            assert_eq!(out, CM, "{field}: {entry}");
        }
    }
    let e = err(
        &[
            ("/r/cm.yaml", CM),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\ngenerators:\n- \"[a]\"\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.starts_with(
            "loading generator plugins: accumulation err='accumulating resources from '[a]'"
        ),
        "{e}"
    );
}

// Rule: an empty list as a document of a resource file is skipped like an
// empty map; any other list or scalar is `missing Resource metadata`.
#[test]
fn empty_list_documents_are_skipped() {
    let files = |doc: &str| {
        vec![
            ("/r/a.yaml".to_string(), format!("{doc}\n---\n{CM}")),
            (
                "/r/kustomization.yaml".to_string(),
                "resources: [a.yaml]\n".to_string(),
            ),
        ]
    };
    let run = |doc: &str| {
        let f = files(doc);
        let f: Vec<(&str, &str)> = f.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        render(&f, "/r")
    };
    assert_eq!(run("[]").unwrap(), CM);
    assert_eq!(run("{}").unwrap(), CM);
    for doc in ["[a]", "hello", "1"] {
        let e = run(doc).unwrap_err().to_string();
        assert!(e.contains("missing Resource metadata"), "{doc}: {e}");
    }
}

// Rule: a kustomization's `metadata` is decoded as an ObjectMeta (strictly,
// as the rest of the file), though nothing uses it; an `openapi` field's
// keys other than `path` and `version` are ignored.
#[test]
fn kustomization_metadata_is_decoded_and_openapi_ignores_other_keys() {
    let build = |k: &str| {
        render(
            &[
                ("/r/cm.yaml", CM),
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [cm.yaml]\n{k}"),
                ),
            ],
            "/r",
        )
    };
    assert_eq!(build("metadata: {name: x, labels: {a: b}}\n").unwrap(), CM);
    for (k, want) in [
        (
            "metadata: [a]\n",
            "Kustomization.metadata of type types.ObjectMeta",
        ),
        (
            "metadata: {labels: [a]}\n",
            "ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            "metadata: {name: 5}\n",
            "ObjectMeta.metadata.name of type string",
        ),
        ("metadata: {bogus: 1}\n", "json: unknown field \"bogus\""),
    ] {
        let e = build(k).unwrap_err().to_string();
        assert!(e.ends_with(want), "{k}: {e}");
    }
    assert_eq!(build("openapi: {other: x}\n").unwrap(), CM);
}

// Rule: a transformer setting a scalar (namespace, replicas, images) or
// adding map entries (labels, annotations) fails on a field of another
// kind, with kyaml's message, instead of overwriting it.
#[test]
fn transformers_refuse_fields_of_the_wrong_kind() {
    let d = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n";
    for (extra, k, want) in [
        (
            "  namespace: [a]\n",
            "namespace: x\n",
            "considering field 'metadata/namespace' of object Deployment.v1.apps/d.[noNs]: wrong node kind: expected ScalarNode but got SequenceNode",
        ),
        (
            "spec:\n  replicas: {a: 1}\n",
            "replicas: [{name: d, count: 2}]\n",
            "considering field 'spec/replicas' of object Deployment.v1.apps/d.[noNs]: wrong node kind: expected ScalarNode but got MappingNode",
        ),
        (
            "spec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: [x]\n",
            "images: [{name: x, newTag: \"2\"}]\n",
            "wrong node kind: expected ScalarNode but got SequenceNode",
        ),
        (
            "  annotations: [a]\n",
            "commonAnnotations: {a: b}\n",
            "considering field 'metadata/annotations' of object Deployment.v1.apps/d.[noNs]: wrong node kind: expected MappingNode but got SequenceNode",
        ),
    ] {
        let e = err(
            &[
                ("/r/d.yaml", &format!("{d}{extra}")),
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [d.yaml]\n{k}"),
                ),
            ],
            "/r",
        );
        assert!(e.starts_with(want), "{k}: {e}");
    }
}

// Rule: `patchesStrategicMerge` and targeted `patches` give the patch the
// resource's group, version and kind first; on a resource without
// `apiVersion` that leaves `apiVersion: null`. An untargeted `patches`
// entry does not, and an `apiVersion: ""` stays.
#[test]
fn strategic_merge_patch_on_resource_without_api_version() {
    let build = |res: &str, k: &str| {
        ok(
            &[
                ("/r/r.yaml", res),
                (
                    "/r/p.yaml",
                    "kind: Service\nmetadata:\n  name: s\nspec:\n  type: B\n",
                ),
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [r.yaml]\n{k}\n"),
                ),
            ],
            "/r",
        )
    };
    let bare = "kind: Service\nmetadata:\n  name: s\nspec:\n  type: A\n";
    let patched = "apiVersion: null\nkind: Service\nmetadata:\n  name: s\nspec:\n  type: B\n";
    assert_eq!(build(bare, "patchesStrategicMerge: [p.yaml]"), patched);
    assert_eq!(
        build(bare, "patches: [{path: p.yaml, target: {name: s}}]"),
        patched
    );
    assert_eq!(
        build(bare, "patches: [{path: p.yaml}]"),
        "kind: Service\nmetadata:\n  name: s\nspec:\n  type: B\n"
    );
    assert_eq!(
        build(
            &format!("apiVersion: \"\"\n{bare}"),
            "patches: [{path: p.yaml, target: {name: s}}]"
        ),
        "apiVersion: \"\"\nkind: Service\nmetadata:\n  name: s\nspec:\n  type: B\n"
    );
}

// Rule: a var's field path is read as kyaml's `GetFieldValue` reads it:
// blank elements are dropped and spaces trimmed, so `[` alone names the
// whole object (a map: the reference stays as written) and
// ` metadata . name ` is `metadata.name`.
#[test]
fn var_field_paths_follow_kyaml_lookup() {
    let build = |path: &str| {
        render(
            &[
                (
                    "/r/r.yaml",
                    "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    args: [\"$(V)\"]\n",
                ),
                (
                    "/r/kustomization.yaml",
                    &format!(
                        "resources: [r.yaml]\nvars:\n- name: V\n  objref: {{kind: Service, name: s, apiVersion: v1}}\n  fieldref: {{fieldpath: {path:?}}}\n"
                    ),
                ),
            ],
            "/r",
        )
    };
    assert!(build("[").unwrap().contains("- $(V)\n"));
    assert!(build(" metadata . name ").unwrap().contains("- s\n"));
    assert!(build("metadata.[x]").is_err());
    assert!(build("nope").is_err());
}

// Rule: more places where kustomize decodes or walks with types: a
// `configurations:` file is type-checked as its TransformerConfig; a
// binding subject (or its name or kind) of the wrong kind fails the
// namespace transformer; a `patchesJson6902` entry needs a target name; a
// PatchTransformer plugin's target ignores unknown fields; the
// IAMPolicyGenerator reads the text it writes.
#[test]
fn more_typed_decoding_and_walking() {
    let e = err(
        &[
            ("/r/cm.yaml", CM),
            ("/r/c.yaml", "namePrefix: [{path: a, create: {x: 1}}]\n"),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\nconfigurations: [c.yaml]\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.ends_with("json: cannot unmarshal object into Go struct field FieldSpec.namePrefix.create of type bool"),
        "{e}"
    );
    let binding = |subjects: &str| {
        render(
            &[
                (
                    "/r/b.yaml",
                    &format!(
                        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: b\nsubjects:\n{subjects}"
                    ),
                ),
                (
                    "/r/kustomization.yaml",
                    "resources: [b.yaml]\nnamespace: x\n",
                ),
            ],
            "/r",
        )
    };
    let e = binding("- kind: ServiceAccount\n  name: {}\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("setting namespace on (cluster)role binding subjects: looking up name on (cluster)role binding subject: wrong node kind: expected ScalarNode but got MappingNode"), "{e}");
    let e = binding("- - kind: ServiceAccount\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("wrong node kind: expected MappingNode but got SequenceNode"),
        "{e}"
    );
    assert!(
        binding("- kind: ServiceAccount\n  name: default\n")
            .unwrap()
            .contains("  namespace: x\n")
    );
    let e = err(
        &[
            ("/r/cm.yaml", CM),
            ("/r/p.yaml", "[]"),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\npatchesJson6902:\n- path: p.yaml\n  target: {kind: ConfigMap, version: v1}\n",
            ),
        ],
        "/r",
    );
    assert_eq!(
        e,
        "trouble configuring builtin PatchJson6902Transformer with config: `\npath: p.yaml\ntarget:\n  kind: ConfigMap\n  version: v1\n`: must specify the target name"
    );
    let out = with_plugin(
        "transformers",
        "apiVersion: builtin\nkind: PatchTransformer\nmetadata:\n  name: x\npatch: |\n  - op: add\n    path: /data\n    value: {a: b}\ntarget:\n  kind: ConfigMap\n  env: ignored\n",
    )
    .unwrap();
    assert!(out.contains("data:\n  a: b\n"), "{out}");
    let e = with_plugin(
        "generators",
        "apiVersion: builtin\nkind: IAMPolicyGenerator\nmetadata:\n  name: x\ncloud: gke\nkubernetesService: {name: k}\n",
    )
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        "yaml: line 6: found character that cannot start any token"
    );
}

// Rule: a field spec with an empty path fails where it applies ("cannot
// set or create an empty field name"), and name references walk their
// field paths even when nothing could be referred to, so a scalar in the
// middle of one fails.
#[test]
fn empty_field_spec_paths_and_name_reference_walks_fail() {
    let e = with_plugin(
        "transformers",
        "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: x\nlabels: {a: b}\nfieldSpecs: [{}]\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.ends_with("cannot set or create an empty field name"),
        "{e}"
    );
    let e = err(
        &[
            (
                "/r/d.yaml",
                "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  template:\n    spec:\n      volumes: x\n",
            ),
            ("/r/kustomization.yaml", "resources: [d.yaml]\n"),
        ],
        "/r",
    );
    assert!(
        e.starts_with("updating name reference in 'spec/template/spec/volumes/configMap/name' field of 'Deployment.v1.apps/d.[noNs]'"),
        "{e}"
    );
}

// Rule: with `buildMetadata: [originAnnotations]`, an IAMPolicyGenerator's
// ServiceAccount records the generator and the file that configured it.
#[test]
fn iam_policy_generator_records_its_origin() {
    let out = ok(
        &[
            (
                "/r/gen.yaml",
                "apiVersion: builtin\nkind: IAMPolicyGenerator\nmetadata:\n  name: g\ncloud: gke\nkubernetesService: {name: k}\nserviceAccount: {name: s, projectId: p}\n",
            ),
            (
                "/r/kustomization.yaml",
                "generators: [gen.yaml]\nbuildMetadata: [originAnnotations]\n",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  annotations:\n    config.kubernetes.io/origin: |\n      configuredIn: gen.yaml\n      configuredBy:\n        apiVersion: builtin\n        kind: IAMPolicyGenerator\n        name: g\n    iam.gke.io/gcp-service-account: s@p.iam.gserviceaccount.com\n  name: k\n"
    );
}

// Rule: a number (or `-`) in a field spec path is a list index to kyaml, so
// it fails on a map; an `openapi:` field with neither `path` nor a
// non-empty `version` chooses no schema (a base's custom one still
// applies).
#[test]
fn numeric_field_spec_elements_and_openapi_without_a_choice() {
    for (path, want) in [
        (
            "spec/0",
            "fieldName: 0: wrong node kind: expected SequenceNode but got MappingNode",
        ),
        (
            "metadata/-1",
            "fieldName: -1: array index -1 cannot be negative",
        ),
    ] {
        let e = with_plugin(
            "transformers",
            &format!(
                "apiVersion: builtin\nkind: LabelTransformer\nmetadata:\n  name: x\nlabels: {{a: b}}\nfieldSpecs: [{{path: \"{path}\", create: true}}]\n"
            ),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(want), "{path}: {e}");
    }
    let schema = r#"{"definitions": {"v1alpha1.MyCRD": {"properties": {"spec": {"properties": {"containers": {"type": "array", "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge", "items": {"type": "object"}}}}}, "x-kubernetes-group-version-kind": [{"group": "example.com", "kind": "MyCRD", "version": "v1alpha1"}]}}}"#;
    let out = ok(
        &[
            ("/r/base/schema.json", schema),
            (
                "/r/base/crd.yaml",
                "apiVersion: example.com/v1alpha1\nkind: MyCRD\nmetadata:\n  name: s\nspec:\n  containers:\n  - name: a\n    image: x\n",
            ),
            (
                "/r/base/kustomization.yaml",
                "resources: [crd.yaml]\nopenapi: {path: schema.json}\n",
            ),
            (
                "/r/overlay/p.yaml",
                "apiVersion: example.com/v1alpha1\nkind: MyCRD\nmetadata:\n  name: s\nspec:\n  containers:\n  - name: a\n    command: [y]\n",
            ),
            (
                "/r/overlay/kustomization.yaml",
                "resources: [../base]\npatches: [{path: p.yaml}]\nopenapi: {other: x}\n",
            ),
        ],
        "/r/overlay",
    );
    // merged by name under the base's schema, not replaced
    assert!(
        out.contains("  - command:\n    - \"y\"\n    image: x\n"),
        "{out}"
    );
}

// Rule: a `patchesStrategicMerge` entry that reads as empty YAML is patch
// text of no patch; when no entry gives a patch, the field fails as
// kustomize's PatchStrategicMergeTransformer configuration does.
#[test]
fn empty_strategic_merge_entries_are_no_patch() {
    let build = |entries: &str| {
        render(
            &[
                ("/r/cm.yaml", CM),
                (
                    "/r/p.yaml",
                    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n",
                ),
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [cm.yaml]\npatchesStrategicMerge: [{entries}]\n"),
                ),
            ],
            "/r",
        )
    };
    assert!(
        build("\"# x\", p.yaml")
            .unwrap()
            .contains("data:\n  a: b\n")
    );
    assert_eq!(
        build("\"# x\", \"{}\"").unwrap_err().to_string(),
        "trouble configuring builtin PatchStrategicMergeTransformer with config: `\npaths:\n- '# x'\n- '{}'\n`: patch appears to be empty; files=[# x {}], Patch="
    );
}

// Rule: a `labels:` entry's field specs are decoded strictly as FieldSpecs;
// a RoleBinding's `roleRef` is compared by the text of its fields, so
// `apiGroup: 1` is no RBAC group and its `name` is not a reference.
#[test]
fn label_field_specs_typed_and_role_ref_group_as_text() {
    let e = err(
        &[
            ("/r/cm.yaml", CM),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\nlabels:\n- pairs: {a: b}\n  fields:\n  - path: spec/x\n    version: {}\n",
            ),
        ],
        "/r",
    );
    assert!(
        e.ends_with("json: cannot unmarshal object into Go struct field FieldSpec.labels.fields.version of type string"),
        "{e}"
    );
    let out = ok(
        &[
            (
                "/r/r.yaml",
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: role\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: b\nroleRef:\n  apiGroup: 1\n  kind: ClusterRole\n  name: role\n",
            ),
            (
                "/r/kustomization.yaml",
                "resources: [r.yaml]\nnamePrefix: p-\n",
            ),
        ],
        "/r",
    );
    assert!(
        out.contains("roleRef:\n  apiGroup: 1\n  kind: ClusterRole\n  name: role\n"),
        "{out}"
    );
}

// Rule: a resource is local (dropped from the output, still usable as a
// name reference target) when it carries `config.kubernetes.io/local-config`
// with any value but `false`: `"yes"`, `"TRUE"`, an empty or null value and
// even a list count; only the text or boolean `false` keeps it.
#[test]
fn local_config_is_any_value_but_false() {
    let values = [
        ("\"yes\"", false),
        ("true", false),
        ("\"TRUE\"", false),
        ("\"\"", false),
        ("null", false),
        ("[]", false),
        ("\"False\"", false),
        ("\"false\"", true),
        ("false", true),
    ];
    let mut docs = String::new();
    for (i, (v, _)) in values.iter().enumerate() {
        docs.push_str(&format!(
            "---
apiVersion: v1
kind: ConfigMap
metadata:
  name: c{i}
  annotations:
    config.kubernetes.io/local-config: {v}
"
        ));
    }
    docs.push_str(
        "---
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  volumes:
  - name: v
    configMap:
      name: c0
",
    );
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "namePrefix: x-\nresources: [r.yaml]\n",
            ),
            ("/r/r.yaml", &docs),
        ],
        "/r",
    );
    for (i, (v, kept)) in values.iter().enumerate() {
        assert_eq!(
            out.contains(&format!("\n  name: x-c{i}\n")),
            *kept,
            "local-config: {v}\n{out}"
        );
    }
    // the dropped ConfigMap still renamed the Pod's reference to it
    assert!(out.contains("      name: x-c0\n"), "{out}");
}

// Rule: in the legacy order, two Namespaces of which one is in the core
// group compare their `group_version_kind` sort strings in reverse: a
// Namespace without apiVersion (`~V`) comes before `v2`, which comes before
// `v1`; core Namespaces come before those of other groups, which keep the
// ascending order among themselves.
#[test]
fn legacy_order_of_namespaces_of_several_versions() {
    let out = ok(
        &[
            ("/r/kustomization.yaml", "resources: [r.yaml]\n"),
            (
                "/r/r.yaml",
                "apiVersion: v1
kind: Namespace
metadata: {name: a}
---
kind: Namespace
metadata: {name: b}
---
apiVersion: v2
kind: Namespace
metadata: {name: c}
---
apiVersion: x.io/v1
kind: Namespace
metadata: {name: d}
---
apiVersion: a.io/v1
kind: Namespace
metadata: {name: e}
---
apiVersion: v1
kind: Namespace
metadata: {name: g}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
",
            ),
        ],
        "/r",
    );
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .collect();
    assert_eq!(names, ["b", "c", "a", "g", "e", "d", "q"], "{out}");
}

// Rule: JSON 6902 operations are decoded when the patch is configured,
// whatever it targets: an item that is neither a map nor null fails
// `patchesJson6902` with Go's JSON error (the operations as JSON, keys
// sorted when they were YAML) and makes a `patches` entry neither a
// strategic-merge nor a JSON patch, even when no resource is targeted.
#[test]
fn json_patch_operations_decoded_before_targets() {
    let base = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
    let legacy = "resources: [r.yaml]
patchesJson6902:
- path: p.yaml
  target: {kind: Nope, name: x}
";
    for (patch, json, t) in [
        ("- - nginx\n", "[[\"nginx\"]]", "array"),
        (
            "- {op: add, path: /x, value: {b: 1, a: 2}}\n- 3\n",
            "[{\"op\":\"add\",\"path\":\"/x\",\"value\":{\"a\":2,\"b\":1}},3]",
            "number",
        ),
        (
            "[{\"op\": \"add\"}, \"s\"]",
            "[{\"op\": \"add\"}, \"s\"]",
            "string",
        ),
    ] {
        let e = err(
            &[
                ("/r/kustomization.yaml", legacy),
                ("/r/r.yaml", base),
                ("/r/p.yaml", patch),
            ],
            "/r",
        );
        assert!(
            e.contains(&format!(
                "with config: `\npath: p.yaml\ntarget:\n  kind: Nope\n  name: x\n`: decoding {json}: json: cannot unmarshal {t} into Go value of type jsonpatch.Operation"
            )),
            "{e}"
        );
        let e = err(
            &[
                (
                    "/r/kustomization.yaml",
                    "resources: [r.yaml]\npatches:\n- path: p.yaml\n  target: {kind: Nope}\n",
                ),
                ("/r/r.yaml", base),
                ("/r/p.yaml", patch),
            ],
            "/r",
        );
        assert!(
            e.contains("unable to parse SM or JSON patch from [path: \"p.yaml\"]"),
            "{e}"
        );
    }
    // null items are operations of nothing: no error when nothing is targeted
    let out = ok(
        &[
            ("/r/kustomization.yaml", legacy),
            ("/r/r.yaml", base),
            ("/r/p.yaml", "- null\n"),
        ],
        "/r",
    );
    assert!(out.contains("name: c\n"), "{out}");
}

// Rule: a generator's `merge` or `replace` keeps the transformations the
// base recorded on the resource it replaces (kustomize merges the
// annotations, the transformations record among them).
#[test]
fn generator_merge_and_replace_keep_recorded_transformations() {
    let out = ok(
        &[
            (
                "/r/base/kustomization.yaml",
                "namePrefix: b-\nconfigMapGenerator:\n- name: m\n  literals: [a=1]\n- name: r\n  literals: [a=1]\n",
            ),
            (
                "/r/ov/kustomization.yaml",
                "buildMetadata: [transformerAnnotations]
resources: [../base]
configMapGenerator:
- name: m
  behavior: merge
  literals: [b=2]
- name: r
  behavior: replace
  literals: [c=3]
",
            ),
        ],
        "/r/ov",
    );
    let record = "    alpha.config.kubernetes.io/transformations: |
      - configuredIn: ../base/kustomization.yaml
        configuredBy:
          apiVersion: builtin
          kind: PrefixTransformer
";
    assert_eq!(out.matches(record).count(), 2, "{out}");
}

// Rule: a strategic-merge patch gets its resource's version as text before
// the merge; over an `apiVersion` written as a list or a map that text
// (empty: kyaml reads no version there) is a node of the wrong kind.
#[test]
fn patch_over_api_version_written_as_a_collection() {
    for (api, node) in [("[v1]", "SequenceNode"), ("{a: 1}", "MappingNode")] {
        let resource =
            format!("apiVersion: {api}\nkind: X\nmetadata: {{name: a}}\nspec: {{bar: x}}\n");
        for (kust, patch) in [
            (
                "resources: [r.yaml]\npatches:\n- path: p.yaml\n  target: {kind: X}\n",
                "apiVersion: v1\nkind: X\nmetadata: {name: a}\nspec: {bar: y}\n",
            ),
            (
                "resources: [r.yaml]\npatchesStrategicMerge:\n- p.yaml\n",
                "kind: X\nmetadata: {name: a}\nspec: {bar: y}\n",
            ),
        ] {
            let e = err(
                &[
                    ("/r/kustomization.yaml", kust),
                    ("/r/r.yaml", &resource),
                    ("/r/p.yaml", patch),
                ],
                "/r",
            );
            assert!(
                e.contains(&format!(
                    "wrong node kind: expected {node} but got ScalarNode: node contents:"
                )),
                "{e}"
            );
        }
    }
}

// Rule: kustomize keeps earlier names, namespaces and kinds in three
// comma-separated annotations and panics when their lengths differ: a
// renamed resource whose namespace holds a comma, or one renamed while a
// patch had removed its name. krmsync refuses such a tree with the
// panic's message.
#[test]
fn previous_ids_that_kustomize_cannot_read_back() {
    let e = err(
        &[(
            "/r/kustomization.yaml",
            "configMapGenerator:
- name: test
  namespace: 'a,b'
  literals: [key=value]
",
        )],
        "/r",
    );
    assert!(
        e.contains("number of previous names, number of previous namespaces, number of previous kinds not equal"),
        "{e}"
    );
    let e = err(
        &[
            (
                "/r/b1/kustomization.yaml",
                "namePrefix: a-\nresources: [r.yaml]\n",
            ),
            (
                "/r/b1/r.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
            ),
            (
                "/r/b2/kustomization.yaml",
                "resources: [../b1]\npatches:\n- target: {kind: ConfigMap}\n  patch: '[{\"op\": \"remove\", \"path\": \"/metadata/name\"}]'\n",
            ),
            (
                "/r/ov/kustomization.yaml",
                "namePrefix: b-\nresources: [../b2]\npatches:\n- target: {kind: ConfigMap}\n  patch: '[{\"op\": \"add\", \"path\": \"/metadata/name\", \"value\": \"x\"}]'\n",
            ),
        ],
        "/r/ov",
    );
    assert!(e.contains("number of previous names"), "{e}");
    // a comma in a namespace nothing renamed is no earlier id: it builds
    let out = ok(
        &[
            ("/r/kustomization.yaml", "resources: [r.yaml]\n"),
            (
                "/r/r.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: 'a,b'}\n",
            ),
        ],
        "/r",
    );
    assert!(out.contains("namespace: a,b"), "{out}");
}

// Rule: kyaml reads `kind` and `apiVersion` as text whatever their YAML
// type: `kind: 0` is the kind `0` (not a missing kind), selectors match
// the text as written (`version: "1.50"` selects `apiVersion: 1.50`), and
// the values print as numbers or booleans, as parsed.
#[test]
fn kind_and_api_version_written_as_numbers() {
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "namePrefix: p-
resources: [r.yaml]
patches:
- target: {kind: \"0\"}
  patch: '[{\"op\": \"add\", \"path\": \"/x\", \"value\": 1}]'
- target: {version: \"1.50\"}
  patch: '[{\"op\": \"add\", \"path\": \"/y\", \"value\": 1}]'
",
            ),
            (
                "/r/r.yaml",
                "apiVersion: v1
kind: 0
metadata: {name: a}
---
apiVersion: 1.50
kind: true
metadata: {name: b}
",
            ),
        ],
        "/r",
    );
    assert!(
        out.contains("apiVersion: v1\nkind: 0\nmetadata:\n  name: p-a\nx: 1\n"),
        "{out}"
    );
    assert!(
        out.contains("apiVersion: 1.5\nkind: true\nmetadata:\n  name: p-b\n\"y\": 1\n"),
        "{out}"
    );
}

const HASH_BASE: [(&str, &str); 2] = [
    (
        "/b/kustomization.yaml",
        "resources: [pod.yaml]
configMapGenerator:
- name: cm
  literals: [x=1]
- name: plain
  literals: [y=1]
  options: {disableNameSuffixHash: true}
transformers:
- |
  apiVersion: builtin
  kind: HashTransformer
  metadata: {name: h}
",
    ),
    (
        "/b/pod.yaml",
        "apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - name: c
    image: i
    envFrom:
    - configMapRef: {name: cm}
    - configMapRef: {name: plain}
",
    ),
];

// Rule: a `HashTransformer` listed in `transformers` hashes the names of
// generated resources (hash not disabled) where it runs and leaves them
// asking for a hash: the build hashes them again at its end, from their
// content then (a later merge changes the second hash). References follow.
#[test]
fn an_explicit_hash_transformer_hashes_and_the_build_hashes_again() {
    let out = ok(&HASH_BASE, "/b");
    assert_eq!(
        out.matches("name: cm-hmg6f82fh6-hmg6f82fh6\n").count(),
        2,
        "{out}"
    );
    assert_eq!(out.matches("name: plain\n").count(), 2, "{out}");
    let mut files = HASH_BASE.to_vec();
    files.push((
        "/o/kustomization.yaml",
        "resources: [../b]\nnamePrefix: p-\n",
    ));
    let out = ok(&files, "/o");
    assert_eq!(
        out.matches("name: p-cm-hmg6f82fh6-hmg6f82fh6\n").count(),
        2,
        "{out}"
    );
    let mut files = HASH_BASE.to_vec();
    files.push((
        "/m/kustomization.yaml",
        "resources: [../b]
configMapGenerator:
- name: cm
  behavior: merge
  literals: [x=2]
",
    ));
    let out = ok(&files, "/m");
    assert_eq!(
        out.matches("name: cm-hmg6f82fh6-d5gm26dhhd\n").count(),
        2,
        "{out}"
    );
}

// Rule: `buildMetadata: [managedByLabel]` is a labels transformer run at
// the end: where a label of the same key was set by a labels transformer
// with selectors, it is rewritten in every place that transformer wrote it.
#[test]
fn the_managed_by_label_rewrites_every_place_a_labels_transformer_set_it() {
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [d.yaml]
labels:
- pairs: {app.kubernetes.io/managed-by: me}
  includeSelectors: true
buildMetadata: [managedByLabel]
",
            ),
            (
                "/r/d.yaml",
                "apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector:
    matchLabels: {app: d}
  template:
    metadata:
      labels: {app: d}
    spec:
      containers: [{name: c, image: nginx}]
",
            ),
        ],
        "/r",
    );
    assert_eq!(
        out.matches("app.kubernetes.io/managed-by: kustomize-(devel)\n")
            .count(),
        3,
        "{out}"
    );
    assert!(!out.contains(": me\n"), "{out}");
}

// Rule: kustomize keeps its bookkeeping (previous names and namespaces,
// prefixes, generator options) in `metadata.annotations` during the
// build, so a field spec `metadata/annotations` with `create: false` finds
// that map on a resource a namespace, prefix or suffix transformer or a
// generator touched, and adds its entries; on an untouched resource it
// adds nothing.
#[test]
fn annotations_without_create_reach_resources_kustomize_annotated_internally() {
    let base = [
        ("/b/kustomization.yaml", "resources: [d.yaml]\n"),
        (
            "/b/d.yaml",
            "apiVersion: apps/v1
kind: Deployment
metadata: {name: worker}
spec:
  template:
    spec:
      containers: [{name: c, image: nginx}]
",
        ),
    ];
    let labels = "labels:
- pairs: {env: prod}
  fields:
  - {path: metadata/annotations, kind: Deployment, create: false}
";
    for (extra, annotated) in [
        ("namespace: prod\n", true),
        ("namePrefix: x-\n", true),
        ("", false),
    ] {
        let k = format!("resources: [../b]\n{extra}{labels}");
        let mut files = base.to_vec();
        files.push(("/o/kustomization.yaml", &k));
        let out = ok(&files, "/o");
        assert_eq!(
            out.contains("  annotations:\n    env: prod\n"),
            annotated,
            "{extra:?}: {out}"
        );
        assert!(out.contains("  labels:\n    env: prod\n"), "{out}");
    }
}

// Rule: kyaml keeps one schema for the whole build. A custom `openapi:`
// schema of a nested kustomization replaces the builtin one when nothing
// made kyaml load the builtin schema before (no strategic merge ran, every
// resource read so far was of a kind kyaml knows the scope of without its
// schema); a resource of another kind read first makes it an addition.
#[test]
fn a_nested_custom_schema_replaces_the_builtin_one_unless_kyaml_loaded_it_first() {
    let base = [
        (
            "/b/kustomization.yaml",
            "resources: [cj.yaml]
patches:
- path: patch.yaml
openapi:
  path: schema.json
",
        ),
        (
            "/b/cj.yaml",
            "apiVersion: batch/v1
kind: CronJob
metadata: {name: cache}
spec:
  schedule: \"* * * * *\"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: cache
            image: nginx
            command: [run]
",
        ),
        (
            "/b/patch.yaml",
            "apiVersion: batch/v1
kind: CronJob
metadata: {name: cache}
spec:
  jobTemplate:
    spec:
      template:
        spec:
          containers:
          - name: cache
            env:
            - {name: P, value: x}
",
        ),
        (
            "/b/schema.json",
            r#"{"definitions": {"com.example.v1.Widget": {"type": "object",
 "properties": {"spec": {"type": "object"}},
 "x-kubernetes-group-version-kind": [{"group": "example.com", "kind": "Widget", "version": "v1"}]}}}"#,
        ),
    ];
    let foo = "apiVersion: example.com/v1\nkind: Foo\nmetadata: {name: f}\n";
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
    // (top-level resources, whether the containers list is merged by name)
    for (resources, merged) in [
        ("[../b]", false),
        ("[cm.yaml, ../b]", false),
        ("[../b, foo.yaml]", false),
        ("[foo.yaml, ../b]", true),
    ] {
        let k = format!("resources: {resources}\n");
        let mut files = base.to_vec();
        files.extend([
            ("/t/kustomization.yaml", k.as_str()),
            ("/t/foo.yaml", foo),
            ("/t/cm.yaml", cm),
        ]);
        let out = ok(&files, "/t");
        assert_eq!(out.contains("image: nginx"), merged, "{resources}: {out}");
        assert!(out.contains("value: x"), "{resources}: {out}");
    }
}

// Rule: a field a replacement created has no tag; a later strategic-merge
// patch of the resource sets every field it walks again, and double quotes
// such a field whose text YAML 1.1 reads as something else than a string
// (`80` becomes "80"). Without a later patch it stays a number.
#[test]
fn fields_a_replacement_created_are_quoted_by_a_later_strategic_merge() {
    let base = [
        (
            "/b/kustomization.yaml",
            "resources: [r.yaml]
replacements:
- source: {kind: Service, name: cache, fieldPath: spec.ports.0.port}
  targets:
  - select: {kind: ConfigMap}
    fieldPaths: [data.port, data.nested.inner]
    options: {create: true}
",
        ),
        (
            "/b/r.yaml",
            "apiVersion: v1
kind: Service
metadata: {name: cache}
spec:
  ports:
  - port: 80
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {a: x}
",
        ),
    ];
    let out = ok(&base, "/b");
    assert!(out.contains("    inner: 80\n  port: 80\n"), "{out}");
    let mut files = base.to_vec();
    files.push((
        "/o/kustomization.yaml",
        "resources: [../b]
patches:
- patch: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: cm}
    data: {b: y}
",
    ));
    let out = ok(&files, "/o");
    assert!(out.contains("    inner: \"80\"\n  port: \"80\"\n"), "{out}");
}

// Rule: kyaml reads a strategic-merge patch into YAML nodes, finds fields
// by the key's text and drops the fields it sets to null, so an entry with
// a key that is not a string (`8.5`, `true`, `0x1F`) and a null value
// deletes the field of that text, and never reaches the JSON a key must be
// a string in.
#[test]
fn patch_entries_with_non_string_keys_and_null_values_delete_by_key_text() {
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [w.yaml]\npatches:\n- path: patch.yaml\n",
            ),
            (
                "/r/w.yaml",
                "apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  keep: 1
  \"8.5\": gone
  \"true\": gone
",
            ),
            (
                "/r/patch.yaml",
                "apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  8.5: null
  true: ~
  key11:
    0x1F:
",
            ),
        ],
        "/r",
    );
    assert!(out.ends_with("spec:\n  keep: 1\n  key11: {}\n"), "{out}");
}

// Rule: kustomize prints a resource with go-yaml v3 and reads it back, and
// that printer changes a folded (`>`) value (a `>+` value gains a line
// break). A strategic-merge patch's value written over a field the target
// has takes that field's style, so the change only happens to a folded
// patch value of a new field.
#[test]
fn a_folded_patch_value_keeps_its_text_over_an_existing_plain_field() {
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [r.yaml]\npatches:\n- path: p.yaml\n",
            ),
            (
                "/r/r.yaml",
                "apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  template:
    spec:
      containers:
      - name: c0
        image: x
      - name: c1
",
            ),
            (
                "/r/p.yaml",
                "apiVersion: apps/v1
kind: Deployment
metadata:
  name: d
spec:
  template:
    spec:
      containers:
      - name: c0
        image: >+
          one

      - name: c1
        image: >+
          two

",
            ),
        ],
        "/r",
    );
    assert!(
        out.contains("- image: |+\n          one\n\n        name: c0\n"),
        "{out}"
    );
    assert!(
        out.contains("- image: |+\n          two\n\n\n        name: c1\n"),
        "{out}"
    );
}

// Rule: kustomize appends the inline configs of `generators:`,
// `transformers:` and `validators:` to one resource map, so two inline
// configs with the same id are an error (a config file repeating an
// inline one's id is one too, when the file is accumulated).
#[test]
fn inline_plugin_configs_with_the_same_id_are_refused() {
    let config = |kind: &str, extra: &str| {
        format!(
            "- |-\n  apiVersion: builtin\n  kind: {kind}\n  metadata:\n    name: x\n  {extra}\n"
        )
    };
    let t = config(
        "PrefixSuffixTransformer",
        "prefix: a-\n  fieldSpecs: [{path: metadata/name}]",
    );
    let k = format!("resources: [s.yaml]\ntransformers:\n{t}{t}");
    let s = "apiVersion: v1\nkind: Service\nmetadata:\n  name: s\n";
    let e = err(&[("/r/kustomization.yaml", &k), ("/r/s.yaml", s)], "/r");
    assert_eq!(
        e,
        "configuring external transformer: may not add resource with an already registered id: \
         PrefixSuffixTransformer.builtin.[noGrp]/x.[noNs]"
    );
    let g = config("ConfigMapGenerator", "literals: [a=1]");
    let k = format!("generators:\n{g}{g}");
    let e = err(&[("/r/kustomization.yaml", &k)], "/r");
    assert_eq!(
        e,
        "loading generator plugins: configuring external generator: may not add resource with \
         an already registered id: ConfigMapGenerator.builtin.[noGrp]/x.[noNs]"
    );
    // one config alone builds
    let k = format!("resources: [s.yaml]\ntransformers:\n{t}");
    let out = ok(&[("/r/kustomization.yaml", &k), ("/r/s.yaml", s)], "/r");
    assert!(out.contains("name: a-s\n"), "{out}");
}

// Rule: kustomize reads a RoleBinding's ServiceAccount subjects' namespaces
// through Go type assertions before it fixes the binding's name references:
// a subject that is not a map, or a subject with a `namespace` whose `kind`
// is not a string, makes it panic (refused here with the panic's message);
// a ServiceAccount subject's `namespace` that is not a string is an error.
// A `kind` of any type without a `namespace`, a non-string `namespace` of
// another kind of subject, and a `RoleBinding` kind of another API group
// (no name reference reaches it) build.
#[test]
fn role_binding_subjects_are_read_with_kustomizes_type_assertions() {
    let build = |api: &str, subjects: &str| {
        let rb = format!(
            "apiVersion: {api}\nkind: RoleBinding\nmetadata:\n  name: rb\nroleRef:\n  \
             apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\nsubjects:\n{subjects}\n"
        );
        render(
            &[
                ("/r/kustomization.yaml", "resources: [rb.yaml]\n"),
                ("/r/rb.yaml", &rb),
            ],
            "/r",
        )
        .map_err(|e| e.to_string())
    };
    let rbac = "rbac.authorization.k8s.io/v1";
    for (subjects, held, wanted) in [
        (
            "- {kind: [a], namespace: x, name: s}",
            "[]interface {}",
            "string",
        ),
        ("- {kind: 1, namespace: x, name: s}", "int", "string"),
        ("- {kind: 1.5, namespace: x, name: s}", "float64", "string"),
        ("- {kind: true, namespace: x, name: s}", "bool", "string"),
        ("- {kind: null, namespace: x, name: s}", "nil", "string"),
        (
            "- {kind: {a: b}, namespace: x, name: s}",
            "map[string]interface {}",
            "string",
        ),
        ("- plain", "string", "map[string]interface {}"),
        ("- [a]", "[]interface {}", "map[string]interface {}"),
        ("- null", "nil", "map[string]interface {}"),
        // the first subject that fails decides
        (
            "- {kind: User, name: u}\n- {kind: [a], namespace: x, name: s}\n- plain",
            "[]interface {}",
            "string",
        ),
    ] {
        let e = build(rbac, subjects).expect_err(subjects);
        assert!(
            e.starts_with(&format!(
                "RoleBinding.v1.rbac.authorization.k8s.io/rb.[noNs]: subjects: panic: \
                 interface conversion: interface {{}} is {held}, not {wanted} "
            )),
            "{subjects}: {e}"
        );
    }
    for subjects in [
        "- {kind: ServiceAccount, namespace: 1, name: s}",
        "- {kind: ServiceAccount, namespace: null, name: s}",
        "- {kind: ServiceAccount, namespace: [a], name: s}",
    ] {
        let e = build(rbac, subjects).expect_err(subjects);
        assert_eq!(
            e,
            "Invalid Input: namespace is blank for resource \
             \"RoleBinding.v1.rbac.authorization.k8s.io/rb.[noNs]\"",
            "{subjects}"
        );
    }
    for (api, subjects) in [
        (rbac, "- {kind: [a], name: s}"),
        (rbac, "- {kind: !!str 1, namespace: x, name: s}"),
        (rbac, "- {kind: User, namespace: [a], name: s}"),
        (rbac, "- {kind: ServiceAccount, namespace: a, name: s}"),
        (
            "example.com/v1",
            "- {kind: [a], namespace: x, name: s}\n- plain",
        ),
    ] {
        let out = build(api, subjects).unwrap_or_else(|e| panic!("{subjects}: {e}"));
        assert!(out.contains("kind: RoleBinding\n"), "{out}");
    }
}

// Rule: kustomize configures every builtin transformer a kustomization's
// fields ask for before running any, marshalling each config through Go's
// JSON and go-yaml v2, whose reader refuses DEL, C1 controls other than
// NEL, U+FFFE and U+FFFF. A field holding one fails the build there: in
// kustomize's order of the builtins, before any transformer's own error,
// and even when an overlay overwrites the value it would set.
#[test]
fn transformer_configs_with_characters_go_yaml_refuses_fail_the_build() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n";
    let build = |fields: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [cm.yaml]\n{fields}\n"),
                ),
                ("/r/cm.yaml", cm),
            ],
            "/r",
        )
        .map_err(|e| e.to_string())
    };
    let refused = |plugin: &str| {
        format!("builtin {plugin} marshal: yaml: control characters are not allowed")
    };
    for (fields, plugin) in [
        (
            r#"commonAnnotations: {a: "x\u007f"}"#,
            "AnnotationsTransformer",
        ),
        (
            r#"commonAnnotations: {"a\u0080": x}"#,
            "AnnotationsTransformer",
        ),
        (r#"namePrefix: "p\u009f""#, "PrefixTransformer"),
        (r#"nameSuffix: "p\uffff""#, "SuffixTransformer"),
        (r#"namespace: "n\ufffe""#, "NamespaceTransformer"),
        (r#"commonLabels: {a: "x\u007f"}"#, "LabelTransformer"),
        (
            r#"labels: [{pairs: {a: b}, fields: [{path: "x\u007f", kind: Foo}]}]"#,
            "LabelTransformer",
        ),
        (
            r#"images: [{name: zz, newTag: "x\u0080"}]"#,
            "ImageTagTransformer",
        ),
        (
            r#"replicas: [{name: "d\u007f", count: 1}]"#,
            "ReplicaCountTransformer",
        ),
        (
            r#"patches: [{patch: "[{\"op\": \"add\", \"path\": \"/data/c\", \"value\": \"x\u007f\"}]", target: {kind: ConfigMap}}]"#,
            "PatchTransformer",
        ),
        (
            r#"replacements: [{source: {kind: ConfigMap, fieldPath: data.a}, targets: [{select: {kind: ConfigMap, name: "x\uffff"}, fieldPaths: [data.b]}]}]"#,
            "ReplacementTransformer",
        ),
        // the first builtin in kustomize's order decides
        (
            "commonAnnotations: {a: \"x\\u007f\"}\nnamePrefix: \"p\\u007f\"",
            "PrefixTransformer",
        ),
        // configured before the patch that would fail runs
        (
            "patches: [{patch: '[{\"op\": \"replace\", \"path\": \"/data/zz\", \"value\": x}]', target: {kind: ConfigMap}}]\ncommonAnnotations: {a: \"x\\u007f\"}",
            "AnnotationsTransformer",
        ),
    ] {
        assert_eq!(
            build(fields).expect_err(fields),
            refused(plugin),
            "{fields}"
        );
    }
    // a NEL is read back folded, not refused
    let out = build(r#"commonAnnotations: {a: "x\u0085y"}"#).unwrap();
    assert!(out.contains("annotations:\n    a: x y\n"), "{out}");
    // an overlay overwriting the value does not help
    let overlay = render(
        &[
            (
                "/o/kustomization.yaml",
                "resources: [../r]\ncommonAnnotations: {a: ok}\n",
            ),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\ncommonAnnotations: {a: \"x\\u007f\"}\n",
            ),
            ("/r/cm.yaml", cm),
        ],
        "/o",
    )
    .expect_err("overlay")
    .to_string();
    assert!(
        overlay.ends_with(&refused("AnnotationsTransformer")),
        "{overlay}"
    );
}

// Rule: kyaml keeps each node's style, and a strategic merge writing a
// value over a field gives the value that field's style. A number or
// boolean written over a string that was quoted or a block scalar (even
// by choice: `"http"`, every string of a JSON file or of a `*List` item a
// multi-document file expands) is printed quoted, as the patch wrote it,
// so it stays text; a string written there stays quoted for the next
// patch; a quoted patch string keeps its style where it is new. A JSON
// patch re-creates the nodes, plain; a lone `List` document keeps its
// items' styles. The replicas transformer writes its count the same way.
#[test]
fn values_written_over_quoted_strings_stay_text() {
    let service = |target_port: &str| {
        format!(
            "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  ports:\n  - name: http\n    port: 80\n    targetPort: {target_port}\n"
        )
    };
    let smp = |target_port: &str| {
        format!(
            "- patch: |\n    apiVersion: v1\n    kind: Service\n    metadata: {{name: web}}\n    spec:\n      ports: [{{port: 80, targetPort: {target_port}}}]\n"
        )
    };
    let build = |resource: &str, patches: &str| {
        ok(
            &[
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [s.yaml]\npatches:\n{patches}"),
                ),
                ("/r/s.yaml", resource),
            ],
            "/r",
        )
    };
    for (target, patches, want) in [
        ("\"http\"", smp("9999"), "\"9999\""),
        ("'http'", smp("9999"), "\"9999\""),
        ("http", smp("9999"), "9999"),
        ("|\n      http", smp("+1"), "\"+1\""),
        ("\"http\"", smp("TRUE"), "\"TRUE\""),
        ("\"http\"", smp("2001-01-01"), "\"2001-01-01\""),
        ("\"http\"", smp("2.0"), "\"2.0\""),
        ("\"http\"", smp("1e3"), "\"1e3\""),
        // a tag that the text does not resolve to is printed: a number
        ("\"http\"", smp("!!float 2"), "2"),
        ("\"http\"", smp("grpc") + &smp("7"), "\"7\""),
        ("http", smp("grpc") + &smp("7"), "7"),
        (
            "\"http\"",
            "- target: {kind: Service}\n  patch: '[{\"op\": \"replace\", \"path\": \"/spec/ports/0/targetPort\", \"value\": \"grpc\"}]'\n".to_string()
                + &smp("7"),
            "7",
        ),
    ] {
        let out = build(&service(target), &patches);
        assert!(
            out.contains(&format!("    targetPort: {want}\n")),
            "{target} {patches}:\n{out}"
        );
    }
    // a JSON file: every string is quoted; merge keys still match
    let json = r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
 "spec": {"template": {"spec": {"containers": [
   {"name": "a", "image": "x", "env": [{"name": "E", "value": "one"}]},
   {"name": "b", "image": "y", "workingDir": "w"}]}}}}"#;
    let deployment = |containers: &str| {
        format!(
            "- patch: |\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata: {{name: d}}\n    spec:\n      template:\n        spec:\n          containers:\n{containers}"
        )
    };
    let patches = deployment(
        "          - {name: new, image: z, workingDir: \"q\"}\n          - {name: b, image: 5}\n",
    ) + &deployment(
        "          - name: a\n            env: [{name: E, value: 0x1F}]\n          - {name: b, workingDir: false}\n          - {name: new, workingDir: 8}\n",
    );
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                &format!("resources: [d.json]\npatches:\n{patches}"),
            ),
            ("/r/d.json", json),
        ],
        "/r",
    );
    for want in [
        "        - name: E\n          value: \"0x1F\"\n        image: x\n        name: a\n",
        "      - image: \"5\"\n        name: b\n        workingDir: \"false\"\n",
        "      - image: z\n        name: new\n        workingDir: \"8\"\n",
    ] {
        assert!(out.contains(want), "{want}\n{out}");
    }
    // the items of a `List` in a multi-document file are read back from
    // JSON; a lone `List` document is unwrapped as written
    let list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: web}\n  spec:\n    ports:\n    - {name: http, port: 80, targetPort: http}\n";
    for (file, want) in [
        (
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: first}}\ndata: {{a: b}}\n---\n{list}"
            ),
            "\"9999\"",
        ),
        (list.to_string(), "9999"),
    ] {
        let out = build(&file, &smp("9999"));
        assert!(out.contains(&format!("    targetPort: {want}\n")), "{out}");
    }
    // a quoted name keeps its record through a strategic merge: the prefix
    // makes text that reads as a number, and it stays a string
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"e5\"\ndata:\n  a: b\n";
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\nnamePrefix: \"1\"\npatches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: e5}\n    data: {c: d}\n",
            ),
            ("/r/cm.yaml", cm),
        ],
        "/r",
    );
    assert!(out.contains("  name: \"1e5\"\n"), "{out}");
    // the replicas transformer
    for replicas in ["\"abc\"", "'abc'"] {
        let d = format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\nspec:\n  replicas: {replicas}\n"
        );
        let out = ok(
            &[
                (
                    "/r/kustomization.yaml",
                    "resources: [d.yaml]\nreplicas: [{name: d, count: 3}]\n",
                ),
                ("/r/d.yaml", &d),
            ],
            "/r",
        );
        assert!(out.contains("  replicas: \"3\"\n"), "{out}");
    }
}

// Rule: kustomize refuses a replacement whose `targets` is a nil list. An
// entry inline in a kustomization reaches the builtin through YAML with
// `omitempty`, so `targets: []` is refused there; read from a file or from
// a `ReplacementTransformer` config, `targets: []` is an empty list and the
// replacement does nothing (`targets: null`, or none, is still refused).
#[test]
fn replacements_with_an_empty_targets_list() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: b\n";
    let source = "source: {kind: ConfigMap, fieldPath: data.a}";
    let build = |kustomization: &str, file: &str| {
        render(
            &[
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [cm.yaml]\n{kustomization}"),
                ),
                ("/r/cm.yaml", cm),
                ("/r/r.yaml", file),
            ],
            "/r",
        )
        .map_err(|e| e.to_string())
    };
    let refused = "replacements must specify a source and at least one target";
    let from_file = "replacements:\n- path: r.yaml\n";
    for file in [
        format!("{source}\ntargets: []\n"),
        format!("- {source}\n  targets: []\n"),
    ] {
        let out = build(from_file, &file).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(out.contains("  a: b\n"), "{out}");
    }
    for file in [format!("{source}\ntargets: null\n"), format!("{source}\n")] {
        assert_eq!(build(from_file, &file).expect_err(&file), refused);
    }
    let inline = format!("replacements:\n- {source}\n  targets: []\n");
    assert_eq!(build(&inline, "").expect_err("inline"), refused);
    let plugin = format!(
        "transformers:\n- |-\n  apiVersion: builtin\n  kind: ReplacementTransformer\n  metadata: {{name: x}}\n  replacements:\n  - {source}\n    targets: []\n"
    );
    build(&plugin, "").unwrap_or_else(|e| panic!("plugin config: {e}"));
}

// Rule: the ValueAddTransformer writes with kyaml's scalar setter: the text
// goes in untyped, so it reads as plain YAML (`0123` is the number 83,
// `true` a boolean), unless the field was written quoted; annotations keep
// the text, until a JSON patch reads the resource as JSON and the
// annotation comes back as what its text read as (`83`). The same quoting
// record keeps `images` and `namePrefix` rewrites of a quoted field
// strings (`image: "web"` renamed `7` is `"7"`).
#[test]
fn value_add_writes_untyped_text_and_quoted_fields_stay_strings() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  q: \"quoted\"\nspec:\n  n: 5\n";
    let value_add = |value: &str, target: &str| {
        format!(
            "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata:\n  name: v\nvalue: {value}\ntargets:\n- fieldPath: {target}\n"
        )
    };
    let build = |va: &str, extra: &str| {
        ok(
            &[
                (
                    "/r/kustomization.yaml",
                    &format!("resources: [cm.yaml]\ntransformers: [va.yaml]\n{extra}"),
                ),
                ("/r/cm.yaml", cm),
                ("/r/va.yaml", va),
            ],
            "/r",
        )
    };
    for (value, target, want) in [
        ("\"0123\"", "data/x", "  x: 83\n"),
        ("\"true\"", "spec/n", "  \"n\": true\n"),
        ("\"1.50\"", "data/x", "  x: 1.5\n"),
        ("\"~\"", "data/x", "  x: null\n"),
        ("\"0123\"", "data/q", "  q: \"0123\"\n"),
        ("\"true\"", "data/q", "  q: \"true\"\n"),
        (
            "\"0123\"",
            "metadata/annotations/y",
            "    \"y\": \"0123\"\n",
        ),
    ] {
        let out = build(&value_add(value, target), "");
        assert!(out.contains(want), "{value} {target}:\n{out}");
    }
    // a JSON patch in a later layer reads the annotation as JSON
    let va = value_add("\"0123\"", "metadata/annotations/y");
    let out = ok(
        &[
            (
                "/o/kustomization.yaml",
                "resources: [../r]\npatches:\n- target: {kind: ConfigMap}\n  patch: '[{\"op\": \"add\", \"path\": \"/data/z\", \"value\": \"q\"}]'\n",
            ),
            (
                "/r/kustomization.yaml",
                "resources: [cm.yaml]\ntransformers: [va.yaml]\n",
            ),
            ("/r/cm.yaml", cm),
            ("/r/va.yaml", &va),
        ],
        "/o",
    );
    assert!(out.contains("    \"y\": \"83\"\n"), "{out}");
    // images and prefixes over quoted fields
    let d = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: \"d\"\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: \"web\"\n      - name: e\n        image: web\n";
    let out = ok(
        &[
            (
                "/r/kustomization.yaml",
                "resources: [d.yaml]\nimages: [{name: web, newName: \"7\"}]\n",
            ),
            ("/r/d.yaml", d),
        ],
        "/r",
    );
    assert!(
        out.contains("      - image: \"7\"\n        name: c\n      - image: 7\n        name: e\n"),
        "{out}"
    );
}

// Rule: after a block scalar header with an indentation indicator, a line
// indented past the enclosing block but short of the scalar's indentation
// ends the (empty) scalar, as in libyaml; a comment there is fine.
#[test]
fn a_comment_short_of_a_block_scalars_indentation_ends_it() {
    for (value, extra) in [
        (">+3\n   # not a comment\n", ""),
        (">+3\n   # not a comment\n", "  other: x\n"),
        ("|2\n  # c\n", ""),
        ("|1\n # c\n", "  other: x\n"),
        (">2\n   # c\n", "  k: v\n"),
    ] {
        let cm = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  value: {value}{extra}"
        );
        let out = ok(
            &[
                ("/r/kustomization.yaml", "resources: [cm.yaml]\n"),
                ("/r/cm.yaml", &cm),
            ],
            "/r",
        );
        assert!(out.contains("  value: \"\"\n"), "{cm}\n{out}");
        if !extra.is_empty() {
            assert!(out.contains(extra), "{cm}\n{out}");
        }
    }
    // a line that is not a comment there is still an error
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  value: |3\n   x\n";
    err(
        &[
            ("/r/kustomization.yaml", "resources: [cm.yaml]\n"),
            ("/r/cm.yaml", cm),
        ],
        "/r",
    );
}
