#!/usr/bin/env python3
"""Differential test over a wide range of kustomize features: random
kustomization trees built with `kubectl kustomize` (kustomize v5.5, the
reference) and `krmsync build`.

    python3 tools/difftest_features.py [--trees N] [--seed S] [--krmsync BIN] [--keep DIR]

Where tools/difftest.py draws from a narrow, realistic set, this generator
combines many features at random, each tree small (a few files):

  * kinds: Deployment, StatefulSet (serviceName, volumeClaimTemplates),
    DaemonSet, Job, CronJob, Pod, ReplicaSet, Service, Ingress (tls,
    backends), ConfigMap and Secret files, PersistentVolumeClaim,
    ServiceAccount, Role/RoleBinding, ClusterRole/ClusterRoleBinding,
    NetworkPolicy, PodDisruptionBudget, HorizontalPodAutoscaler,
    PriorityClass, StorageClass, Namespace, Validating/Mutating webhook
    configurations, APIService, a CustomResourceDefinition and its custom
    resources; pod specs with projected volumes, envFrom/valueFrom,
    imagePullSecrets, serviceAccountName, priorityClassName, init
    containers, $(VAR) references;
  * resources as files (multi-document with varied separators, JSON,
    `kind: List`, comments, YAML anchors and merge keys), directories and
    nested kustomizations; components (several overlays sharing one);
    multi-level overlays and diamonds; deprecated `bases:`;
  * configMapGenerator / secretGenerator: literals, files (key renames),
    envs, behavior create/merge/replace, options, generatorOptions, secret
    types, values that need quoting (booleans, octal-looking, exponents,
    null, empty, multi-line, leading spaces, unicode, long lines);
  * patches: strategic merge (files, inline, `$patch: delete|replace`,
    `$setElementOrder`, `$retainKeys`, `$deleteFromPrimitiveList`, null
    deletes), JSON 6902 (inline and files; add/replace/remove/copy/move/
    test, simulated so that most sequences apply), targets by group/
    version/kind/name (regex), namespace, label and annotation selectors,
    allowNameChange/allowKindChange; deprecated patchesStrategicMerge /
    patchesJson6902; patches and replacements also aim at generated objects;
  * replacements (inline and `path:`), with kind/name/namespace/label/
    annotation selectors, `reject`, list selectors, indexes, wildcards,
    delimiter/index/create options; vars; configurations (nameReference,
    varReference, commonLabels, images, replicas, namePrefix fieldSpecs for
    the custom kind); `crds:`; `openapi:` with a custom schema (merge keys
    for a custom list);
  * namespace, namePrefix/nameSuffix, labels (includeSelectors,
    includeTemplates, fields), commonLabels, commonAnnotations, images
    (newName, newTag, digest, registries with ports), replicas,
    sortOptions (legacy with orderFirst/orderLast, fifo), buildMetadata;
  * builtin plugin configurations under transformers:/generators:, inline
    and as files;
  * a few deliberate errors (missing files, bad patch targets, name
    collisions, conflicting generator behaviours, malformed YAML).

Both tools build the top directory; a tree passes when both fail, or both
succeed with byte-identical stdout (error texts are not compared). Most
trees are meant to build, yet with so many features in play over half are
refused by both, which exercises error agreement. Failing trees are copied
to --keep (default ./difftest-features-failures) with `top.txt` (the
directory built), `kustomize.out` and `krmsync.out` (stdout then stderr of
each). --verbose prints one line per tree, with kustomize's error. The run
ends with a line
`difftest-features: N passed, M failed (R of the passed refused by both)`.

Trees are generated from --seed, so a failure is reproducible: the kept
directory name carries the tree's seed (`--trees 1 --seed <it>`).
"""

import base64
import copy
import json
import os
import re
import sys
from pathlib import Path

# ---------------------------------------------------------------- YAML out


class Lit:
    """A scalar written verbatim (unquoted), e.g. `on`, `0123`, `~`."""

    def __init__(self, text):
        self.text = text


_AMBIGUOUS = re.compile(
    r"(?i)^(true|false|yes|no|on|off|y|n|null|~|\.inf|-\.inf|\+\.inf|\.nan)$"
    r"|^[-+]?(\d[\d_]*)?\.?\d*([eE][-+]?\d+)?$"
    r"|^0[xob]"
    r"|^\d{4}-\d\d?-\d\d?"
    r"|^[-+]?\d[\d_]*(:[0-5]?\d)+(\.\d*)?$"
)


def needs_quote(s, flow=False):
    if s == "" or _AMBIGUOUS.search(s):
        return True
    if s[0] in "-?:,[]{}#&*!|>'\"%@` " or s[-1] in " :\t":
        return True
    if ": " in s or " #" in s or "\t" in s or "\n" in s:
        return True
    if s in ("<<", "=") or s.startswith("---") or s.startswith("..."):
        return True
    if flow and any(c in s for c in ",[]{}"):
        return True
    return any(ord(c) < 32 or ord(c) == 127 or 0x80 <= ord(c) < 0xA0 or c in "\ufeff\u2028\u2029" for c in s)


class Emitter:
    """A small YAML writer with a few randomised style choices."""

    def __init__(self, r):
        self.r = r
        self.list_indent = r.choice([0, 2])
        self.quote = r.choice(["double", "single", "mixed"])
        self.flow = r.random() < 0.25

    def scalar(self, v, flow=False):
        if isinstance(v, Lit):
            return v.text
        if v is None:
            return self.r.choice(["null", "~", ""]) if self.quote == "mixed" else "null"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        s = str(v)
        force = self.quote != "mixed" and self.r.random() < 0.05
        if not needs_quote(s, flow) and not force:
            return s
        single_ok = all(32 <= ord(c) and not 127 <= ord(c) < 160 for c in s)
        style = self.quote if self.quote != "mixed" else self.r.choice(["double", "single"])
        if style == "single" and single_ok:
            return "'" + s.replace("'", "''") + "'"
        return re.sub("[\x7f-\x9f\u2028\u2029\ufeff]", lambda m: "\\u%04x" % ord(m.group()), json.dumps(s, ensure_ascii=False))

    @staticmethod
    def block_ok(s):
        if "\n" not in s.rstrip("\n") or "\r" in s or "\t" in s:
            return False
        if s.startswith(" ") or s.startswith("\n") or s.endswith("\n\n"):
            return False
        if any(line != line.rstrip(" ") for line in s.split("\n")):
            return False
        return all((ord(c) >= 32 or c == "\n") and not 127 <= ord(c) < 160 and c not in "\u2028\u2029\ufeff" for c in s)

    def block(self, s, indent):
        head = "|" if s.endswith("\n") else "|-"
        pad = " " * indent
        body = "".join((pad + line if line else "") + "\n" for line in s.rstrip("\n").split("\n"))
        return head, body

    def key(self, k):
        return self.scalar(k) if needs_quote(str(k)) else str(k)

    def value_inline(self, v, indent):
        """(text after 'key:' , following lines) for a value."""
        if isinstance(v, dict):
            if not v:
                return " {}", ""
            if self.flow and len(v) <= 2 and all(isinstance(x, (str, int, bool)) and not isinstance(x, Lit) for x in v.values()) and self.r.random() < 0.3:
                return " {" + ", ".join(f"{self.key(k)}: {self.scalar(x, True)}" for k, x in v.items()) + "}", ""
            return "", self.map(v, indent + 2)
        if isinstance(v, list):
            if not v:
                return " []", ""
            if self.flow and len(v) <= 4 and all(isinstance(x, (str, int)) and not isinstance(x, Lit) and "\n" not in str(x) for x in v) and self.r.random() < 0.5:
                return " [" + ", ".join(self.scalar(x, True) for x in v) + "]", ""
            return "", self.seq(v, indent + self.list_indent)
        if isinstance(v, str) and self.block_ok(v):
            head, body = self.block(v, indent + 2)
            return " " + head, body
        return " " + self.scalar(v), ""

    def map(self, d, indent=0):
        out = []
        pad = " " * indent
        for k, v in d.items():
            inline, rest = self.value_inline(v, indent)
            out.append(f"{pad}{self.key(k)}:{inline}\n{rest}")
        return "".join(out)

    def seq(self, items, indent):
        out = []
        pad = " " * indent
        for it in items:
            if isinstance(it, dict) and it:
                body = self.map(it, indent + 2)
                out.append(pad + "- " + body[indent + 2:])
            elif isinstance(it, list) and it:
                out.append(pad + "-\n" + self.seq(it, indent + 2))
            elif isinstance(it, str) and self.block_ok(it):
                head, body = self.block(it, indent + 2)
                out.append(f"{pad}- {head}\n{body}")
            elif isinstance(it, dict):
                out.append(pad + "- {}\n")
            elif isinstance(it, list):
                out.append(pad + "- []\n")
            else:
                out.append(f"{pad}- {self.scalar(it)}\n")
        return "".join(out)


def has_lit(v):
    if isinstance(v, Lit):
        return True
    if isinstance(v, dict):
        return any(has_lit(x) for x in v.values())
    if isinstance(v, list):
        return any(has_lit(x) for x in v)
    return False


def to_yaml(r, obj):
    return Emitter(r).map(obj)


def with_comments(r, text):
    """Sprinkle comments over a YAML text (never inside block scalars)."""
    out = []
    in_block = None
    for line in text.split("\n"):
        ind = len(line) - len(line.lstrip(" "))
        if in_block is not None and (not line.strip() or ind > in_block):
            out.append(line)
            continue
        in_block = None
        if line.rstrip().endswith(("|", "|-", "|+")):
            in_block = ind
            out.append(line)
            continue
        if line.strip() and r.random() < 0.08:
            out.append(" " * ind + "# note")
        if line.strip() and not line.rstrip().endswith(":") and '"' not in line and "'" not in line and "#" not in line and r.random() < 0.05:
            line += "  # trailing"
        out.append(line)
    return "\n".join(out)


def docs_text(r, docs):
    """Several documents in one file, with varied separators; now and then a
    JSON file, a `kind: List`, comments or empty documents."""
    if len(docs) == 1 and not has_lit(docs[0]) and r.random() < 0.1:
        return json.dumps(docs[0], indent=r.choice([None, 2]), ensure_ascii=False) + "\n"
    if len(docs) > 1 and r.random() < 0.05:
        docs = [{"apiVersion": "v1", "kind": r.choice(["List", "ConfigMapList", "List"]), "items": docs}]
    parts = []
    for i, d in enumerate(docs):
        text = to_yaml(r, d)
        if r.random() < 0.1:
            text = with_comments(r, text)
        if i == 0:
            lead = r.choice(["", "", "", "---\n", "# generated\n", "---\n# doc\n"])
        else:
            lead = r.choice(["---\n", "---\n", "\n---\n", "--- # next\n", "---\n---\n", "---\n# only a comment\n---\n"])
        parts.append(lead + text)
    tail = r.choice(["", "", "", "---\n", "...\n"]) if len(docs) > 0 else ""
    return "".join(parts) + tail


ANCHORED = """apiVersion: v1
kind: ConfigMap
metadata:
  name: anchored
  labels: &labels
    app: anchored
  annotations: *labels
data:
  base: &b value
  copy: *b
  <<: {merged: "yes"}
"""


# ---------------------------------------------------------- vocabulary

