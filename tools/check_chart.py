#!/usr/bin/env python3
"""Checks charts/krmsync without a helm binary.

Renders the chart's templates with a small Go-template interpreter that
knows exactly the subset the chart uses (if/else/with/range/define/include,
pipelines and the functions listed in FUNCS), parses every rendered
document as YAML, and checks the result against config/ (the kustomize
deployment): same ClusterRole rules, same hardened security contexts, the
applier binding present only with rbac.clusterAdmin, byte-identical CRDs.

    python3 tools/check_chart.py

An unknown function or construct is an error, so the check never silently
skips part of a template. Needs PyYAML.
"""

import copy
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CHART = ROOT / "charts" / "krmsync"


class TemplateError(Exception):
    pass


# ---------------------------------------------------------------- lexing

ACTION = re.compile(r"\{\{(-?)(\s*)(.*?)(\s*)(-?)\}\}", re.S)


def lex(src, name):
    """Text and action tokens, with `{{-` / `-}}` whitespace trimming."""
    tokens = []
    pos = 0
    trim_next = False
    for m in ACTION.finditer(src):
        text = src[pos : m.start()]
        if trim_next:
            text = text.lstrip()
        if m.group(1) == "-":
            if not m.group(2):
                raise TemplateError(f"{name}: '{{{{-' must be followed by a space")
            text = text.rstrip()
        tokens.append(("text", text))
        body = m.group(3)
        if m.group(5) == "-" and not m.group(4):
            raise TemplateError(f"{name}: '-}}}}' must be preceded by a space")
        tokens.append(("action", body.strip()))
        trim_next = m.group(5) == "-"
        pos = m.end()
    text = src[pos:]
    if trim_next:
        text = text.lstrip()
    tokens.append(("text", text))
    if "{{" in "".join(t for k, t in tokens if k == "text"):
        raise TemplateError(f"{name}: unbalanced '{{{{'")
    return tokens


# --------------------------------------------------------------- parsing

def parse(tokens, name, defines):
    """A tree of nodes; `define`s go to `defines`."""
    pos = 0

    def block(stop):
        nonlocal pos
        nodes = []
        while pos < len(tokens):
            kind, val = tokens[pos]
            pos += 1
            if kind == "text":
                if val:
                    nodes.append(("text", val))
                continue
            if val.startswith("/*"):
                if not val.endswith("*/"):
                    raise TemplateError(f"{name}: bad comment {val!r}")
                continue
            word = val.split(None, 1)[0] if val else ""
            rest = val[len(word) :].strip()
            if word in stop:
                return nodes, word, rest
            if word == "if":
                branches = [(rest, None)]
                bodies = []
                while True:
                    body, end, erest = block({"else", "end"})
                    bodies.append(body)
                    if end == "end":
                        break
                    if erest.startswith("if "):
                        branches.append((erest[3:].strip(), None))
                    else:
                        branches.append((None, None))
                nodes.append(("if", [(c, b) for (c, _), b in zip(branches, bodies)]))
            elif word in ("with", "range"):
                body, end, _ = block({"else", "end"})
                other = []
                if end == "else":
                    other, end, _ = block({"end"})
                nodes.append((word, rest, body, other))
            elif word == "define":
                m = re.fullmatch(r'"([^"]+)"', rest)
                if not m:
                    raise TemplateError(f"{name}: bad define {rest!r}")
                body, _, _ = block({"end"})
                defines[m.group(1)] = body
            elif word in ("end", "else"):
                raise TemplateError(f"{name}: unexpected {{{{ {word} }}}}")
            else:
                nodes.append(("action", val))
        if stop:
            raise TemplateError(f"{name}: missing {{{{ end }}}}")
        return nodes, None, None

    nodes, _, _ = block(set())
    return nodes


TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+)|(?P<field>\.[A-Za-z_][\w.]*|\.)'
    r"|(?P<ident>[A-Za-z_]\w*)|(?P<punct>[()|]))"
)


