#!/usr/bin/env python3
"""Differential test: random, realistic kustomization trees built with
`kubectl kustomize` (kustomize v5.5, the reference) and `krmsync build`.

    python3 tools/difftest.py [--trees N] [--seed S] [--krmsync BIN] [--keep DIR]

Each tree has a base of cross-referencing workloads (Deployments using
generated ConfigMaps and Secrets, Services, an HPA, an Ingress, RBAC) and
one or two levels of overlays drawing from prefixes, suffixes, namespaces,
labels (with and without selectors), commonAnnotations, images, replicas,
strategic-merge and JSON patches, generator merges and diamonds (two
overlays of one base under a root). Both tools build the top directory; a
tree passes when both fail, or both succeed with byte-identical output.
Failing trees are copied to --keep (default ./difftest-failures) with both
outputs. The run ends with a line `difftest: N passed, M failed (R of the
passed refused by both)`; `--verbose` prints one line per tree.

Trees are generated from --seed, so a failure is reproducible: the kept
directory name carries the tree's seed (`--trees 1 --seed <it>`).
"""

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

IMAGES = ["nginx:1.25", "redis:7", "busybox", "ghcr.io/acme/api:v1.2.3", "registry.example.com/team/web@sha256:" + "a" * 64]
WORDS = ["web", "api", "cache", "worker", "front", "db", "queue", "auth"]


def yaml_map(d, indent):
    pad = " " * indent
    return "".join(f"{pad}{k}: {v}\n" for k, v in d.items())