WORDS = ["web", "api", "cache", "worker", "front", "db", "queue", "auth", "mail", "search"]
IMAGES = [
    "nginx:1.25",
    "nginx",
    "redis:7",
    "busybox",
    "docker.io/library/postgres:15",
    "ghcr.io/acme/api:v1.2.3",
    "registry.example.com:5000/team/web:2.0",
    "registry.example.com/team/web@sha256:" + "a" * 64,
    "quay.io/org/tool:1.0@sha256:" + "b" * 64,
    "localhost:5000/worker",
    "gcr.io/proj/sub/path/img:tag-1",
]
DIGEST = "sha256:" + "c" * 64
TRICKY = [
    "true", "false", "0123", "1e3", "on", "off", "yes", "no", "null", "~", "", "0x1F", "1_000", "12:30",
    "1.0", ".5", "+1", "-1", "2001-12-14", "a: b", "# not a comment", "- dash", "[x]", "{y}", "*star",
    "&anchor", "!tag", "%pct", "@at", "`tick`", " leading", "trailing ", "tab\there", "multi\nline\n",
    "multi\nline no newline", "  indented\nblock\n", "unicode é ü 日本 🚀", "quote ' single", 'quote " double',
    "back\\slash", "x" * 130, ("word " * 40).strip(), "=eq", "a=b=c", "\u00a0nbsp", "null\n", "line1\n\nline3\n",
    "ends with colon:", "<<", "?q", "|pipe", ">gt", "N", "Y", "NO", "True", "FALSE", ".inf", "-.Inf", ".NaN", "0o17",
    "0b101", "1:20", "10:30:00", "2023-01-01T10:00:00Z", "12e", "e3", "1,000", "$(VAR)", "${HOME}",
    "line\u2028sep", "del\x7f", "bell\x07", "\ufeffbom", "crlf\r\nline", "ends with newline\n", "a\\nb", "emoji 🚀 and 𝔘",
    "  ", "- ", "? x", "{a: b}", "[1, 2]", "key: value\nother: 2\n", "0.0.0.0", "1.2.3", "v1.0", "1e-3", "-0", "0x", "+.inf",
]
LIT_VALUES = ["on", "off", "yes", "no", "0123", "1e3", "~", "null", "true", "012", "0x10", "1_000", "12:30", "3.0",
              "2001-12-14", "-.inf", ".nan", "y", "n", "0o14", "1.", "+12", "007"]
NAMESPACES = ["prod", "staging", "team-a", "kube-system", "default", "ns1"]
GROUPS = {
    "Deployment": "apps/v1", "StatefulSet": "apps/v1", "DaemonSet": "apps/v1", "ReplicaSet": "apps/v1",
    "Job": "batch/v1", "CronJob": "batch/v1", "Pod": "v1", "Service": "v1", "ConfigMap": "v1", "Secret": "v1",
    "PersistentVolumeClaim": "v1", "ServiceAccount": "v1", "Namespace": "v1",
    "Ingress": "networking.k8s.io/v1", "NetworkPolicy": "networking.k8s.io/v1",
    "Role": "rbac.authorization.k8s.io/v1", "RoleBinding": "rbac.authorization.k8s.io/v1",
    "ClusterRole": "rbac.authorization.k8s.io/v1", "ClusterRoleBinding": "rbac.authorization.k8s.io/v1",
    "PodDisruptionBudget": "policy/v1", "HorizontalPodAutoscaler": "autoscaling/v2",
    "PriorityClass": "scheduling.k8s.io/v1", "StorageClass": "storage.k8s.io/v1",
    "ValidatingWebhookConfiguration": "admissionregistration.k8s.io/v1",
    "MutatingWebhookConfiguration": "admissionregistration.k8s.io/v1",
    "APIService": "apiregistration.k8s.io/v1", "CustomResourceDefinition": "apiextensions.k8s.io/v1",
    "Widget": "example.com/v1", "PersistentVolume": "v1",
}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "StorageClass", "PersistentVolume",
                  "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "CustomResourceDefinition"}
WORKLOADS = ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod"]
CERT = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ2V4\nZmFrZQ==\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEG\n-----END PRIVATE KEY-----\n"


def meta(name, labels=None, ns=None, annotations=None):
    m = {"name": name}
    if ns:
        m["namespace"] = ns
    if labels:
        m["labels"] = dict(labels)
    if annotations:
        m["annotations"] = dict(annotations)
    return m


def obj(kind, name, body=None, **kw):
    o = {"apiVersion": GROUPS[kind], "kind": kind, "metadata": meta(name, **kw)}
    if body:
        o.update(body)
    return o


def b64(s):
    return base64.b64encode(s.encode()).decode()


# --------------------------------------------------------------- paths


def scalar_paths(node):
    """Every scalar leaf as (segments, value); a list step is ('#', index, item)."""
    return [(p, v) for p, v in all_paths(node) if not isinstance(v, (dict, list))]


def all_paths(node, prefix=()):
    out = [(prefix, node)]
    if isinstance(node, dict):
        for k, v in node.items():
            out += all_paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += all_paths(v, prefix + (("#", i, v),))
    return out


def fieldpath(r, segs, wild=True, root=None):
    """Replacement/vars fieldPath syntax; `*` only where every item of the
    list (in root) has the rest of the path."""
    parts = []
    steps = [s if isinstance(s, str) else s[1] for s in segs]
    cur = root
    for n, s in enumerate(segs):
        here = cur
        if cur is not None:
            try:
                cur = json_get(cur, [steps[n]])
            except (KeyError, IndexError, TypeError, ValueError):
                cur = None
        if isinstance(s, tuple):
            if wild and isinstance(here, list):
                ok = True
                for item in here:
                    try:
                        json_get(item, steps[n + 1:])
                    except (KeyError, IndexError, TypeError, ValueError):
                        ok = False
                wild = ok
            elif root is not None:
                wild = False
            _, i, item = s
            scal = [(k, v) for k, v in item.items() if isinstance(v, (str, int)) and not isinstance(v, bool)] if isinstance(item, dict) else []
            if isinstance(item, dict) and "name" in item and isinstance(item["name"], str) and r.random() < 0.6:
                parts.append(f"[name={item['name']}]")
            elif scal and r.random() < 0.15:
                k, v = r.choice(scal)
                parts.append(f"[{k}={v}]")
            elif wild and r.random() < 0.08:
                parts.append("*")
            else:
                parts.append(str(i))
        elif "." in s or ("/" in s and r.random() < 0.5):
            parts.append(f"[{s}]")
        else:
            parts.append(s)
    return ".".join(parts)


def json_pointer(steps):
    return "".join("/" + (str(s).replace("~", "~0").replace("/", "~1") if isinstance(s, str) else str(s)) for s in steps)


def json_get(doc, steps):
    cur = doc
    for s in steps:
        if isinstance(cur, list):
            cur = cur[int(s)]
        elif isinstance(cur, dict):
            cur = cur[s]
        else:
            raise TypeError(s)
    return cur


def json_apply(doc, e):
    """Apply one JSON 6902 operation in place (enough to keep generated ops valid)."""

    def split(ptr):
        parts = [p.replace("~1", "/").replace("~0", "~") for p in ptr.split("/")[1:]]
        return parts[:-1], parts[-1]

    def put(ptr, value, insert):
        par, last = split(ptr)
        parent = json_get(doc, par)
        if isinstance(parent, list):
            if last == "-":
                parent.append(value)
                return
            i = int(last)
            if i > len(parent) or (not insert and i >= len(parent)):
                raise IndexError(i)
            if insert:
                parent.insert(i, value)
            else:
                parent[i] = value
        elif isinstance(parent, dict):
            if not insert and last not in parent:
                raise KeyError(last)
            parent[last] = value
        else:
            raise TypeError(ptr)

    def take(ptr):
        par, last = split(ptr)
        parent = json_get(doc, par)
        if isinstance(parent, list):
            return parent.pop(int(last))
        return parent.pop(last)

    op = e["op"]
    if op == "add":
        put(e["path"], copy.deepcopy(e["value"]), True)
    elif op == "replace":
        put(e["path"], copy.deepcopy(e["value"]), False)
    elif op == "remove":
        take(e["path"])
    elif op == "test":
        par, last = split(e["path"])
        cur = json_get(doc, par + [last])
        if cur != e["value"]:
            raise ValueError("test")
    elif op == "copy":
        par, last = split(e["from"])
        put(e["path"], copy.deepcopy(json_get(doc, par + [last])), True)
    elif op == "move":
        put(e["path"], take(e["from"]), True)


# ---------------------------------------------------------------- tree