def tokenize_expr(expr):
    out = []
    pos = 0
    expr = expr.strip()
    while pos < len(expr):
        m = TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise TemplateError(f"cannot parse expression {expr!r} at {expr[pos:]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(expr) and expr[pos].isspace():
            pos += 1
    return out


# ------------------------------------------------------------ evaluating

def truthy(v):
    return not (v is None or v is False or v == 0 or v == "" or v == [] or v == {})


def to_yaml(v):
    if v is None:
        return "null"
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip("\n")


def go_printf(fmt, *args):
    args = list(args)

    def sub(m):
        if m.group(0) == "%%":
            return "%"
        return str(args.pop(0))

    return re.sub(r"%[sdv%]", sub, fmt)


class Renderer:
    def __init__(self, defines, top):
        self.defines = defines
        self.top = top
        self.funcs = {
            "include": lambda name, ctx: self.render(self.defines[name], ctx),
            "trunc": lambda n, s: s[:n],
            "trimSuffix": lambda suf, s: s[: -len(suf)] if suf and s.endswith(suf) else s,
            "printf": go_printf,
            "replace": lambda old, new, s: s.replace(old, new),
            "quote": lambda *a: " ".join('"' + str("" if x is None else x) + '"' for x in a),
            "default": lambda d, v=None: v if truthy(v) else d,
            "toYaml": to_yaml,
            "nindent": lambda n, s: "\n" + "\n".join(" " * n + l for l in s.split("\n")),
            "indent": lambda n, s: "\n".join(" " * n + l for l in s.split("\n")),
            "int": int,
            "gt": lambda a, b: a > b,
            "and": self._and,
            "not": lambda v: not truthy(v),
            "fail": self._fail,
        }

    @staticmethod
    def _and(*args):
        for a in args:
            if not truthy(a):
                return a
        return args[-1]

    @staticmethod
    def _fail(msg):
        raise TemplateError(f"fail: {msg}")

    def field(self, path, dot):
        if path == ".":
            return dot
        cur = dot
        for part in path[1:].split("."):
            if isinstance(cur, dict):
                cur = cur.get(part)
            else:
                return None
        return cur

    def pipeline(self, expr, dot):
        toks = tokenize_expr(expr)
        val, rest = self._pipeline(toks, dot)
        if rest:
            raise TemplateError(f"trailing tokens in {expr!r}")
        return val

    def _pipeline(self, toks, dot):
        val = None
        first = True
        while True:
            cmd = []
            depth = 0
            while toks:
                kind, tok = toks[0]
                if depth == 0 and kind == "punct" and tok in "|)":
                    break
                if kind == "punct" and tok == "(":
                    depth += 1
                elif kind == "punct" and tok == ")":
                    depth -= 1
                cmd.append(toks.pop(0))
            val = self.command(cmd, dot, None if first else [val])
            first = False
            if toks and toks[0] == ("punct", "|"):
                toks.pop(0)
                continue
            return val, toks

    def operand(self, toks, dot):
        kind, tok = toks.pop(0)
        if kind == "str":
            return yaml.safe_load(tok)  # a JSON-compatible string literal
        if kind == "num":
            return int(tok)
        if kind == "field":
            return self.field(tok, dot)
        if kind == "punct" and tok == "(":
            val, rest = self._pipeline(toks, dot)
            if not rest or rest[0] != ("punct", ")"):
                raise TemplateError("missing ')'")
            rest.pop(0)
            return val
        if kind == "ident" and tok in ("true", "false"):
            return tok == "true"
        raise TemplateError(f"unexpected {tok!r}")

    def command(self, toks, dot, piped):
        if not toks:
            raise TemplateError("empty command")
        kind, tok = toks[0]
        if kind == "ident" and tok not in ("true", "false"):
            if tok not in self.funcs:
                raise TemplateError(f"unknown function {tok!r}")
            toks = toks[1:]
            args = []
            while toks:
                args.append(self.operand(toks, dot))
            return self.funcs[tok](*(args + (piped or [])))
        val = self.operand(toks, dot)
        if toks or piped:
            raise TemplateError(f"cannot call a value: {toks} {piped}")
        return val

    def render(self, nodes, dot):
        out = []
        for node in nodes:
            kind = node[0]
            if kind == "text":
                out.append(node[1])
            elif kind == "action":
                v = self.pipeline(node[1], dot)
                out.append("" if v is None else str(v).lower() if isinstance(v, bool) else str(v))
            elif kind == "if":
                for cond, body in node[1]:
                    if cond is None or truthy(self.pipeline(cond, dot)):
                        out.append(self.render(body, dot))
                        break
            elif kind == "with":
                v = self.pipeline(node[1], dot)
                out.append(self.render(node[2], v) if truthy(v) else self.render(node[3], dot))
            elif kind == "range":
                v = self.pipeline(node[1], dot)
                if truthy(v):
                    for item in v:
                        out.append(self.render(node[2], item))
                else:
                    out.append(self.render(node[3], dot))
        return "".join(out)


def deep_merge(base, over):
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = v
    return out


def render_chart(overrides=None, namespace="krmsync-system"):
    """{template file: [documents]} and NOTES.txt text."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    values = deep_merge(values, overrides or {})
    top = {
        "Values": values,
        "Chart": {
            "Name": chart["name"],
            "Version": str(chart["version"]),
            "AppVersion": str(chart["appVersion"]),
        },
        "Release": {"Name": "krmsync", "Namespace": namespace, "Service": "Helm"},
    }
    defines = {}
    files = {}
    for path in sorted((CHART / "templates").iterdir()):
        src = path.read_text()
        files[path.name] = parse(lex(src, path.name), path.name, defines)
    r = Renderer(defines, top)
    docs = {}
    notes = ""
    for name, nodes in files.items():
        if name.startswith("_"):
            continue
        text = r.render(nodes, top)
        if name == "NOTES.txt":
            notes = text
            continue
        try:
            parsed = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as e:
            raise TemplateError(f"{name}: rendered YAML does not parse: {e}\n{text}")
        for d in parsed:
            for key in ("apiVersion", "kind", "metadata"):
                if key not in d:
                    raise TemplateError(f"{name}: a document without {key}:\n{text}")
        docs[name] = parsed
    return docs, notes


# --------------------------------------------------------------- checks

def by_kind(docs):
    out = {}
    for ds in docs.values():
        for d in ds:
            out.setdefault(d["kind"], []).append(d)
    return out


def load_config(rel):
    return yaml.safe_load((ROOT / "config" / rel).read_text())


def main():
    errors = []

    def check(cond, msg):
        if not cond:
            errors.append(msg)

    for f in sorted((ROOT / "crds").glob("*.yaml")):
        for copy_dir in ("charts/krmsync/crds", "config/crd"):
            other = ROOT / copy_dir / f.name
            check(
                other.exists() and other.read_bytes() == f.read_bytes(),
                f"{copy_dir}/{f.name} is not a byte-identical copy of crds/{f.name}",
            )

    docs, notes = render_chart()
    kinds = by_kind(docs)
    for kind, n in [
        ("ServiceAccount", 1),
        ("ClusterRole", 1),
        ("ClusterRoleBinding", 2),
        ("Role", 1),
        ("RoleBinding", 1),
        ("Deployment", 1),
        ("Service", 1),
    ]:
        check(len(kinds.get(kind, [])) == n, f"default values: expected {n} {kind}, got {len(kinds.get(kind, []))}")
    check("krmsync-applier" in notes, "NOTES.txt should mention the applier binding")

    role = kinds["ClusterRole"][0]
    check(
        role["rules"] == load_config("rbac/cluster_role.yaml")["rules"],
        "chart ClusterRole rules differ from config/rbac/cluster_role.yaml",
    )
    lease_role = kinds["Role"][0]
    check(
        lease_role["rules"] == load_config("rbac/leader_election_role.yaml")["rules"],
        "chart leader-election Role differs from config/rbac/leader_election_role.yaml",
    )
    names = {d["metadata"]["name"] for d in kinds["ClusterRoleBinding"]}
    check(names == {"krmsync-controller", "krmsync-applier"}, f"ClusterRoleBindings: {names}")
    applier = [d for d in kinds["ClusterRoleBinding"] if d["metadata"]["name"] == "krmsync-applier"][0]
    check(applier["roleRef"]["name"] == "cluster-admin", "applier must bind cluster-admin")

    dep = kinds["Deployment"][0]
    cfg_dep = load_config("manager/deployment.yaml")
    pod, cfg_pod = dep["spec"]["template"]["spec"], cfg_dep["spec"]["template"]["spec"]
    c, cfg_c = pod["containers"][0], cfg_pod["containers"][0]
    check(pod["securityContext"] == cfg_pod["securityContext"], "pod securityContext differs from config/manager")
    check(c["securityContext"] == cfg_c["securityContext"], "container securityContext differs from config/manager")
    check(c["args"] == cfg_c["args"], f"args {c['args']} != {cfg_c['args']}")
    check(c["image"] == "ghcr.io/krmsync/krmsync:0.1.0", f"image {c['image']}")
    check(c["resources"] == cfg_c["resources"], "resources differ from config/manager")
    check(c["livenessProbe"] == cfg_c["livenessProbe"], "livenessProbe differs")
    check(c["readinessProbe"] == cfg_c["readinessProbe"], "readinessProbe differs")
    check(c["ports"] == cfg_c["ports"], "ports differ")
    check(c["volumeMounts"] == cfg_c["volumeMounts"], "volumeMounts differ")
    check(pod["volumes"] == cfg_pod["volumes"], f"volumes {pod['volumes']}")
    check(
        {e["name"]: e for e in c["env"]} == {e["name"]: e for e in cfg_c["env"]},
        f"env differs:\n{c['env']}\n{cfg_c['env']}",
    )
    check(pod["serviceAccountName"] == "krmsync-controller", "serviceAccountName")
    sel = dep["spec"]["selector"]["matchLabels"]
    check(
        all(dep["spec"]["template"]["metadata"]["labels"].get(k) == v for k, v in sel.items()),
        "pod labels do not match the selector",
    )
    svc = kinds["Service"][0]
    check(svc["spec"]["selector"] == sel, "metrics Service selector != Deployment selector")
    for d in sum(docs.values(), []):
        if d["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            check(d["metadata"].get("namespace") == "krmsync-system", f"{d['kind']} without the release namespace")

    # Lockdown, no leader election, a watched namespace, extra values.
    docs, notes = render_chart(
        {
            "rbac": {"clusterAdmin": False},
            "tenancy": {"requireServiceAccount": True, "defaultServiceAccount": "deployer"},
            "leaderElection": {"enabled": False},
            "watchNamespace": "team-a",
            "image": {"tag": "v9"},
            "podAnnotations": {"a": "b"},
            "nodeSelector": {"kubernetes.io/os": "linux"},
            "extraArgs": ["--concurrency=8"],
            "metrics": {"service": {"enabled": False}},
        }
    )
    kinds = by_kind(docs)
    check(
        [d["metadata"]["name"] for d in kinds.get("ClusterRoleBinding", [])] == ["krmsync-controller"],
        "rbac.clusterAdmin=false must drop the applier binding",
    )
    check("Role" not in kinds and "RoleBinding" not in kinds, "leaderElection disabled: no Role")
    check("Service" not in kinds, "metrics.service.enabled=false: no Service")
    dep = kinds["Deployment"][0]
    pod = dep["spec"]["template"]["spec"]
    c = pod["containers"][0]
    check(c["args"] == ["controller", "--log-format=json", "--concurrency=8"], f"args {c['args']}")
    check(c["image"].endswith(":v9"), f"image {c['image']}")
    check(
        {"name": "KRMSYNC_WATCH_NAMESPACE", "value": "team-a"} in c["env"],
        "watchNamespace must set KRMSYNC_WATCH_NAMESPACE",
    )
    for name, value in [
        ("KRMSYNC_REQUIRE_SERVICE_ACCOUNT", "true"),
        ("KRMSYNC_DEFAULT_SERVICE_ACCOUNT", "deployer"),
    ]:
        check({"name": name, "value": value} in c["env"], f"tenancy values must set {name}")
    check(
        not any(e["name"] == "KRMSYNC_ALLOW_INSECURE_SOURCES" for e in c["env"]),
        "insecure sources stay refused by default",
    )
    check(dep["spec"]["template"]["metadata"].get("annotations") == {"a": "b"}, "podAnnotations")
    check(pod.get("nodeSelector") == {"kubernetes.io/os": "linux"}, "nodeSelector")
    check("rbac.clusterAdmin=false" in notes and "team-a" in notes, "NOTES.txt for lockdown")

    try:
        render_chart({"replicaCount": 2, "leaderElection": {"enabled": False}})
        errors.append("replicaCount 2 without leader election must fail")
    except TemplateError as e:
        check("leaderElection" in str(e), f"unexpected failure: {e}")
    docs, _ = render_chart({"replicaCount": 2})
    check(by_kind(docs)["Deployment"][0]["spec"]["replicas"] == 2, "replicaCount")

    if errors:
        for e in errors:
            print(f"check_chart: {e}", file=sys.stderr)
        return 1
    print("check_chart: ok")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except TemplateError as e:
        print(f"check_chart: {e}", file=sys.stderr)
        sys.exit(1)