class Tree:
    def __init__(self, rnd: random.Random):
        self.r = rnd
        self.files = {}

    def add(self, path, text):
        self.files[path] = text

    # ------------------------------------------------------------- base
    def base(self, d="base"):
        r = self.r
        apps = r.sample(WORDS, r.randint(1, 3))
        resources = []
        cm_names, secret_names = [], []
        for app in apps:
            cm = f"{app}-config"
            sec = f"{app}-secret"
            cm_names.append(cm)
            secret_names.append(sec)
            image = r.choice(IMAGES)
            env_from = f"        envFrom:\n        - configMapRef:\n            name: {cm}\n"
            vol = (
                f"        volumeMounts:\n        - name: creds\n          mountPath: /creds\n"
                f"      volumes:\n      - name: creds\n        secret:\n          secretName: {sec}\n"
            )
            init = "      initContainers: []\n" if r.random() < 0.2 else ""
            self.add(
                f"{d}/{app}-deploy.yaml",
                f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {app}\n  labels:\n    app: {app}\n"
                f"spec:\n  replicas: {r.randint(1, 3)}\n  selector:\n    matchLabels:\n      app: {app}\n"
                f"  template:\n    metadata:\n      labels:\n        app: {app}\n    spec:\n{init}"
                f"      containers:\n      - name: {app}\n        image: {image}\n{env_from}{vol}",
            )
            resources.append(f"{app}-deploy.yaml")
            self.add(
                f"{d}/{app}-svc.yaml",
                f"apiVersion: v1\nkind: Service\nmetadata:\n  name: {app}\nspec:\n  selector:\n    app: {app}\n"
                f"  ports:\n  - port: 80\n    targetPort: {r.choice([80, 8080])}\n",
            )
            resources.append(f"{app}-svc.yaml")
            if r.random() < 0.4:
                self.add(
                    f"{d}/{app}-hpa.yaml",
                    f"apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: {app}\n"
                    f"spec:\n  scaleTargetRef:\n    apiVersion: apps/v1\n    kind: Deployment\n    name: {app}\n"
                    f"  minReplicas: 1\n  maxReplicas: 5\n",
                )
                resources.append(f"{app}-hpa.yaml")
        if r.random() < 0.5:
            paths = "".join(
                f"      - path: /{a}\n        pathType: Prefix\n        backend:\n          service:\n"
                f"            name: {a}\n            port:\n              number: 80\n"
                for a in apps
            )
            self.add(
                f"{d}/ingress.yaml",
                f"apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: main\nspec:\n  rules:\n"
                f"  - http:\n      paths:\n{paths}",
            )
            resources.append("ingress.yaml")
        if r.random() < 0.4:
            self.add(
                f"{d}/rbac.yaml",
                "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: runner\n---\n"
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: reader\n"
                "rules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get]\n---\n"
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: reader\n"
                "roleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: reader\n"
                "subjects:\n- kind: ServiceAccount\n  name: runner\n",
            )
            resources.append("rbac.yaml")
        gens = "configMapGenerator:\n" + "".join(
            f"- name: {cm}\n  literals:\n  - MODE={r.choice(['dev', 'prod'])}\n  - LEVEL={r.randint(1, 9)}\n"
            for cm in cm_names
        )
        gens += "secretGenerator:\n" + "".join(
            f"- name: {s}\n  literals:\n  - token={r.choice(['abc', 'xyz'])}\n" for s in secret_names
        )
        k = "resources:\n" + "".join(f"- {x}\n" for x in resources) + gens
        if r.random() < 0.3:
            k += f"labels:\n- pairs:\n    tier: {r.choice(WORDS)}\n  includeSelectors: {r.choice(['true', 'false'])}\n"
        self.add(f"{d}/kustomization.yaml", k)
        return apps, cm_names

    # ---------------------------------------------------------- overlay
    def overlay(self, d, parent_rel, apps, cms):
        r = self.r
        lines = [f"resources:\n- {parent_rel}\n"]
        if r.random() < 0.5:
            lines.append(f"namePrefix: {r.choice(WORDS)}-\n")
        if r.random() < 0.3:
            lines.append(f"nameSuffix: -{r.choice(['v1', 'blue', 'x'])}\n")
        if r.random() < 0.5:
            lines.append(f"namespace: {r.choice(['prod', 'staging', 'team-a'])}\n")
        if r.random() < 0.4:
            lines.append(
                f"labels:\n- pairs:\n    env: {r.choice(['prod', 'dev'])}\n"
                f"  includeSelectors: {r.choice(['true', 'false'])}\n"
                + ("  includeTemplates: true\n" if r.random() < 0.3 else "")
            )
        if r.random() < 0.2:
            lines.append(f"commonLabels:\n  owner: {r.choice(WORDS)}\n")
        if r.random() < 0.4:
            lines.append(f"commonAnnotations:\n  note: \"{r.choice(['a', 'b c', '1'])}\"\n")
        if r.random() < 0.4:
            img = r.choice(IMAGES).split("@")[0].split(":")[0]
            lines.append(f"images:\n- name: {img}\n  newTag: \"{r.choice(['2.0', 'latest', '1.10'])}\"\n")
        if r.random() < 0.3:
            lines.append(f"replicas:\n- name: {r.choice(apps)}\n  count: {r.randint(2, 6)}\n")
        patches = []
        if r.random() < 0.4:
            app = r.choice(apps)
            patches.append(
                f"- patch: |\n    apiVersion: apps/v1\n    kind: Deployment\n    metadata:\n      name: {app}\n"
                f"    spec:\n      template:\n        spec:\n          containers:\n          - name: {app}\n"
                f"            env:\n            - name: EXTRA\n              value: \"{r.randint(1, 99)}\"\n"
            )
        if r.random() < 0.3:
            path = r.choice(["/metadata/annotations/patched", "/spec/replicas"])
            value = "\"yes\"" if "annotations" in path else str(r.randint(1, 4))
            patches.append(
                f"- target:\n    kind: Deployment\n  patch: |\n    - op: add\n      path: {path}\n      value: {value}\n"
            )
        if patches:
            lines.append("patches:\n" + "".join(patches))
        if r.random() < 0.3 and cms:
            cm = r.choice(cms)
            lines.append(
                f"configMapGenerator:\n- name: {cm}\n  behavior: {r.choice(['merge', 'replace'])}\n"
                f"  literals:\n  - OVERLAY=true\n"
            )
        self.add(f"{d}/kustomization.yaml", "".join(lines))

    def build(self):
        r = self.r
        apps, cms = self.base()
        if r.random() < 0.25:
            # a diamond: two overlays of one base under a root
            self.overlay("a", "../base", apps, cms)
            self.files["a/kustomization.yaml"] = self.files["a/kustomization.yaml"].replace(
                "resources:\n- ../base\n", "resources:\n- ../base\nnamePrefix: a-\n", 1
            ) if "namePrefix" not in self.files["a/kustomization.yaml"] else self.files["a/kustomization.yaml"]
            self.overlay("b", "../base", apps, cms)
            b = self.files["b/kustomization.yaml"]
            if "namePrefix" in b:
                b = "\n".join(l for l in b.split("\n") if not l.startswith("namePrefix")) + "\n"
            self.files["b/kustomization.yaml"] = b.replace("resources:\n- ../base\n", "resources:\n- ../base\nnamePrefix: b-\n", 1)
            self.add("top/kustomization.yaml", "resources:\n- ../a\n- ../b\n")
            return "top"
        self.overlay("mid", "../base", apps, cms)
        if r.random() < 0.5:
            self.overlay("top", "../mid", apps, cms)
            return "top"
        return "mid"


