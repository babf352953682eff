#!/usr/bin/env python3
"""Differential test of `helmCharts`: random kustomizations with charts
built by `kubectl kustomize --enable-helm` (kustomize v5.5, the reference)
and `krmsync build --enable-helm`, both driving the same stand-in helm.

    python3 tools/difftest_helm.py [--trees N] [--seed S] [--krmsync BIN] [--keep DIR]

No real helm is needed (nor fetched): the stand-in answers `helm version`
as helm 3 and, for `helm template`, prints a ConfigMap holding the
arguments it was given, the content of each values file and the helm
environment (temporary paths replaced by `<tmp>`, the tree by `<root>`),
then the chart's `templates/` files verbatim. So a tree passes only when
both tools pick the same chart directory, arguments, values (the chart's
file, `valuesInline` merged per `valuesMerge`, `valuesFile`,
`additionalValuesFiles`) and environment, and treat the output the same.

Trees mix `helmCharts`, the deprecated `helmChartInflationGenerator`,
builtin `HelmChartInflationGenerator` configs in `generators:`,
`helmGlobals`, versioned charts, typed and quoted scalars in values, and
transformers over the output; some builds add `--helm-kube-version`,
`--helm-api-versions` and `--helm-debug`. A tree passes when both tools fail, or both
succeed with byte-identical output. The run ends with a line
`difftest-helm: N passed, M failed (R of the passed refused by both)`;
failing trees are copied to --keep.
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FAKE_HELM = r'''#!/usr/bin/env python3
import json, os, re, sys
a = sys.argv[1:]
if a[:1] == ["version"]:
    print("v3.14.2+gc309b6f")
    sys.exit(0)
if a[:1] != ["template"]:
    print("stand-in helm: unexpected " + " ".join(a), file=sys.stderr)
    sys.exit(2)
root = os.environ.get("DIFFTEST_ROOT", "")
def norm(s):
    if root:
        s = s.replace(root, "<root>")
    return re.sub(r"/[^ ]*/(kustomize|krmsync)-helm-[^/ ]*", "<tmp>", s)
values, chart, i = [], None, 0
while i < len(a):
    if a[i] == "-f" and i + 1 < len(a):
        try:
            values.append(open(a[i + 1]).read())
        except OSError as e:
            values.append("unreadable: " + e.strerror)
        i += 2
        continue
    if chart is None and a[i].startswith("/") and os.path.isdir(a[i]):
        chart = a[i]
    i += 1
name = os.path.basename(chart) if chart else "none"
print("---\n# Source: stand-in\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: helm-" + name + "\ndata:")
print("  args: " + json.dumps(norm(" ".join(a))))
env = " ".join(k + "=" + os.environ.get(k, "-") for k in ("HELM_CONFIG_HOME", "HELM_CACHE_HOME", "HELM_DATA_HOME"))
print("  env: " + json.dumps(norm(env)))
for n, v in enumerate(values):
    print("  values%d: %s" % (n, json.dumps(v)))
tdir = os.path.join(chart, "templates") if chart else ""
if tdir and os.path.isdir(tdir):
    for f in sorted(os.listdir(tdir)):
        print("---")
        sys.stdout.write(open(os.path.join(tdir, f)).read())
'''

# scalars as YAML text: YAML 1.1 and 1.2 spellings, numbers Go turns into
# float64, quoted look-alikes
SCALARS = ["yes", "no", "on", "off", "y", "n", "true", "False", "~", "null", "0777", "0o17", "0x1F",
           "1_000", "1000000", "12345678901234567890", "1e3", "1.50", "3.0", ".5", "-0", "+12",
           "2001-12-14", "2001-12-14t21:59:43.10-05:00", "'quoted'", '"yes"', "'0777'", "plain text",
           "1:20", "0b101", '""', "''", "x#y", "'a: b'", '"\\u00e9"', "0.0001", "1e-7",
           "9007199254740993", "-12", "1234567.5"]
KEYS = ["replicas", "image", "tag", "enabled", "list", "ports", "name", "port", "nested", "env", "extra",
        "a", "b", "c", "x1", "x10", "x2", "Zeta", "_u", "namespace", "Version", "apiVersions", "repo"]
TEMPLATES = [
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: {n}-svc\nspec:\n  selector:\n    app: {n}\n  ports:\n  - port: 80\n",
    "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {n}\n  labels:\n    app: {n}\nspec:\n  template:\n"
    "    spec:\n      containers:\n      - name: c\n        image: nginx:1.25\n        env:\n        - name: X\n"
    "          value: \"1\"\n",
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {n}-cm\ndata:\n  k: v\n  n: \"0777\"\n",
    "# only a comment\n",
    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ServiceAccount\n  metadata:\n    name: {n}-sa\n",
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: {n}-rb\nroleRef:\n"
    "  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: r\nsubjects:\n- kind: ServiceAccount\n"
    "  name: {n}-sa\n",
]


def value(r, depth=0):
    t = r.random()
    if depth > 2 or t < 0.55:
        return r.choice(SCALARS)
    if t < 0.8:
        return ("map", [(r.choice(KEYS), value(r, depth + 1)) for _ in range(r.randint(0, 3))])
    return ("seq", [value(r, depth + 1) for _ in range(r.randint(0, 3))])


def block(v, indent):
    """The text after `key:` for value v, block style."""
    if isinstance(v, str):
        return " " + v + "\n"
    kind, items = v
    if not items:
        return " {}\n" if kind == "map" else " []\n"
    out = "\n"
    pad = " " * indent
    if kind == "map":
        seen = set()
        for k, x in items:
            if k not in seen:
                seen.add(k)
                out += pad + k + ":" + block(x, indent + 2)
        return out
    for x in items:
        if isinstance(x, str):
            out += pad + "- " + x + "\n"
        elif x[0] == "map" and x[1]:
            out += pad + "- " + block(x, indent + 2)[1:].lstrip(" ")
        else:
            out += pad + "-" + block(x, indent + 2)
    return out


def mapping(r, n, indent):
    return block(("map", [(r.choice(KEYS), value(r)) for _ in range(n)]), indent)


def chart(r, files, d, name):
    files[f"{d}/Chart.yaml"] = f"apiVersion: v2\nname: {name}\nversion: 0.1.0\n"
    if r.random() < 0.9:
        files[f"{d}/values.yaml"] = mapping(r, r.randint(0, 6), 0).lstrip("\n") if r.random() < 0.95 else ""
    for i, t in enumerate(r.sample(TEMPLATES, r.randint(1, 3))):
        files[f"{d}/templates/t{i}.yaml"] = t.format(n=name)


def tree(r):
    files = {}
    home = r.choice([None, None, "charts", "home", "sub/charts"])
    home_dir = home or "charts"
    k = ""
    globals_ = ""
    if home and r.random() < 0.8:
        globals_ += f"  chartHome: {home}\n"
    elif home:
        home_dir = "charts"
    if r.random() < 0.15:
        globals_ += f"  configHome: {r.choice(['helm-config', '/tmp/difftest-helm-config'])}\n"
    if globals_:
        k += "helmGlobals:\n" + globals_
    for line in ["namePrefix: p-\n", "namespace: nsx\n", "commonLabels:\n  team: t\n"]:
        if r.random() < 0.2:
            k += line
    style = r.random()  # < .15: deprecated field, < .3: generators:, else helmCharts
    old = style < 0.15
    entries = []
    for i in range(r.randint(1, 2)):
        name = r.choice(["app", "web", "db"]) + (str(i) if i else "")
        e = f"- {'chartName' if old else 'name'}: {name}\n"
        if r.random() < 0.2:
            e += ("  chartVersion: 1.0.0\n  chartRepoUrl: https://charts.example.com\n" if old
                  else "  version: 1.0.0\n  repo: https://charts.example.com\n")
            chart(r, files, f"{home_dir}/{name}-1.0.0/{name}", name)
        else:
            chart(r, files, f"{home_dir}/{name}", name)
        if old:
            if r.random() < 0.5:
                e += "  releaseName: old\n"
            if r.random() < 0.5:
                e += "  valuesLocal:" + mapping(r, r.randint(0, 4), 4)
            if r.random() < 0.3:
                e += f"  valuesMerge: {r.choice(['merge', 'override', 'replace'])}\n"
            if home and r.random() < 0.7:
                e += f"  chartHome: {home}\n"
        else:
            for f, choices in [("releaseName", ["rel", "my-release"]), ("namespace", ["ns1", "kube-system"]),
                               ("includeCRDs", ["true", "false"]), ("skipTests", ["true"]),
                               ("skipHooks", ["true"]), ("kubeVersion", ["'1.29'", "v1.30.0"]),
                               ("apiVersions", ["[a/v1]", "[a/v1, b/v2]"]), ("nameTemplate", ["nt"]),
                               ("debug", ["true"])]:
                if r.random() < 0.2:
                    e += f"  {f}: {r.choice(choices)}\n"
            if r.random() < 0.6:
                e += "  valuesInline:" + mapping(r, r.randint(0, 5), 4)
            if r.random() < 0.4:
                e += f"  valuesMerge: {r.choice(['merge', 'override', 'replace'])}\n"
            if r.random() < 0.15:
                files["my-values.yaml"] = mapping(r, 3, 0).lstrip("\n")
                e += "  valuesFile: my-values.yaml\n"
            if r.random() < 0.15:
                files["add.yaml"] = mapping(r, 2, 0).lstrip("\n")
                e += "  additionalValuesFiles:\n  - add.yaml\n"
        entries.append(e)
    if old:
        k += "helmChartInflationGenerator:\n" + "".join(entries)
    elif style < 0.3:
        k += "generators:\n- helm.yaml\n"
        configs = []
        for n, e in enumerate(entries):
            body = "".join(line[2:] + "\n" for line in e.splitlines())
            g = f"chartHome: {home}\n" if home and "chartHome" in k else ""
            configs.append(f"apiVersion: builtin\nkind: HelmChartInflationGenerator\nmetadata:\n  name: h{n}\n" + g + body)
        files["helm.yaml"] = "---\n".join(configs)
    else:
        k += "helmCharts:\n" + "".join(entries)
    if r.random() < 0.2:
        k += "configMapGenerator:\n- name: gen\n  literals: [a=b]\n"
    files["kustomization.yaml"] = k
    return files


def run(cmd, cwd, env):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--krmsync", default=str(Path(__file__).resolve().parent.parent / "target/release/krmsync"))
    ap.add_argument("--keep", default="difftest-helm-failures")
    a = ap.parse_args()
    if not shutil.which("kubectl"):
        print("difftest-helm: not run: kubectl is not on PATH")
        return
    passed = failed = refused = 0
    with tempfile.TemporaryDirectory(prefix="difftest-helm-") as tmp:
        helm = Path(tmp) / "helm"
        helm.write_text(FAKE_HELM)
        helm.chmod(0o755)
        for seed in range(a.seed, a.seed + a.trees):
            root = Path(tmp) / f"tree-{seed}"
            files = tree(random.Random(seed))
            for rel, text in files.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            root = root.resolve()
            env = dict(os.environ, DIFFTEST_ROOT=str(root))
            flags = ["--enable-helm", "--helm-command", str(helm)]
            extra = random.Random(seed * 7 + 1)
            if extra.random() < 0.3:
                flags += ["--helm-kube-version", "1.31.0"]
                flags += extra.choice([[], ["--helm-debug"]])
                # kustomize 5.5 lets a chart's own apiVersions overwrite the
                # flag's values in place (shared slice memory), a documented
                # difference: only trees with no apiVersions get the flag
                if not any("apiVersions" in t for t in files.values()):
                    flags += ["--helm-api-versions", "x/v1", "--helm-api-versions", "y/v2"]
            kc, ko, ke = run(["kubectl", "kustomize", *flags, "."], root, env)
            mc, mo, me = run([a.krmsync, "build", *flags, "."], root, env)
            if (kc != 0 and mc != 0) or (kc == 0 and mc == 0 and ko == mo):
                passed += 1
                refused += kc != 0
                continue
            failed += 1
            dest = Path(a.keep) / f"seed-{seed}"
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(root, dest)
            (dest / "kubectl.out").write_bytes(ko + b"\n--- stderr\n" + ke)
            (dest / "krmsync.out").write_bytes(mo + b"\n--- stderr\n" + me)
            print(f"seed {seed}: differs (kubectl exit {kc}, krmsync exit {mc}); kept in {dest}")
    print(f"difftest-helm: {passed} passed, {failed} failed ({refused} of the passed refused by both)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