class Tree:
    def __init__(self, rnd):
        self.r = rnd
        self.files = {}
        self.diamond = False  # two overlays of one base under a root
        self.nplugins = 0
        self.pseudo = set()  # ids of generated objects modelled as targets

    def add(self, path, text):
        self.files[path] = text

    def p(self, x):
        return self.r.random() < x

    def val(self):
        return self.r.choice(TRICKY) if self.p(0.6) else self.r.choice(WORDS) + str(self.r.randint(0, 99))

    # ------------------------------------------------------- pod specs
    def container(self, name, names, init=False):
        r = self.r
        c = {"name": name, "image": r.choice(IMAGES)}
        if self.p(0.3):
            c["imagePullPolicy"] = r.choice(["Always", "IfNotPresent"])
        if self.p(0.35):
            c["command"] = r.choice([["/bin/sh", "-c"], ["run"], ["/app", "--config=$(CONFIG_PATH)"]])
        if self.p(0.45):
            c["args"] = r.sample(["--port=8080", "--svc=$(SVC_NAME)", "--ns=$(MY_NS)", "--v=2", "$(UNDEFINED_VAR)",
                                  "--image=$(IMG)", "--replicas=$(REPLICAS)", "-x", "$$(ESCAPED)"], r.randint(1, 3))
        env = []
        if self.p(0.5):
            env.append({"name": "PLAIN", "value": self.val()})
        if self.p(0.3):
            env.append({"name": "SVC", "value": "$(SVC_NAME)"})
        if names["cms"] and self.p(0.5):
            env.append({"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": r.choice(names["cms"]), "key": "MODE"}}})
        if names["secrets"] and self.p(0.4):
            env.append({"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": r.choice(names["secrets"]), "key": "token", "optional": True}}})
        if self.p(0.2):
            env.append({"name": "MY_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}})
        if env:
            c["env"] = env
        ef = []
        if names["cms"] and self.p(0.5):
            ef.append({"configMapRef": {"name": r.choice(names["cms"])}})
        if names["secrets"] and self.p(0.3):
            ef.append({"prefix": "S_", "secretRef": {"name": r.choice(names["secrets"])}})
        if ef:
            c["envFrom"] = ef
        if not init and self.p(0.4):
            c["ports"] = [{"name": "http", "containerPort": r.choice([80, 8080]), "protocol": "TCP"}]
            if self.p(0.3):
                c["ports"].append({"name": "metrics", "containerPort": 9090})
        if not init and self.p(0.3):
            c["resources"] = {"limits": {"cpu": r.choice(["100m", "1", Lit("0.5")]), "memory": "128Mi"}}
        if self.p(0.3):
            c["volumeMounts"] = [{"name": "config", "mountPath": "/etc/config"}]
        return c

    def pod_spec(self, app, names, restart=None):
        r = self.r
        spec = {}
        if self.p(0.35):
            spec["serviceAccountName"] = names["sa"]
        if self.p(0.2):
            spec["priorityClassName"] = names["pc"]
        if restart:
            spec["restartPolicy"] = restart
        if self.p(0.3):
            spec["initContainers"] = [self.container("init-" + app, names, init=True)]
        spec["containers"] = [self.container(app, names)]
        if self.p(0.25):
            spec["containers"].append(self.container("sidecar", names))
        vols = []
        if self.p(0.5):
            vols.append({"name": "config", "configMap": {"name": r.choice(names["cms"] or [app + "-config"])}})
        if names["secrets"] and self.p(0.3):
            vols.append({"name": "creds", "secret": {"secretName": r.choice(names["secrets"]), "defaultMode": Lit("0400") if self.p(0.5) else 256}})
        if self.p(0.25):
            srcs = []
            if names["cms"]:
                srcs.append({"configMap": {"name": r.choice(names["cms"]), "items": [{"key": "MODE", "path": "mode"}]}})
            if names["secrets"]:
                srcs.append({"secret": {"name": r.choice(names["secrets"])}})
            srcs.append({"serviceAccountToken": {"path": "token", "expirationSeconds": 3600, "audience": "api"}})
            if self.p(0.5):
                srcs.append({"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}})
            vols.append({"name": "projected", "projected": {"sources": srcs}})
        if self.p(0.2):
            vols.append({"name": "data", "persistentVolumeClaim": {"claimName": names["pvc"]}})
        if self.p(0.15):
            vols.append({"name": "scratch", "emptyDir": {}})
        if self.p(0.1):
            vols.append({"name": "csi", "csi": {"driver": "secrets-store.csi.k8s.io", "nodePublishSecretRef": {"name": r.choice(names["secrets"] or ["creds"])}}})
        if vols:
            spec["volumes"] = vols
        if self.p(0.3):
            spec["imagePullSecrets"] = [{"name": "regcred"}]
        if self.p(0.15):
            spec["nodeSelector"] = {"kubernetes.io/os": "linux"}
        if self.p(0.15):
            spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": app, "effect": "NoSchedule"}]
        if self.p(0.1):
            spec["affinity"] = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                                                    "labelSelector": {"matchLabels": {"app": app}}}}]}}
        return spec

    def workload(self, kind, app, names):
        r = self.r
        labels = {"app": app}
        if self.p(0.3):
            labels["app.kubernetes.io/name"] = app
        tmpl = {"metadata": {"labels": dict(labels)}}
        if self.p(0.2):
            tmpl["metadata"]["annotations"] = {"prometheus.io/scrape": "true"}
        if kind == "Pod":
            return obj("Pod", app, {"spec": self.pod_spec(app, names)}, labels=labels)
        if kind in ("Job", "CronJob"):
            tmpl["spec"] = self.pod_spec(app, names, restart=r.choice(["Never", "OnFailure"]))
            job = {"template": tmpl}
            if self.p(0.4):
                job["backoffLimit"] = r.randint(0, 6)
            if kind == "Job":
                return obj("Job", app, {"spec": job}, labels=labels if self.p(0.7) else None)
            return obj("CronJob", app, {"spec": {"schedule": r.choice(["*/5 * * * *", "0 0 * * *", "@hourly"]),
                                                 "jobTemplate": {"spec": job}}}, labels=labels)
        tmpl["spec"] = self.pod_spec(app, names)
        spec = {}
        if kind in ("Deployment", "StatefulSet", "ReplicaSet") and self.p(0.8):
            spec["replicas"] = r.randint(0, 5)
        spec["selector"] = {"matchLabels": dict(labels)}
        if self.p(0.1):
            spec["selector"]["matchExpressions"] = [{"key": "tier", "operator": "In", "values": ["a", "b"]}]
        spec["template"] = tmpl
        if kind == "StatefulSet":
            spec["serviceName"] = app
            if self.p(0.6):
                spec["volumeClaimTemplates"] = [{"metadata": {"name": "data", "labels": {"app": app}},
                                                 "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": names["sc"],
                                                          "resources": {"requests": {"storage": "1Gi"}}}}]
        if kind == "Deployment" and self.p(0.2):
            spec["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": r.choice([1, "25%"]), "maxUnavailable": 0}}
        return obj(kind, app, {"spec": spec}, labels=labels if self.p(0.85) else None,
                   annotations={"team": r.choice(WORDS)} if self.p(0.2) else None)

    # --------------------------------------------------- other kinds
    def service(self, app):
        r = self.r
        spec = {"selector": {"app": app}, "ports": [{"name": "http", "port": 80, "targetPort": r.choice([80, 8080, "http"])}]}
        if self.p(0.3):
            spec["type"] = r.choice(["ClusterIP", "NodePort", "LoadBalancer"])
        if self.p(0.1):
            spec["clusterIP"] = "None"
        if self.p(0.15):
            spec["ports"].append({"name": "metrics", "port": 9090, "protocol": "TCP"})
        return obj("Service", app, {"spec": spec}, labels={"app": app} if self.p(0.5) else None)

    def ingress(self, apps, names):
        r = self.r
        paths = [{"path": "/" + a, "pathType": "Prefix", "backend": {"service": {"name": a, "port": {"number": 80}}}} for a in apps]
        spec = {}
        if self.p(0.4):
            spec["ingressClassName"] = "nginx"
        if self.p(0.3):
            spec["defaultBackend"] = {"service": {"name": apps[0], "port": {"name": "http"}}}
        spec["rules"] = [{"host": r.choice(["example.com", "$(HOST)", "a.example.org"]), "http": {"paths": paths}}]
        if self.p(0.6):
            spec["tls"] = [{"hosts": ["example.com"], "secretName": names["tls"]}]
        return obj("Ingress", "main", {"spec": spec}, annotations={"nginx.ingress.kubernetes.io/rewrite-target": "/"} if self.p(0.4) else None)

    def extra(self, kind, apps, names):
        r = self.r
        app = apps[0]
        if kind == "PersistentVolumeClaim":
            return obj(kind, names["pvc"], {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": names["sc"],
                                                     "resources": {"requests": {"storage": "5Gi"}}}})
        if kind == "PersistentVolume":
            return obj(kind, "pv1", {"spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
                                              "storageClassName": names["sc"],
                                              "claimRef": {"name": names["pvc"], "namespace": r.choice(NAMESPACES)},
                                              "hostPath": {"path": "/data"}}})
        if kind == "ServiceAccount":
            body = {}
            if self.p(0.4):
                body["imagePullSecrets"] = [{"name": "regcred"}]
            if self.p(0.2):
                body["secrets"] = [{"name": r.choice(names["secrets"] or ["tok"])}]
            return obj(kind, names["sa"], body)
        if kind == "Role":
            return obj(kind, "reader", {"rules": [{"apiGroups": [""], "resources": ["configmaps", "secrets"], "verbs": ["get", "list"],
                                                   **({"resourceNames": names["cms"][:1]} if names["cms"] and self.p(0.5) else {})}]})
        if kind == "RoleBinding":
            subj = [{"kind": "ServiceAccount", "name": names["sa"]}]
            if self.p(0.5):
                subj[0]["namespace"] = r.choice(NAMESPACES)
            if self.p(0.3):
                subj.append({"kind": "User", "name": "jane", "apiGroup": "rbac.authorization.k8s.io"})
            if self.p(0.3):
                subj.append({"kind": "ServiceAccount", "name": "default", "namespace": r.choice(NAMESPACES)})
            rk = r.choice(["Role", "Role", "ClusterRole"])
            return obj(kind, "reader", {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": rk,
                                                    "name": "reader" if rk == "Role" else "viewer"}, "subjects": subj})
        if kind == "ClusterRole":
            body = {"rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}]}
            if self.p(0.2):
                body["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]}
            return obj(kind, "viewer", body)
        if kind == "ClusterRoleBinding":
            subj = [{"kind": "ServiceAccount", "name": names["sa"], "namespace": r.choice(NAMESPACES)}]
            if self.p(0.4):
                subj.append({"kind": "ServiceAccount", "name": "other", "namespace": "default"})
            if self.p(0.2):
                subj.append({"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"})
            return obj(kind, "viewer", {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "viewer"},
                                        "subjects": subj})
        if kind == "NetworkPolicy":
            return obj(kind, "allow-" + app, {"spec": {"podSelector": {"matchLabels": {"app": app}}, "policyTypes": ["Ingress"],
                                                       "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": r.choice(apps)}}},
                                                                             {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": r.choice(NAMESPACES)}}}],
                                                                    "ports": [{"protocol": "TCP", "port": 80}]}]}})
        if kind == "PodDisruptionBudget":
            spec = {"selector": {"matchLabels": {"app": app}}}
            spec[r.choice(["minAvailable", "maxUnavailable"])] = r.choice([1, "50%"])
            return obj(kind, app, {"spec": spec})
        if kind == "HorizontalPodAutoscaler":
            return obj(kind, app, {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": names["wkind"].get(app, "Deployment"), "name": app},
                                            "minReplicas": 1, "maxReplicas": r.randint(2, 10),
                                            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]}})
        if kind == "PriorityClass":
            return obj(kind, names["pc"], {"value": r.choice([1000, 100000]), "globalDefault": False, "description": self.val()})
        if kind == "StorageClass":
            return obj(kind, names["sc"], {"provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer",
                                           **({"parameters": {"type": "gp2", "fsType": "ext4"}} if self.p(0.5) else {})})
        if kind == "Namespace":
            return obj(kind, r.choice(NAMESPACES), labels={"istio-injection": "enabled"} if self.p(0.5) else None)
        if kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration"):
            wh = {"name": f"{app}.example.com", "clientConfig": {"service": {"name": app, "namespace": r.choice(NAMESPACES), "path": "/validate"},
                                                                 **({"caBundle": b64("ca")} if self.p(0.3) else {})},
                  "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}],
                  "admissionReviewVersions": ["v1"], "sideEffects": "None"}
            if self.p(0.3):
                wh["namespaceSelector"] = {"matchLabels": {"app": app}}
            if self.p(0.3):
                wh["objectSelector"] = {"matchLabels": {"app": app}}
            return obj(kind, app + "-webhook", {"webhooks": [wh]})
        if kind == "APIService":
            return obj(kind, "v1.metrics.example.com", {"spec": {"service": {"name": app, "namespace": r.choice(NAMESPACES), "port": 443},
                                                                  "group": "metrics.example.com", "version": "v1", "insecureSkipTLSVerify": True,
                                                                  "groupPriorityMinimum": 100, "versionPriority": 100}})
        if kind == "ConfigMap":
            data = {}
            for i in range(r.randint(1, 4)):
                k = r.choice(["MODE", "key", "app.properties", "with-dash", "under_score", f"k{i}"])
                data[k] = Lit(r.choice(LIT_VALUES)) if self.p(0.3) else self.val()
            body = {"data": data}
            if self.p(0.15):
                body["binaryData"] = {"blob": b64("\x00\x01bin")}
            if self.p(0.1):
                body["immutable"] = True
            return obj(kind, "static-config", body, labels={"app": app} if self.p(0.3) else None)
        if kind == "Secret":
            body = {"type": r.choice(["Opaque", "kubernetes.io/tls", "kubernetes.io/basic-auth"])}
            if body["type"] == "kubernetes.io/tls":
                body["data"] = {"tls.crt": b64(CERT), "tls.key": b64(KEY)}
            else:
                body["data"] = {"password": b64(self.val())}
            if self.p(0.4):
                body["stringData"] = {"extra": self.val()}
            return obj(kind, "static-secret", body)
        if kind == "Widget":
            return self.widget("w-" + app, names)
        raise ValueError(kind)

    def maybe_anchored(self, d, entries):
        """A hand-written file with YAML anchors, aliases and a merge key."""
        if self.p(0.04):
            self.add(f"{d}/anchored.yaml", ANCHORED)
            entries.append("anchored.yaml")

    # ------------------------------------------------------------ CRDs
    def crd(self):
        schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        if self.p(0.5):
            schema = {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
        return obj("CustomResourceDefinition", "widgets.example.com", {"spec": {
            "group": "example.com", "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": self.r.choice(["Namespaced", "Namespaced", "Cluster"]),
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]}})

    def widget(self, name, names):
        r = self.r
        spec = {"configRef": {"name": r.choice(names["cms"] or ["static-config"])}}
        if self.p(0.6):
            spec["image"] = r.choice(IMAGES)
        if self.p(0.5):
            spec["replicas"] = r.randint(1, 4)
        if self.p(0.4):
            spec["secretRef"] = {"name": r.choice(names["secrets"] or ["static-secret"])}
        if self.p(0.5):
            spec["command"] = ["serve", "--svc=$(SVC_NAME)"]
        spec["items"] = [{"name": "a", "value": self.val()}, {"name": "b", "value": "2"}][: r.randint(1, 2)]
        if self.p(0.4):
            spec["selector"] = {"matchLabels": {"app": name}}
        if self.p(0.3):
            spec["template"] = {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "main", "image": r.choice(IMAGES)}]}}
        return obj("Widget", name, {"spec": spec}, labels={"app": name} if self.p(0.5) else None)

    def configurations_file(self, d):
        """A transformer configuration teaching kustomize about Widget."""
        r = self.r
        conf = {}
        if self.p(0.8):
            conf["nameReference"] = [{"kind": "ConfigMap", "version": "v1", "fieldSpecs": [{"kind": "Widget", "path": "spec/configRef/name"}]}]
            if self.p(0.5):
                conf["nameReference"].append({"kind": "Secret", "fieldSpecs": [{"kind": "Widget", "path": "spec/secretRef/name"}]})
            if self.p(0.3):
                conf["nameReference"].append({"kind": "Service", "fieldSpecs": [{"kind": "Widget", "path": "spec/items/value"}]})
        if self.p(0.5):
            conf["varReference"] = [{"kind": "Widget", "path": "spec/command"}]
            if self.p(0.3):
                conf["varReference"].append({"path": "metadata/annotations"})
        if self.p(0.4):
            conf["commonLabels"] = [{"kind": "Widget", "path": "spec/selector/matchLabels", "create": r.choice([True, False])}]
            if self.p(0.4):
                conf["commonLabels"].append({"kind": "Widget", "path": "spec/template/metadata/labels", "create": True})
        if self.p(0.4):
            conf["images"] = [{"kind": "Widget", "path": "spec/image"}]
            if self.p(0.4):
                conf["images"].append({"kind": "Widget", "path": "spec/template/spec/containers/image"})
        if self.p(0.3):
            conf["replicas"] = [{"kind": "Widget", "path": "spec/replicas", "create": r.choice([True, False])}]
        if self.p(0.15):
            conf["namePrefix"] = [{"kind": "Widget", "path": "spec/configRef/name"}]
        if self.p(0.15):
            conf["commonAnnotations"] = [{"kind": "Widget", "path": "spec/template/metadata/annotations", "create": True}]
        if self.p(0.15):
            conf["namespace"] = [{"kind": "Widget", "path": "spec/targetNamespace", "create": True}]
        name = r.choice(["kustomizeconfig.yaml", "config/widget.yaml", "transformer-config.yml"])
        self.add(f"{d}/{name}", to_yaml(r, conf) if conf else "{}\n")
        return name

    def crds_file(self, d):
        """A `crds:` entry: OpenAPI definitions with object-ref extensions."""
        r = self.r
        pkg = "github.com/example/pkg/apis/v1"
        defs = {
            f"{pkg}.Widget": {"Schema": {"properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"$ref": "k8s.io/apimachinery/pkg/apis/meta/v1.ObjectMeta"},
                "spec": {"$ref": f"{pkg}.WidgetSpec"}}}},
            f"{pkg}.WidgetSpec": {"Schema": {"properties": {
                "configRef": {"$ref": f"{pkg}.Ref", "x-kubernetes-object-ref-api-version": "v1",
                              "x-kubernetes-object-ref-kind": "ConfigMap"},
                "secretRef": {"$ref": f"{pkg}.Ref", "x-kubernetes-object-ref-api-version": "v1",
                              "x-kubernetes-object-ref-kind": "Secret", "x-kubernetes-object-ref-name-key": "name"},
                "selector": {"type": "object", "x-kubernetes-label-selector": ""},
                "image": {"type": "string"}}}},
            f"{pkg}.Ref": {"Schema": {"properties": {"name": {"type": "string"}}}},
        }
        name = r.choice(["crds/widget.json", "widget-crd.yaml"])
        self.add(f"{d}/{name}", json.dumps(defs, indent=2) + "\n" if name.endswith("json") else to_yaml(r, defs))
        return name

    def openapi_file(self, d):
        r = self.r
        gvk = [{"group": "example.com", "kind": "Widget", "version": "v1"}]
        items = {"type": "array", "items": {"$ref": "#/definitions/com.example.v1.Item"}}
        if self.p(0.85):
            items["x-kubernetes-patch-merge-key"] = "name"
            items["x-kubernetes-patch-strategy"] = r.choice(["merge", "merge", "retainKeys,merge"])
        cmd = {"type": "array", "items": {"type": "string"}}
        if self.p(0.4):
            cmd["x-kubernetes-patch-strategy"] = "merge"
        schema = {"definitions": {
            "com.example.v1.Widget": {"type": "object", "properties": {
                "apiVersion": {"type": "string"}, "kind": {"type": "string"},
                "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                "spec": {"$ref": "#/definitions/com.example.v1.WidgetSpec"}},
                "x-kubernetes-group-version-kind": gvk},
            "com.example.v1.WidgetSpec": {"type": "object", "properties": {"items": items, "command": cmd, "image": {"type": "string"}}},
            "com.example.v1.Item": {"type": "object", "properties": {"name": {"type": "string"}, "value": {"type": "string"}}},
            "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
                "name": {"type": "string"}, "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
        }}
        name = r.choice(["schema.json", "openapi/schema.json", "schema.yaml"])
        self.add(f"{d}/{name}", json.dumps(schema, indent=2) + "\n" if name.endswith("json") else to_yaml(r, schema))
        return name

    # --------------------------------------------------------- generators
    def gen_source(self, d, key_hint):
        """One configMapGenerator/secretGenerator entry body (sources); keys are
        distinct unless a deliberate repeat is drawn."""
        r = self.r
        e = {}
        used = set()
        kinds = r.sample(["literals", "files", "envs"], r.randint(1, 2)) if self.p(0.6) else ["literals"]
        if "literals" in kinds:
            lits = [f"MODE={r.choice(['dev', 'prod'])}"]
            keys = r.sample(["LEVEL", "token", "K_" + key_hint.upper().replace("-", "_"), "flag", "x.y", "empty", "_u", "a-b"], r.randint(0, 3))
            for key in keys:
                v = self.val()
                if "\n" in v and self.p(0.5):
                    v = v.replace("\n", " ")
                lits.append(f"{key}={v}")
            used.update(["MODE"] + keys)
            if self.p(0.1):
                extra = r.choice(["QUOTED=\"a b\"", "SINGLE='c d'", "EQ==x", "NOVAL=", "SPACE = y", "QUOTED2=\"x\"y\"", "A\tB=tab"]
                                 + (["MODE=repeated", "bad key=x", "=nokey", "noequals"] if self.p(0.2) else []))
                lits.append(extra)
            e["literals"] = lits
        if "files" in kinds:
            fl = []
            for i in range(r.randint(1, 2)):
                fname = r.choice([f"files/{key_hint}.conf", f"{key_hint}-{i}.txt", "data/app.properties", "settings.json", f"files/bin{i}.dat"])
                key = fname.rsplit("/", 1)[-1]
                entry = fname
                if self.p(0.4):
                    key = r.choice(["renamed", "config.yaml", "k_" + str(i), "app.conf"])
                    entry = f"{key}={fname}"
                if key in used and not self.p(0.03):
                    continue
                used.add(key)
                if fname.endswith(".dat"):
                    content = bytes([0, 1, 2, 255, 254])  # not UTF-8: binaryData
                elif fname.endswith(".json"):
                    content = json.dumps({"a": 1, "b": [True, None]}, indent=r.choice([None, 2])) + r.choice(["", "\n"])
                else:
                    content = r.choice(["", "single line", "a=1\nb=2\n", "  leading\n\ttab\n", "unicode \u2713\n", "x" * 200, "line\r\nwindows\r\n",
                                        "no trailing newline", "trailing spaces   \nok\n", "---\nkind: x\n", "\ufeffbom\n"])
                self.files[f"{d}/{fname}"] = content
                fl.append(entry)
            if fl:
                e["files"] = fl
        if "envs" in kinds:
            envname = r.choice([f"{key_hint}.env", "config/app.env", ".env"])
            lines = [] if "MODE" in used else [f"MODE={r.choice(['dev', 'prod'])}"]
            for line in r.sample(["# comment", "", "PORT=8080", "EMPTY=", "QUOTED=\"in quotes\"", "SQ='single'", "SPACED=a b c",
                                  "UNICODE=\u00e9", "EQ=a=b", "  INDENTED=1", "TRAIL=x  ", "BOOL=true", "NUM=0123", "DQ_ESC=\"a\\nb\"",
                                  "MIXED='a\"b'", "HASH=a # b", "K.DOT=1"], r.randint(0, 4)):
                lines.append(line)
            if self.p(0.05):
                lines.append(r.choice(["export BAD=1", "NOEQUALS_UNSET_VAR_XYZ", "=novalue", "MODE=again", "bad key=1"]))
            self.files[f"{d}/{envname}"] = "\n".join(lines) + r.choice(["\n", "", "\r\n"])
            e["envs"] = [envname]
        return e

    def gen_options(self):
        r = self.r
        o = {}
        if self.p(0.4):
            o["labels"] = {"generated": "true", **({"app": r.choice(WORDS)} if self.p(0.3) else {})}
        if self.p(0.3):
            o["annotations"] = {"note": self.val()}
        if self.p(0.3):
            o["disableNameSuffixHash"] = r.choice([True, False])
        if self.p(0.15):
            o["immutable"] = True
        return o

    def generators(self, d, k, cms, secrets, tls=None):
        r = self.r
        cg = []
        for cm in cms:
            e = {"name": cm}
            if self.p(0.03):
                e["namespace"] = r.choice(NAMESPACES)
            e.update(self.gen_source(d, cm))
            if self.p(0.25):
                e["options"] = self.gen_options()
            cg.append(e)
        sg = []
        for s in secrets:
            e = {"name": s}
            if s == "regcred":
                self.files[f"{d}/docker.json"] = '{"auths":{"r.example.com":{"auth":"' + b64("u:p") + '"}}}\n'
                e["type"] = "kubernetes.io/dockerconfigjson"
                e["files"] = [".dockerconfigjson=docker.json"]
            elif s == tls:
                self.files[f"{d}/tls.crt"] = CERT
                self.files[f"{d}/tls.key"] = KEY
                e["type"] = "kubernetes.io/tls"
                e["files"] = ["tls.crt", "tls.key"]
            else:
                if self.p(0.3):
                    e["type"] = r.choice(["Opaque", "kubernetes.io/basic-auth", "example.com/custom"])
                e.update(self.gen_source(d, s))
            if self.p(0.2):
                e["options"] = self.gen_options()
            sg.append(e)
        if cg:
            k["configMapGenerator"] = cg
        if sg:
            k["secretGenerator"] = sg
        if self.p(0.2):
            k["generatorOptions"] = self.gen_options() or {"disableNameSuffixHash": True}
        # the generated objects, as targets for patches and replacements (not written out)
        made = []
        for kind, entries in (("ConfigMap", cg), ("Secret", sg)):
            for e in entries:
                keys = self.gen_keys(d, e)
                data = {key: (b64("v") if kind == "Secret" else "v") for key in keys}
                made.append(obj(kind, e["name"], {"data": data} if kind == "ConfigMap" else {"type": e.get("type", "Opaque"), "data": data}))
        return made

    def gen_keys(self, d, e):
        """The data keys a generator entry makes (as far as this generator knows)."""
        keys = []
        for lit in e.get("literals", []):
            if "=" in lit:
                keys.append(lit.split("=", 1)[0].strip())
        for f in e.get("files", []):
            keys.append(f.split("=", 1)[0] if "=" in f else f.rsplit("/", 1)[-1])
        for env in e.get("envs", []):
            text = self.files.get(f"{d}/{env}", "")
            for line in text.replace("\r", "").split("\n"):
                line = line.strip()
                if line and not line.startswith("#") and "=" in line:
                    keys.append(line.split("=", 1)[0].strip())
        return [key for key in dict.fromkeys(keys) if key]

    # ----------------------------------------------------------- base
    def base(self, d):
        r = self.r
        apps = r.sample(WORDS, r.randint(1, 3))
        names = {"cms": [], "secrets": [], "sa": r.choice(["runner", "default", "app-sa"]), "pc": r.choice(["high", "low-priority"]),
                 "pvc": apps[0] + "-data", "sc": r.choice(["fast", "standard"]), "tls": apps[0] + "-tls", "wkind": {}}
        gen_cms = [f"{a}-config" for a in apps if self.p(0.8)]
        gen_secrets = [f"{a}-secret" for a in apps if self.p(0.5)]
        names["cms"] = list(gen_cms)
        names["secrets"] = list(gen_secrets)
        res = []
        for a in apps:
            kind = r.choice(WORKLOADS + ["Deployment", "Deployment", "StatefulSet"])
            names["wkind"][a] = kind
            res.append(self.workload(kind, a, names))
            if self.p(0.7) or kind == "StatefulSet":
                res.append(self.service(a))
        extras = ["PersistentVolumeClaim", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy",
                  "PodDisruptionBudget", "HorizontalPodAutoscaler", "PriorityClass", "StorageClass", "Namespace",
                  "ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "APIService", "ConfigMap", "Secret",
                  "PersistentVolume", "Ingress"]
        if self.diamond and self.p(0.9):
            extras = [x for x in extras if x not in ("Namespace", "APIService")]  # not renamed by prefixes: would collide
        chosen = r.sample(extras, r.randint(0, 4))
        if "RoleBinding" in chosen and self.p(0.6):
            chosen.append("Role")
        if "ClusterRoleBinding" in chosen and self.p(0.6):
            chosen.append("ClusterRole")
        for kind in dict.fromkeys(chosen):
            if kind == "Ingress":
                res.append(self.ingress(apps, names))
                if self.p(0.7):
                    gen_secrets.append(names["tls"])
            else:
                res.append(self.extra(kind, apps, names))
        if any(x.get("spec", {}).get("template", {}).get("spec", {}).get("imagePullSecrets") for x in res) and self.p(0.5):
            gen_secrets.append("regcred")
        crd = self.p(0.25)
        if crd:
            for wn in r.sample(apps + ["x"], r.randint(1, 2)):
                res.append(self.widget("w-" + wn, names))
            if self.p(0.6) and not (self.diamond and self.p(0.9)):
                res.append(self.crd())
        for o in res:
            if o["kind"] not in CLUSTER_SCOPED and self.p(0.1):
                o["metadata"]["namespace"] = r.choice(NAMESPACES)
        # duplicate ids by accident (deliberate error) now and then
        if self.p(0.02):
            res.append(json.loads(json.dumps(res[0], default=lambda o: o.text)))
        k = {}
        if self.p(0.3):
            k["apiVersion"] = "kustomize.config.k8s.io/v1beta1"
            k["kind"] = "Kustomization"
        k["resources"] = self.write_resources(d, res)
        gens = self.p(0.85)
        made = self.generators(d, k, gen_cms, gen_secrets, tls=names["tls"]) if gens else []
        made = [m for m in made if self.p(0.7)]
        self.pseudo = {id(m) for m in made}
        res = res + made
        ctx = {"apps": apps, "names": names, "res": res, "crd": crd, "dir": d, "level": 0,
               "gen_cms": gen_cms if gens else [], "gen_secrets": gen_secrets if gens else [], "vars": set()}
        self.features(d, k, ctx, base=True)
        self.write_kustomization(d, k)
        ctx["cur"] = {id(o): (o["metadata"]["name"], o["metadata"].get("namespace")) for o in res}
        self.advance(ctx, k)
        return ctx

    @staticmethod
    def advance(ctx, k):
        """Track the names and namespaces the resources have after k's transformers."""
        pre = k.get("namePrefix") if isinstance(k.get("namePrefix"), str) else ""
        suf = k.get("nameSuffix") if isinstance(k.get("nameSuffix"), str) else ""
        ns = k.get("namespace") if isinstance(k.get("namespace"), str) else None
        for key, (n, old_ns) in list(ctx["cur"].items()):
            ctx["cur"][key] = (pre + n + suf, ns or old_ns)
        if ns:
            ctx["ns"] = ns  # where the generated objects now live

    def write_resources(self, d, res):
        r = self.r
        entries = []
        order = list(res)
        if self.p(0.3):
            r.shuffle(order)
        groups = []
        while order:
            n = r.randint(1, 3)
            groups.append(order[:n])
            order = order[n:]
        sub = None
        if len(groups) > 1 and self.p(0.2):
            # one group lives in a nested kustomization (or a plain directory of files)
            sub = groups.pop()
            subdir = r.choice(["extra", "parts/more"])
            fname = "res.yaml"
            self.add(f"{d}/{subdir}/{fname}", docs_text(r, sub))
            self.add(f"{d}/{subdir}/kustomization.yaml", to_yaml(r, {"resources": [fname]}))
            entries.append(subdir if self.p(0.8) else "./" + subdir + "/")
        for g in groups:
            if len(g) == 1:
                fname = f"{g[0]['kind'].lower()}-{g[0]['metadata']['name']}.{r.choice(['yaml', 'yaml', 'yml'])}"
            else:
                fname = f"{r.choice(['resources', 'all', 'app', 'manifests/objects'])}-{len(entries)}.yaml"
            self.add(f"{d}/{fname}", docs_text(r, g))
            entries.append(fname if self.p(0.9) else "./" + fname)
        self.maybe_anchored(d, entries)
        r.shuffle(entries) if self.p(0.2) else None
        return entries

    def write_kustomization(self, d, k):
        r = self.r
        name = r.choices(["kustomization.yaml", "kustomization.yml", "Kustomization"], [10, 2, 1])[0]
        text = to_yaml(r, k) if k else "{}\n"
        if self.p(0.1):
            text = "# kustomization\n" + text
        self.add(f"{d}/{name}", text)
        if self.p(0.005):
            self.add(f"{d}/kustomization.yml", text)  # two kustomization files: an error

    # ---------------------------------------------------------- features
    def features(self, d, k, ctx, base=False, component=False):
        """Add a random selection of kustomization features to k."""
        feats = [
            (0.35, self.f_prefix), (0.35, self.f_namespace), (0.3, self.f_labels), (0.15, self.f_common_labels),
            (0.25, self.f_annotations), (0.3, self.f_images), (0.15, self.f_replicas), (0.45, self.f_patches),
            (0.1, self.f_patches_deprecated), (0.3, self.f_replacements), (0.15, self.f_vars), (0.12, self.f_sort),
            (0.08, self.f_build_metadata), (0.2, self.f_plugins), (0.04, self.f_errors),
        ]
        if ctx.get("crd"):
            feats += [(0.5, self.f_configurations), (0.15, self.f_crds), (0.3, self.f_openapi)]
        if component:
            feats = [f for f in feats if f[1] not in (self.f_sort, self.f_build_metadata)]
        if ((base and self.diamond) or component) and self.p(0.95):
            feats = [f for f in feats if f[1] is not self.f_vars]  # carried by two branches: an error
        scale = 1.0 if base else 0.8
        for prob, f in feats:
            if self.p(prob * scale):
                f(d, k, ctx)

    # names of resources as seen at this level (prefixes accumulate)
    def cur_name(self, ctx, o):
        """The resource's name as seen at this level (now and then its original name)."""
        n = o["metadata"]["name"]
        if self.p(0.96):
            return ctx.get("cur", {}).get(id(o), (n, None))[0]
        return n

    def cur_ns(self, ctx, o):
        return ctx.get("cur", {}).get(id(o), (None, o["metadata"].get("namespace")))[1]

    def f_prefix(self, d, k, ctx):
        r = self.r
        if self.p(0.8):
            k["namePrefix"] = r.choice(WORDS) + r.choice(["-", "-", "", "."])
        if self.p(0.4):
            k["nameSuffix"] = r.choice(["-v1", "-blue", "-x", "2", "-" + "y" * 30])

    def f_namespace(self, d, k, ctx):
        k["namespace"] = self.r.choice(NAMESPACES + [" spaced", "UPPER"] if self.p(0.03) else NAMESPACES)

    def f_labels(self, d, k, ctx):
        r = self.r
        out = []
        for _ in range(r.randint(1, 2)):
            e = {"pairs": {r.choice(["env", "tier", "app.kubernetes.io/part-of", "team"]): r.choice(WORDS + ["prod", "true", "1", ""])}}
            if self.p(0.5):
                e["includeSelectors"] = r.choice([True, False])
            if self.p(0.35):
                e["includeTemplates"] = r.choice([True, False])
            if self.p(0.25):
                e["fields"] = [{"path": r.choice(["spec/selector/matchLabels", "spec/template/metadata/labels", "metadata/annotations", "spec/extra/labels"]),
                                "kind": r.choice(["Widget", "Deployment", "Service", "ConfigMap"]), "create": r.choice([True, False])}]
                if self.p(0.3):
                    e["fields"][0].pop("kind")
            out.append(e)
        k["labels"] = out

    def f_common_labels(self, d, k, ctx):
        r = self.r
        k["commonLabels"] = {r.choice(["owner", "app", "env", "app.kubernetes.io/managed-by"]): r.choice(WORDS + ["on", "1.0", "x"])}

    def f_annotations(self, d, k, ctx):
        r = self.r
        k["commonAnnotations"] = {r.choice(["note", "example.com/owner", "team"]): self.val() for _ in range(r.randint(1, 2))}

    def f_images(self, d, k, ctx):
        r = self.r
        out = []
        for _ in range(r.randint(1, 3)):
            img = r.choice(IMAGES + ["nonexistent"])
            base = img.split("@")[0]
            name = base.rsplit(":", 1)[0] if ":" in base.rsplit("/", 1)[-1] else base
            e = {"name": name if self.p(0.9) else name.split("/")[-1]}
            ch = r.random()
            if ch < 0.4:
                e["newTag"] = r.choice(["2.0", "latest", "1.10", "v3", "0123", "1e3"]) if self.p(0.97) else Lit(r.choice(["1.10", "2"]))
            elif ch < 0.6:
                e["newName"] = r.choice(["mirror.example.com:5000/" + name.split("/")[-1], "other", "localhost:5000/x/y", "with:tag", "UPPER/case"])
            elif ch < 0.75:
                e["digest"] = DIGEST
            elif ch < 0.9:
                e["newName"] = "registry.local/" + name.split("/")[-1]
                e["newTag"] = "9"
            else:
                e["newTag"] = "1.0"
                e["digest"] = DIGEST
            out.append(e)
        k["images"] = out

    def f_replicas(self, d, k, ctx):
        r = self.r
        cands = [o for o in ctx["res"] if o["kind"] in ("Deployment", "StatefulSet", "ReplicaSet")]
        if self.p(0.03):
            cands = ctx["res"]
        if not cands:
            return
        k["replicas"] = [{"name": self.cur_name(ctx, r.choice(cands)) if self.p(0.9) else "missing", "count": r.choice([0, 1, 3, 10])}]

    # ------------------------------------------------------------ patches
    def smp(self, o, ctx):
        """A strategic merge patch for resource o (as a dict)."""
        r = self.r
        p = {"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": {"name": self.cur_name(ctx, o)}}
        if self.cur_ns(ctx, o) and self.p(0.9):
            p["metadata"]["namespace"] = self.cur_ns(ctx, o)
        ch = r.random()
        pod = None
        spec = o.get("spec", {})
        if o["kind"] in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
            pod = ("spec", "template", "spec")
        elif o["kind"] == "CronJob":
            pod = ("spec", "jobTemplate", "spec", "template", "spec")
        elif o["kind"] == "Pod":
            pod = ("spec",)

        def nest(path, leaf):
            cur = p
            for s in path[:-1]:
                cur = cur.setdefault(s, {})
            cur[path[-1]] = leaf

        if self.p(0.12):
            p["$patch"] = r.choice(["delete", "replace", "delete"])
            if p["$patch"] == "replace":
                p["data"] = {"replaced": "yes"}
            return p
        if pod and ch < 0.6:
            cname = o and self._containers(o, pod)
            c0 = r.choice(cname) if cname and self.p(0.8) else "new-container"
            sub = r.random()
            if sub < 0.25:
                nest(pod + ("containers",), [{"name": c0, "env": [{"name": "PATCHED", "value": self.val()}]}])
            elif sub < 0.4:
                nest(pod + ("containers",), [{"name": c0, "$patch": "delete"}])
            elif sub < 0.5:
                nest(pod + ("containers",), [{"name": c0, "image": r.choice(IMAGES)}, {"name": "extra", "image": "busybox"}])
                if self.p(0.6):
                    nest(pod + ("$setElementOrder/containers",), [{"name": "extra"}, {"name": c0}])
            elif sub < 0.6:
                nest(pod + ("containers",), [{"name": c0, "args": ["--new"], "$deleteFromPrimitiveList/args": ["--v=2", "-x"]}])
            elif sub < 0.7:
                nest(pod + ("volumes",), [{"name": "config", "$patch": r.choice(["delete", "replace"]), **({"emptyDir": {}} if self.p(0.5) else {})}])
            elif sub < 0.78:
                nest(pod, {"$retainKeys": ["containers"], "containers": [{"name": c0, "image": "retained"}]})
            elif sub < 0.86:
                nest(pod + ("containers",), [{"name": c0, "ports": [{"containerPort": 8443, "name": "https"}],
                                              "resources": None}])
            elif sub < 0.93:
                nest(pod + ("containers",), {"$patch": "replace"} if self.p(0.3) else [{"$patch": "replace"}, {"name": "only", "image": "x"}])
            elif len(pod) > 1:
                nest(pod[:-1] + ("metadata",), {"labels": {"patched": "true"}, "annotations": {"a": None}})
            else:
                nest(pod + ("hostNetwork",), True)
            return p
        if ch < 0.75:
            p.setdefault("metadata", {})["labels"] = {"patched": self.val() if self.p(0.3) else "yes"}
            if self.p(0.3):
                p["metadata"]["annotations"] = {"team": None, "added": "1"}
            return p
        if o["kind"] == "ConfigMap" or o["kind"] == "Secret":
            p["data"] = {"new": b64("x") if o["kind"] == "Secret" else self.val(), "MODE": None}
            return p
        if o["kind"] == "Widget":
            p["spec"] = {"items": [{"name": "b", "value": "patched"}, {"name": "c", "value": "new"}]}
            if self.p(0.3):
                p["spec"]["items"].append({"name": "a", "$patch": "delete"})
            if self.p(0.3):
                p["spec"]["command"] = ["extra"]
            return p
        if o["kind"] == "Service":
            p["spec"] = {"ports": [{"port": 80, "targetPort": 9999, "name": "http"}, {"port": 443, "name": "https"}]}
            return p
        if spec and isinstance(spec, dict):
            k0 = r.choice(list(spec))
            p["spec"] = {k0: None} if self.p(0.3) else {"extraField": self.val()}
            return p
        p["metadata"]["annotations"] = {"patched": "true"}
        return p

    def _containers(self, o, pod):
        cur = o
        for s in pod:
            cur = cur.get(s, {}) if isinstance(cur, dict) else {}
        return [c["name"] for c in cur.get("containers", [])] if isinstance(cur, dict) else []

    def json_ops(self, o):
        """1-3 JSON 6902 operations, simulated on a copy of o so that each one
        applies to the document as the earlier ones left it."""
        r = self.r
        doc = copy.deepcopy(o)
        ops = []
        for _ in range(r.choice([1, 1, 1, 2, 2, 3])):
            pool = all_paths(doc) if self.p(0.3) else scalar_paths(doc)
            pool = [x for x in pool if x[0] and x[0][0] not in ("apiVersion", "kind")
                    and (tuple(x[0][:2]) != ("metadata", "name") or self.p(0.05))
                    and (tuple(x[0]) != ("metadata",) or self.p(0.05))]
            if not pool:
                break
            segs, val = r.choice(pool)
            st = [s if isinstance(s, str) else s[1] for s in segs]
            op = r.choice(["add", "replace", "remove", "copy", "move", "test", "add", "replace", "replace"])
            if op == "test" and id(o) in self.pseudo:
                op = "replace"  # a generated object's values are not modelled
            e = {"op": op}
            if op == "add":
                parent = json_get(doc, st[:-1])
                if isinstance(parent, list):
                    idx = r.choice(["-", st[-1], 0])
                    st = st[:-1] + [idx]
                    item = copy.deepcopy(parent[0]) if parent else "x"
                    if isinstance(item, dict) and isinstance(item.get("name"), str):
                        item["name"] = "added"
                    e["value"] = item if self.p(0.8) else self.val()
                else:
                    if self.p(0.6):
                        st = st[:-1] + [r.choice(["added", "x/y", "a~b"])]
                    e["value"] = self.like(val)
            elif op == "replace":
                e["value"] = self.like(val)
            elif op == "test":
                e["value"] = val.text if isinstance(val, Lit) else copy.deepcopy(val)
            elif op in ("copy", "move"):
                frm = [s if isinstance(s, str) else s[1] for s in r.choice(pool)[0]]
                if frm == st[: len(frm)]:
                    continue
                e["from"] = json_pointer(frm)
                parent = json_get(doc, st[:-1])
                if isinstance(parent, dict) and self.p(0.5):
                    st = st[:-1] + ["copied"]
            e["path"] = json_pointer(st)
            try:
                json_apply(doc, e)
            except (KeyError, IndexError, TypeError, ValueError):
                continue
            ops.append({k: e[k] for k in ("op", "path", "from", "value") if k in e})
        if not ops:
            ops.append({"op": "add", "path": "/metadata/labels", "value": {"patched": "true"}})
        if self.p(0.01):
            ops.append({"op": "remove", "path": "/does/not/exist"})
        return ops

    def like(self, v):
        """A new value, mostly of v's type."""
        r = self.r
        if self.p(0.1):
            return r.choice([self.val(), r.randint(0, 9), {"k": "v"}, ["a"], True, None])
        if isinstance(v, bool):
            return not v
        if isinstance(v, int):
            return r.randint(0, 99)
        if isinstance(v, dict):
            return {"k": self.val()}
        if isinstance(v, list):
            return [self.val()]
        return self.val()

    def target(self, o, ctx):
        r = self.r
        t = {}
        g, _, v = o["apiVersion"].rpartition("/")
        if self.p(0.3):
            t["group"] = g
        if self.p(0.3):
            t["version"] = v
        if self.p(0.85):
            t["kind"] = o["kind"]
        ch = r.random()
        if ch < 0.55:
            t["name"] = self.cur_name(ctx, o)
        elif ch < 0.7:
            n = o["metadata"]["name"]
            t["name"] = r.choice([n[:2] + ".*", "^" + n + "$", n + "|nothing", ".*", "(" + n + ")"])
        elif ch < 0.8 and o["metadata"].get("labels"):
            lk, lv = next(iter(o["metadata"]["labels"].items()))
            t["labelSelector"] = r.choice([f"{lk}={lv}", f"{lk}", f"{lk} in ({lv},x)", f"!{lk}", f"{lk}!={lv}"])
        elif ch < 0.88 and o["metadata"].get("annotations"):
            ak, av = next(iter(o["metadata"]["annotations"].items()))
            t["annotationSelector"] = f"{ak}={av}" if self.p(0.7) else ak
        if self.p(0.1):
            t["namespace"] = self.cur_ns(ctx, o) or (r.choice(NAMESPACES) if self.p(0.2) else "default")
        if not t:
            t["kind"] = o["kind"]
        return t

    def f_patches(self, d, k, ctx):
        r = self.r
        res = ctx["res"]
        out = []
        for _ in range(r.randint(1, 3)):
            o = r.choice(res)
            ch = r.random()
            if ch < 0.45:
                pd = self.smp(o, ctx)
                e = {}
                if self.p(0.5):
                    fname = r.choice(["patch.yaml", "patches/smp.yaml", f"patch-{len(out)}.yaml"])
                    self.add(f"{d}/{fname}", to_yaml(r, pd))
                    e["path"] = fname
                else:
                    e["patch"] = to_yaml(r, pd)
                if self.p(0.25):
                    e["target"] = self.target(o, ctx)
            else:
                ops = self.json_ops(o)
                e = {"target": self.target(o, ctx)}
                if self.p(0.4):
                    fname = r.choice(["ops.yaml", "patches/json.yaml", "ops.json"])
                    if fname.endswith("json"):
                        self.add(f"{d}/{fname}", json.dumps(ops, indent=2, default=lambda x: x.text) + "\n")
                    else:
                        self.add(f"{d}/{fname}", Emitter(r).seq(ops, 0))
                    e["path"] = fname
                else:
                    e["patch"] = Emitter(r).seq(ops, 0) if self.p(0.8) else json.dumps(ops, default=lambda x: x.text)
            if self.p(0.1):
                e["options"] = {r.choice(["allowNameChange", "allowKindChange"]): True}
                if isinstance(e.get("patch"), str) and e["patch"].startswith("apiVersion") and self.p(0.7):
                    e["patch"] = e["patch"].replace("name: ", "name: renamed-", 1) if self.p(0.5) else e["patch"].replace("kind: ", "kind: Other", 1)
                    e["target"] = {"kind": o["kind"], "name": self.cur_name(ctx, o)}
            out.append(e)
        if self.p(0.01):
            out.append({"path": "missing-patch.yaml"})
        if self.p(0.01):
            out.append({"patch": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nobody-has-this\ndata:\n  a: b\n"})
        k["patches"] = out

    def f_patches_deprecated(self, d, k, ctx):
        r = self.r
        o = r.choice(ctx["res"])
        if self.p(0.6):
            pd = self.smp(o, ctx)
            if self.p(0.5):
                k["patchesStrategicMerge"] = [to_yaml(r, pd)]
            else:
                fname = "psm.yaml"
                self.add(f"{d}/{fname}", to_yaml(r, pd))
                k["patchesStrategicMerge"] = [fname]
        else:
            ops = self.json_ops(o)
            t = {"version": o["apiVersion"].split("/")[-1], "kind": o["kind"], "name": self.cur_name(ctx, o)}
            if "/" in o["apiVersion"]:
                t["group"] = o["apiVersion"].split("/")[0]
            e = {"target": t}
            if self.p(0.5):
                self.add(f"{d}/json6902.yaml", Emitter(r).seq(ops, 0))
                e["path"] = "json6902.yaml"
            else:
                e["patch"] = Emitter(r).seq(ops, 0)
            k["patchesJson6902"] = [e]

    # ------------------------------------------------------- replacements
    def selector(self, o, ctx, kind_only=False):
        r = self.r
        s = {}
        if self.p(0.3):
            s["group"] = o["apiVersion"].rpartition("/")[0]
        if self.p(0.2):
            s["version"] = o["apiVersion"].rpartition("/")[2]
        if self.p(0.9) or not kind_only:
            s["kind"] = o["kind"]
        if not kind_only and self.p(0.8):
            s["name"] = self.cur_name(ctx, o)
        if self.p(0.1):
            s["namespace"] = self.cur_ns(ctx, o) or (r.choice(NAMESPACES) if self.p(0.2) else "default")
        if o["metadata"].get("labels") and self.p(0.15):
            lk, lv = next(iter(o["metadata"]["labels"].items()))
            s["labelSelector"] = f"{lk}={lv}"
        if o["metadata"].get("annotations") and self.p(0.1):
            ak, av = next(iter(o["metadata"]["annotations"].items()))
            s["annotationSelector"] = f"{ak}={av}"
        return s or {"kind": o["kind"]}

    def replacement(self, ctx):
        r = self.r
        res = ctx["res"]
        src = r.choice(res)
        leaves = [x for x in scalar_paths(src) if x[0][0] not in ("apiVersion", "kind")]
        spath, sval = r.choice(leaves)
        source = {}
        sel = self.selector(src, ctx)
        if "name" not in sel and self.p(0.7):
            sel["name"] = self.cur_name(ctx, src)
        if not self.p(0.03):
            sel.pop("labelSelector", None)
            sel.pop("annotationSelector", None)
        source.update(sel)
        if self.p(0.85):
            source["fieldPath"] = fieldpath(r, spath, wild=self.p(0.03)) if self.p(0.95) else r.choice(["metadata.name", "spec.nothing", "data.MODE"])
        if self.p(0.15):
            source["options"] = {"delimiter": r.choice(["-", ":", "/", "."]), "index": r.choice([0, 0, 0, 1, -1, 5])}
        targets = []
        for _ in range(r.randint(1, 2)):
            tgt = r.choice(res)
            tleaves = [x for x in scalar_paths(tgt) if x[0][0] not in ("apiVersion", "kind")]
            same = [x for x in tleaves if type(x[1]) is type(sval)]
            if same and self.p(0.85):
                tleaves = same
            kind_only = self.p(0.12)
            if kind_only and self.p(0.95):
                # a kind-wide selection: only paths every resource of the kind has
                def steps_of(o):
                    return {tuple(s if isinstance(s, str) else s[1] for s in segs) for segs, _ in scalar_paths(o)}
                common = set.intersection(*[steps_of(o) for o in res if o["kind"] == tgt["kind"]])
                tleaves = [x for x in tleaves if tuple(s if isinstance(s, str) else s[1] for s in x[0]) in common] or \
                    [((("metadata", "name")), None)]
            t = {"select": self.selector(tgt, ctx, kind_only=kind_only)}
            if self.p(0.2):
                rej = r.choice(res)
                t["reject"] = [self.selector(rej, ctx)]
            fps = []
            missing = False
            for _ in range(r.randint(1, 2)):
                if self.p(0.15):
                    missing = True
                    fps.append(r.choice(["metadata.annotations.copied", "spec.new.field", "metadata.labels.[example.com/x]",
                                         "spec.template.spec.containers.[name=new].image", "data.NEW", "spec.list.0.x",
                                         "metadata.annotations.[a.b/c]"]))
                else:
                    fps.append(fieldpath(r, r.choice(tleaves)[0], root=tgt))
            t["fieldPaths"] = fps
            if missing and self.p(0.9):
                t["options"] = {"create": True}
            elif self.p(0.3):
                opts = {}
                if self.p(0.5):
                    opts["delimiter"] = r.choice(["-", ":", "/", "."])
                    opts["index"] = r.choice([0, 0, 0, 1, -1, 3])
                if self.p(0.5):
                    opts["create"] = r.choice([True, False])
                t["options"] = opts
            targets.append(t)
        return {"source": source, "targets": targets}

    def f_replacements(self, d, k, ctx):
        r = self.r
        reps = [self.replacement(ctx) for _ in range(r.randint(1, 2))]
        if self.p(0.3):
            fname = r.choice(["replacements.yaml", "repl/r.yaml"])
            if len(reps) == 1 and self.p(0.5):
                self.add(f"{d}/{fname}", to_yaml(r, reps[0]))
            else:
                self.add(f"{d}/{fname}", Emitter(r).seq(reps, 0))
            k["replacements"] = [{"path": fname}] + (reps[1:] if self.p(0.3) else [])
        else:
            k["replacements"] = reps

    def f_vars(self, d, k, ctx):
        r = self.r
        res = ctx["res"]
        vs = []
        taken = ctx.setdefault("vars", set())

        def get(o, fp):
            cur = o
            for part in re.findall(r"[^.\[\]]+|\[\d+\]", fp):
                if part.startswith("["):
                    i = int(part[1:-1])
                    cur = cur[i] if isinstance(cur, list) and len(cur) > i else None
                else:
                    cur = cur.get(part) if isinstance(cur, dict) else None
                if cur is None:
                    return None
            return cur

        svcs = [o for o in res if o["kind"] == "Service"]
        if svcs and "SVC_NAME" not in taken:
            s = r.choice(svcs)
            vs.append({"name": "SVC_NAME", "objref": {"kind": "Service", "name": self.cur_name(ctx, s), "apiVersion": "v1"}})
            if self.p(0.5):
                vs[-1]["fieldref"] = {"fieldpath": r.choice(["metadata.name", "spec.ports[0].port", "metadata.name"])}
        for name, fp in [("IMG", "spec.template.spec.containers[0].image"), ("REPLICAS", "spec.replicas"),
                         ("CONFIG_PATH", "metadata.labels.app"), ("MY_NS", "metadata.namespace"), ("HOST", "metadata.name")]:
            if self.p(0.3) and name not in taken:
                cands = [o for o in res if get(o, fp) is not None or (name == "MY_NS" and self.cur_ns(ctx, o))]
                if self.p(0.03):
                    cands = res
                if not cands:
                    continue
                o = r.choice(cands)
                ref = {"kind": o["kind"], "name": self.cur_name(ctx, o)}
                if self.p(0.7) or ("/" in o["apiVersion"] and self.p(0.97)):
                    ref["apiVersion"] = o["apiVersion"]  # without it, only core kinds match
                vs.append({"name": name, "objref": ref, "fieldref": {"fieldpath": fp}})
        if not vs:
            return
        taken.update(v["name"] for v in vs)
        k["vars"] = vs

    def f_configurations(self, d, k, ctx):
        k["configurations"] = [self.configurations_file(d)]

    def f_crds(self, d, k, ctx):
        k["crds"] = [self.crds_file(d)]

    def f_openapi(self, d, k, ctx):
        r = self.r
        if self.p(0.9):
            k["openapi"] = {"path": self.openapi_file(d)}
        else:
            k["openapi"] = {"version": r.choice(["v1.21.2", "v1.21.2", "v1.99.0"])}
        # a strategic merge patch on a custom resource, which needs the schema's merge keys
        ws = [o for o in ctx["res"] if o["kind"] == "Widget"]
        if ws:
            w = r.choice(ws)
            items = [{"name": "a", "value": "from-patch"}, {"name": "z", "value": "new"}]
            if self.p(0.3):
                items.append({"name": "b", "$patch": "delete"})
            pd = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": self.cur_name(ctx, w)}, "spec": {"items": items}}
            if self.p(0.4):
                pd["spec"]["command"] = ["added"]
            k.setdefault("patches", []).append({"patch": to_yaml(r, pd)})

    def f_sort(self, d, k, ctx):
        r = self.r
        if self.p(0.5):
            k["sortOptions"] = {"order": "fifo"}
        else:
            so = {"order": "legacy"}
            if self.p(0.7):
                lso = {}
                kinds = sorted({o["kind"] for o in ctx["res"]} | {"Namespace", "ConfigMap"})
                if self.p(0.8):
                    lso["orderFirst"] = r.sample(kinds, min(len(kinds), r.randint(1, 3)))
                if self.p(0.7):
                    lso["orderLast"] = r.sample(kinds, min(len(kinds), r.randint(1, 2)))
                so["legacySortOptions"] = lso
            k["sortOptions"] = so

    def f_build_metadata(self, d, k, ctx):
        r = self.r
        k["buildMetadata"] = r.sample(["originAnnotations", "transformerAnnotations", "managedByLabel"], r.randint(1, 3))

    def plugin_config(self, ctx):
        r = self.r
        res = ctx["res"]
        o = r.choice(res)
        kind = r.choice(["PrefixSuffixTransformer", "PrefixTransformer", "SuffixTransformer", "LabelTransformer", "AnnotationsTransformer",
                         "NamespaceTransformer", "ImageTagTransformer", "ReplicaCountTransformer", "PatchTransformer",
                         "PatchJson6902Transformer", "PatchStrategicMergeTransformer", "ReplacementTransformer",
                         "ConfigMapGenerator", "SecretGenerator", "ValueAddTransformer", "HashTransformer"])
        self.nplugins += 1
        c = {"apiVersion": "builtin", "kind": kind, "metadata": {"name": f"p{self.nplugins}-" + kind.lower()[:12]}}
        fs_meta = [{"path": "metadata/name"}]
        if kind in ("PrefixSuffixTransformer", "PrefixTransformer", "SuffixTransformer"):
            if kind != "SuffixTransformer":
                c["prefix"] = r.choice(WORDS) + "-"
            if kind != "PrefixTransformer":
                c["suffix"] = "-" + r.choice(WORDS)
            c["fieldSpecs"] = fs_meta if self.p(0.7) else [{"kind": o["kind"], "path": "metadata/name"}]
        elif kind == "LabelTransformer":
            c["labels"] = {"plugin": r.choice(WORDS)}
            c["fieldSpecs"] = r.choice([[{"path": "metadata/labels", "create": True}],
                                        [{"path": "metadata/labels", "create": True}, {"path": "spec/selector/matchLabels", "kind": "Deployment", "create": True}],
                                        [{"path": "spec/template/metadata/labels", "create": False}]])
        elif kind == "AnnotationsTransformer":
            c["annotations"] = {"plugin": self.val()}
            c["fieldSpecs"] = [{"path": "metadata/annotations", "create": True}]
        elif kind == "NamespaceTransformer":
            c["metadata"]["namespace"] = r.choice(NAMESPACES)
            if self.p(0.5):
                c["unsetOnly"] = r.choice([True, False])
            if self.p(0.6):
                c["setRoleBindingSubjects"] = r.choice(["none", "defaultOnly", "allServiceAccounts", "bogus"])
            c["fieldSpecs"] = [{"path": "metadata/namespace", "create": True}] + (
                [{"path": "subjects", "kind": "RoleBinding"}] if self.p(0.3) else [])
        elif kind == "ImageTagTransformer":
            img = r.choice(IMAGES).split("@")[0]
            nm = img.rsplit(":", 1)[0] if ":" in img.rsplit("/", 1)[-1] else img
            c["imageTag"] = {"name": nm, "newTag": "plugin"} if self.p(0.6) else {"name": nm, "newName": "plug/in", "digest": DIGEST}
            if self.p(0.5):
                c["fieldSpecs"] = [{"path": "spec/template/spec/containers/image"}, {"path": "spec/image", "kind": "Widget"}]
        elif kind == "ReplicaCountTransformer":
            c["replica"] = {"name": self.cur_name(ctx, o), "count": r.randint(0, 7)}
            c["fieldSpecs"] = [{"path": "spec/replicas", "create": r.choice([True, False])}] + (
                [{"path": "spec/replicas", "kind": "Widget"}] if self.p(0.3) else [])
        elif kind == "PatchTransformer":
            if self.p(0.5):
                c["patch"] = to_yaml(r, self.smp(o, ctx))
            else:
                c["patch"] = Emitter(r).seq(self.json_ops(o), 0)
                c["target"] = self.target(o, ctx)
        elif kind == "PatchJson6902Transformer":
            c["target"] = {"kind": o["kind"], "name": self.cur_name(ctx, o), "version": o["apiVersion"].split("/")[-1]}
            if "/" in o["apiVersion"]:
                c["target"]["group"] = o["apiVersion"].split("/")[0]
            c["jsonOp"] = json.dumps(self.json_ops(o), default=lambda x: x.text)
        elif kind == "PatchStrategicMergeTransformer":
            c["patches"] = to_yaml(r, self.smp(o, ctx))
        elif kind == "ReplacementTransformer":
            c["replacements"] = [self.replacement(ctx)]
        elif kind == "ConfigMapGenerator":
            c["metadata"]["name"] = "plugin-cm"
            c["literals"] = [f"K={self.val()}".replace("\n", " ")]
            if self.p(0.3):
                c["options"] = {"disableNameSuffixHash": True}
            if self.p(0.2):
                c["behavior"] = r.choice(["create", "merge"])
        elif kind == "SecretGenerator":
            c["metadata"]["name"] = "plugin-secret"
            c["literals"] = ["password=s3cr3t"]
            c["type"] = r.choice(["Opaque", "kubernetes.io/basic-auth"])
        elif kind == "ValueAddTransformer":
            c["value"] = self.val()
            c["targets"] = [{"fieldPath": "metadata/annotations/added"}]
        if self.p(0.03):
            del c["metadata"]  # inline, kustomize then reads the entry as a file path
        return c

    def f_plugins(self, d, k, ctx):
        r = self.r
        for _ in range(r.randint(1, 2)):
            c = self.plugin_config(ctx)
            field = "generators" if c["kind"].endswith("Generator") else "transformers"
            if self.p(0.03):
                field = "generators" if field == "transformers" else "transformers"
            if self.p(0.5):
                fname = f"{c.get('metadata', {}).get('name', 'plugin')}.yaml"
                self.add(f"{d}/{fname}", to_yaml(r, c))
                k.setdefault(field, []).append(fname)
            else:
                k.setdefault(field, []).append(to_yaml(r, c))

    def f_errors(self, d, k, ctx):
        r = self.r
        ch = r.random()
        if ch < 0.15:
            k.setdefault("resources", []).append("missing.yaml")
        elif ch < 0.3:
            k.setdefault("patches", []).append({"target": {"kind": "Nothing", "name": "none"},
                                                "patch": "- op: replace\n  path: /spec/x\n  value: 1\n"})
        elif ch < 0.45:
            o = r.choice(ctx["res"])
            self.add(f"{d}/dup.yaml", to_yaml(r, {"apiVersion": o["apiVersion"], "kind": o["kind"], "metadata": {"name": o["metadata"]["name"]}}))
            k.setdefault("resources", []).append("dup.yaml")
        elif ch < 0.55:
            self.add(f"{d}/broken.yaml", r.choice(["apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n data: x\n",
                                                   "kind: ConfigMap\nmetadata:\n  name: noversion\n",
                                                   "apiVersion: v1\nmetadata:\n  name: nokind\n",
                                                   "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
                                                   "- a\n- b\n", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: from-list\n",
                                                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tabbed\ndata:\n\ta: b\n",
                                                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dupkey\ndata:\n  a: b\n  a: c\n",
                                                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: anchors\ndata: &d\n  a: b\nbinaryData: *d\n",
                                                   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: merge-key\n  labels:\n    <<: {x: y}\n"]))
            k.setdefault("resources", []).append("broken.yaml")
        elif ch < 0.65:
            k["configMapGenerator"] = k.get("configMapGenerator", []) + [{"name": "conflict", "literals": ["a=1"]},
                                                                         {"name": "conflict", "behavior": r.choice(["create", "merge", "replace", "bogus"]), "literals": ["a=2"]}]
        elif ch < 0.72:
            k["unknownField"] = "x"
        elif ch < 0.8:
            k.setdefault("configMapGenerator", []).append({"name": "badenv", "envs": ["nothere.env"]})
        elif ch < 0.87:
            k.setdefault("components", []).append("../nonexistent-component")
        elif ch < 0.93:
            k["replacements"] = k.get("replacements", []) + [{"source": {"kind": "Nothing", "name": "x"}, "targets": [{"select": {"kind": "ConfigMap"}, "fieldPaths": ["data.x"]}]}]
        else:
            k["namePrefix"] = {"not": "a string"}

    # ---------------------------------------------------------- overlays
    def overlay(self, d, parents, ctx, components=(), extra_k=None):
        r = self.r
        k = {}
        if self.p(0.15):
            k["apiVersion"] = "kustomize.config.k8s.io/v1beta1"
            k["kind"] = "Kustomization"
        field = "bases" if self.p(0.07) else "resources"
        k[field] = list(parents)
        octx = dict(ctx)
        octx["level"] = ctx["level"] + 1
        octx["dir"] = d
        octx["res"] = list(ctx["res"])
        octx["cur"] = dict(ctx["cur"])
        if self.p(0.2):
            # an overlay-local resource
            extra = self.extra(r.choice(["ConfigMap", "ServiceAccount", "Secret", "PriorityClass", "NetworkPolicy"]), ctx["apps"], ctx["names"])
            if self.p(0.8):
                extra["metadata"]["name"] = "local-" + extra["metadata"]["name"]
            fname = "local.yaml"
            self.add(f"{d}/{fname}", docs_text(r, [extra]))
            k[field].append(fname)
            octx["res"].append(extra)
            octx["cur"][id(extra)] = (extra["metadata"]["name"], None)
        if components:
            k["components"] = list(components)
        if extra_k:
            k.update(extra_k)
        # generator behaviours against the base's generators
        cms = ctx["gen_cms"] if self.p(0.95) else ctx["names"]["cms"]
        if cms and self.p(0.35):
            cm = r.choice(cms)
            beh = r.choices(["merge", "replace", "create", None], [12, 6, 1, 1])[0]
            e = {"name": cm}
            if ctx.get("ns") and self.p(0.9):
                e["namespace"] = ctx["ns"]
            if beh:
                e["behavior"] = beh
            e.update(self.gen_source(d, "ov"))
            if self.p(0.2):
                e["options"] = self.gen_options()
            k["configMapGenerator"] = [e]
        if ctx["gen_secrets"] and self.p(0.2):
            s = r.choice(ctx["gen_secrets"])
            k["secretGenerator"] = [{"name": s, "behavior": r.choice(["merge", "replace"]), "literals": ["token=overlay"]}]
            if ctx.get("ns") and self.p(0.9):
                k["secretGenerator"][0]["namespace"] = ctx["ns"]
            if self.p(0.2):
                k["secretGenerator"][0]["type"] = "Opaque"
        self.features(d, k, octx)
        self.write_kustomization(d, k)
        self.advance(octx, k)
        return octx

    def component(self, d, ctx):
        r = self.r
        k = {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component"}
        cctx = dict(ctx)
        cctx["dir"] = d
        if self.p(0.3):
            extra = self.extra(r.choice(["ConfigMap", "ServiceAccount", "PodDisruptionBudget"]), ctx["apps"], ctx["names"])
            extra["metadata"]["name"] = "comp-" + extra["metadata"]["name"]
            self.add(f"{d}/comp-res.yaml", docs_text(r, [extra]))
            k["resources"] = ["comp-res.yaml"]
        if ctx["gen_cms"] and self.p(0.5):
            e = {"name": r.choice(ctx["gen_cms"]), "behavior": r.choices(["merge", "replace", "create"], [10, 4, 1])[0]}
            if ctx.get("ns") and self.p(0.9):
                e["namespace"] = ctx["ns"]
            e.update(self.gen_source(d, "comp"))
            k["configMapGenerator"] = [e]
        elif self.p(0.3):
            k["configMapGenerator"] = [{"name": "comp-config", "literals": ["FROM=component"]}]
        self.features(d, k, cctx, component=True)
        if self.p(0.02):
            k["kind"] = "Kustomization"  # a Kustomization used as a component: an error
        self.write_kustomization(d, k)

    def build(self):
        r = self.r
        base_dir = r.choice(["base", "app/base", "b"])
        shape = r.random()
        self.diamond = 0.25 <= shape < 0.45
        ctx = self.base(base_dir)

        def rel(frm, to):
            return os.path.relpath(to, frm)

        if shape < 0.25:
            return base_dir
        comp_dirs = []
        if self.p(0.35):
            for i in range(r.randint(1, 2)):
                cd = f"components/c{i}"
                self.component(cd, ctx)
                comp_dirs.append(cd)
        if shape < 0.45:
            # a diamond: two overlays of one base under a root
            a = self.overlay("ov-a", [rel("ov-a", base_dir)], ctx, [rel("ov-a", c) for c in comp_dirs if self.p(0.6)],
                             extra_k={"namePrefix": "a-"} if self.p(0.85) else None)
            b = self.overlay("ov-b", [rel("ov-b", base_dir)], ctx, [rel("ov-b", c) for c in comp_dirs if self.p(0.6)],
                             extra_k={"namePrefix": "b-"} if self.p(0.85) else None)
            self.overlay("top", ["../ov-a", "../ov-b"], a if self.p(0.5) else b,
                               [rel("top", c) for c in comp_dirs if self.p(0.2)])
            return "top"
        mid = self.overlay("overlays/mid", [rel("overlays/mid", base_dir)], ctx, [rel("overlays/mid", c) for c in comp_dirs])
        if shape < 0.75:
            return "overlays/mid"
        self.overlay("overlays/top", ["../mid"], mid, [rel("overlays/top", c) for c in comp_dirs if self.p(0.3)])
        return "overlays/top"


# ---------------------------------------------------------------- runner


def main():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from difftest import run_trees

    return run_trees("difftest-features", Tree, "difftest-features-failures", __doc__)


if __name__ == "__main__":
    sys.exit(main())