def run(cmd, cwd):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=120)
    except subprocess.TimeoutExpired:
        return 124, b"", b"timeout\n"
    return p.returncode, p.stdout, p.stderr


def write_tree(root, files):
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))


def run_trees(label, make_tree, default_keep, doc):
    """The command line shared by the tree generators: builds --trees trees
    of `make_tree(random.Random(seed))` (an object with `build()` returning
    the directory to build, `files`, and optionally `args`, extra build
    flags) with both tools and compares. krmsync panicking fails a tree
    whatever kustomize did."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trees", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--krmsync", default=str(Path(__file__).resolve().parent.parent / "target/release/krmsync"))
    ap.add_argument("--keep", default=default_keep)
    ap.add_argument("--verbose", action="store_true", help="print one line per tree")
    args = ap.parse_args()
    if not shutil.which("kubectl"):
        print(f"{label}: not run: kubectl is not on PATH")
        return 0
    if not os.access(args.krmsync, os.X_OK):
        print(f"{label}: no krmsync binary at {args.krmsync} (cargo build, or --krmsync)", file=sys.stderr)
        return 2
    keep = Path(args.keep)
    passed, failed, both_failed = 0, [], 0
    for i in range(args.trees):
        seed = args.seed + i
        tree = make_tree(random.Random(seed))
        top = tree.build()
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            write_tree(root, tree.files)
            extra = list(getattr(tree, "args", []))
            ref = run(["kubectl", "kustomize", top] + extra, root)
            got = run([args.krmsync, "build", top] + extra, root)
            panicked = got[0] == 101 or b"panicked at" in got[2]
            same = not panicked and (
                (ref[0] != 0 and got[0] != 0) or (ref[0] == 0 and got[0] == 0 and ref[1] == got[1]))
            if args.verbose:
                why = ref[2].decode(errors="replace").strip().splitlines()[-1:] if ref[0] else []
                print(f"seed {seed}: {'pass' if same else 'FAIL'} (kustomize rc={ref[0]}, krmsync rc={got[0]}) {' '.join(why)[-220:]}")
            if same:
                passed += 1
                both_failed += ref[0] != 0
                continue
            failed.append(seed)
            dest = keep / f"seed-{seed}"
            if dest.exists():
                shutil.rmtree(dest)
            shutil.copytree(root, dest)
            (dest / "top.txt").write_text(top + "\n")
            (dest / "kustomize.out").write_bytes(ref[1] + ref[2])
            (dest / "krmsync.out").write_bytes(got[1] + got[2])
    if failed:
        print(f"{label}: failing trees kept in {keep}/ (seeds {', '.join(map(str, failed[:20]))}{' ...' if len(failed) > 20 else ''})")
    print(f"{label}: {passed} passed, {len(failed)} failed ({both_failed} of the passed refused by both)")
    return 1 if failed else 0


def main():
    return run_trees("difftest", Tree, "difftest-failures", __doc__)


if __name__ == "__main__":
    sys.exit(main())
