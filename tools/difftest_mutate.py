#!/usr/bin/env python3
"""Differential test by mutation: existing kustomization trees, changed a
little at random, built with `kubectl kustomize` (kustomize v5.5, the
reference) and `krmsync build`.

    python3 tools/difftest_mutate.py [--trees N] [--seed S] [--krmsync BIN] [--keep DIR]
                                     [--corpus DIR]... [--tree DIR]...

Where the other generators write trees from scratch, this one starts from
trees someone wrote: the cases of the conformance corpus
(`../shared/conformance/cases`, read in place and never copied into this
repository), or any directory of kustomizations given with `--tree` (a
real-world clone, say). Each generated tree is one of them with one to
three mutations of its YAML files, most often of a kustomization:

  * a scalar replaced by another (empty, null, numbers, booleans, YAML 1.1
    spellings, paths, selectors, `$(VAR)`, long or odd text, or a value
    found elsewhere in the same tree), or by a list or a map;
  * a map key removed, renamed to a sibling's or a known field's name, or
    its value swapped with another's;
  * a list item removed, duplicated or moved;
  * a kustomization field added with a value taken from another
    kustomization of the corpus (splicing: `images`, `labels`, `patches`,
    `replacements`, `namePrefix`, ... as other tests wrote them);
  * a scalar's quoting style or a collection's flow style changed.

The files are read and written back with PyYAML's node API, so tags and
scalar styles survive; comments do not. Mutated inputs are mostly near the
valid space: they exercise error agreement (both tools must refuse what
the other refuses) as much as output bytes. A tree passes when both tools
fail, or both succeed with byte-identical output; krmsync panicking fails
a tree in any case. Failing trees are kept with both outputs (see
tools/difftest.py).
"""

import copy
import sys
from pathlib import Path

import yaml

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

ODD_SCALARS = [
    "", "~", "null", "0", "-1", "1", "3", "1.5", "1e3", "0600", "0x1F", "true", "false", "yes", "on", "NO",
    "a b", "x", "web", "my-app", "nginx", "nginx:1.25", "nginx@sha256:" + "a" * 64, "registry:5000/x/y:1",
    "$(VAR)", "*", ".*", "[", "a=b", "a,b", "app=web", "!x", "../x", "/abs/path", "x/y", "x.yaml",
    "apps/v1", "v1", "Deployment", "ConfigMap", "metadata.name", "spec.replicas", "data.*",
    "spec.template.spec.containers.[name=x].image", "2001-12-14", "Ünï", "a" * 300, "-", ":", "a: b",
    "# x", "'", "\"", "line1\nline2", " lead", "trail ",
]

KUSTOMIZATION_FIELDS = [
    "resources", "bases", "components", "namespace", "namePrefix", "nameSuffix", "commonLabels", "labels",
    "commonAnnotations", "images", "replicas", "patches", "patchesStrategicMerge", "patchesJson6902",
    "replacements", "vars", "configMapGenerator", "secretGenerator", "generatorOptions", "configurations",
    "crds", "openapi", "sortOptions", "buildMetadata", "transformers", "generators", "helmCharts",
    "apiVersion", "kind", "metadata",
]

RESOURCE_FIELDS = ["metadata", "name", "namespace", "labels", "annotations", "spec", "data", "kind",
                   "apiVersion", "selector", "matchLabels", "template", "containers", "image", "env", "value",
                   "ports", "containerPort", "replicas", "items", "path", "target", "patch", "options"]

STR = "tag:yaml.org,2002:str"
SEQ = "tag:yaml.org,2002:seq"
MAP = "tag:yaml.org,2002:map"


def implicit_tag(value):
    """The tag a plain scalar of this text resolves to."""
    return yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False))


def scalar(value, r):
    style = r.choice([None, None, None, "'", '"'])
    if "\n" in value or value != value.strip() or value[:1] in "!&*[]{}#|>'\"%@`-?:," and value not in ("-",):
        style = r.choice(["'", '"'])
    if style is None:
        return yaml.ScalarNode(implicit_tag(value), value)
    return yaml.ScalarNode(STR, value, style=style)


def walk(node, parent=None, key=None, out=None, seen=None):
    """Every (node, parent, position) below node; aliases are visited once."""
    if out is None:
        out, seen = [], set()
    if id(node) in seen:
        return out
    seen.add(id(node))
    out.append((node, parent, key))
    if isinstance(node, yaml.MappingNode):
        for i, (k, v) in enumerate(node.value):
            out.append((k, node, ("key", i)))
            walk(v, node, ("value", i), out, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            walk(v, node, ("item", i), out, seen)
    return out


def put(parent, where, node):
    kind, i = where
    if kind == "item":
        parent.value[i] = node
    elif kind == "value":
        parent.value[i] = (parent.value[i][0], node)
    else:
        parent.value[i] = (node, parent.value[i][1])


def load_docs(data):
    try:
        text = data.decode("utf-8")
        return [d for d in yaml.compose_all(text, Loader=yaml.SafeLoader)]
    except Exception:  # noqa: BLE001 - not YAML PyYAML reads: left alone
        return None


def dump_docs(docs):
    return yaml.serialize_all(docs, Dumper=yaml.SafeDumper, width=4096, allow_unicode=True,
                              explicit_start=len(docs) > 1).encode("utf-8")


class Corpus:
    """The trees mutations start from, and a pool of kustomization field
    values to splice."""

    def __init__(self, corpora, trees):
        self.cases = []
        self.fields = {}
        for corpus in corpora:
            for case in sorted(Path(corpus).iterdir()):
                meta_file = case / "case.yaml"
                if not meta_file.is_file():
                    continue
                meta = yaml.safe_load(meta_file.read_text())
                if meta.get("needs") or meta.get("empty_dirs"):
                    continue
                base = case / "input"
                root = Path(meta.get("root", "input")).relative_to("input")
                self.add(case.name, base, str(root), [str(a) for a in meta.get("args") or []])
        for tree in trees:
            tree = Path(tree)
            for k in sorted(tree.rglob("kustomization.yaml")):
                if ".git" in k.parts:
                    continue
                self.add(f"{tree.name}/{k.parent.relative_to(tree)}", tree, str(k.parent.relative_to(tree)), [])
        if not self.cases:
            sys.exit("difftest-mutate: no trees to mutate (see --corpus and --tree)")

    def add(self, name, base, root, args):
        self.cases.append((name, base, root, args))
        for name_ in KUSTOMIZATION_NAMES:
            k = base / root / name_
            if k.is_file():
                docs = load_docs(k.read_bytes())
                if docs and isinstance(docs[0], yaml.MappingNode):
                    for key, value in docs[0].value:
                        if isinstance(key, yaml.ScalarNode):
                            self.fields.setdefault(key.value, []).append(value)


class Tree:
    corpus = None

    def __init__(self, r):
        self.r = r
        self.files = {}
        self.args = []

    def build(self):
        r = self.r
        name, base, root, args = r.choice(self.corpus.cases)
        self.args = args
        yamls = []
        for p in sorted(base.rglob("*")):
            if not p.is_file() or p.is_symlink():
                continue
            rel = str(p.relative_to(base))
            self.files[rel] = p.read_bytes()
            if p.suffix in (".yaml", ".yml") or p.name == "Kustomization":
                yamls.append(rel)
        self.files["mutations.txt"] = f"from {name}\n".encode()
        if not yamls:
            return root
        kust = [f for f in yamls if Path(f).name in KUSTOMIZATION_NAMES]
        for _ in range(r.choice([1, 1, 1, 2, 3])):
            target = r.choice(kust) if kust and r.random() < 0.6 else r.choice(yamls)
            docs = load_docs(self.files[target])
            if not docs:
                continue
            note = self.mutate(docs, target in kust)
            if note:
                self.files[target] = dump_docs(docs)
                self.files["mutations.txt"] += f"{target}: {note}\n".encode()
        return root

    def values_of(self, docs):
        return [n.value for d in docs for n, _, _ in walk(d) if isinstance(n, yaml.ScalarNode) and n.value]

    def mutate(self, docs, is_kustomization):
        r = self.r
        doc_i = r.randrange(len(docs))
        doc = docs[doc_i]
        nodes = walk(doc)
        ops = ["scalar", "scalar", "collection", "delete", "rename", "swap", "item", "style"]
        if is_kustomization and isinstance(doc, yaml.MappingNode):
            ops += ["splice", "splice", "splice"]
        op = r.choice(ops)
        scalars = [(n, p, w) for n, p, w in nodes if isinstance(n, yaml.ScalarNode) and p is not None]
        values = [(n, p, w) for n, p, w in scalars if w[0] != "key"]
        maps = [n for n, _, _ in nodes if isinstance(n, yaml.MappingNode) and n.value]
        seqs = [n for n, _, _ in nodes if isinstance(n, yaml.SequenceNode) and n.value]
        if op == "scalar" and values:
            node, parent, where = r.choice(values)
            pool = ODD_SCALARS if r.random() < 0.6 else (self.values_of(docs) or ODD_SCALARS)
            new = r.choice(pool)
            put(parent, where, scalar(new, r))
            return f"scalar {node.value!r} -> {new!r}"
        if op == "collection":
            pick = [(n, p, w) for n, p, w in nodes if p is not None and w[0] != "key"]
            if not pick:
                return None
            node, parent, where = r.choice(pick)
            kind = r.choice(["seq", "map", "empty-seq", "empty-map", "wrap"])
            if kind == "seq":
                new = yaml.SequenceNode(SEQ, [scalar(r.choice(ODD_SCALARS), r)])
            elif kind == "map":
                new = yaml.MappingNode(MAP, [(scalar("a", r), scalar(r.choice(ODD_SCALARS), r))])
            elif kind == "empty-seq":
                new = yaml.SequenceNode(SEQ, [], flow_style=True)
            elif kind == "empty-map":
                new = yaml.MappingNode(MAP, [], flow_style=True)
            else:
                new = yaml.SequenceNode(SEQ, [copy.deepcopy(node)])
            put(parent, where, new)
            return f"{kind} in place of a {type(node).__name__}"
        if op == "delete" and maps:
            m = r.choice(maps)
            i = r.randrange(len(m.value))
            key = m.value[i][0]
            del m.value[i]
            return f"key {getattr(key, 'value', '?')!r} deleted"
        if op == "rename" and maps:
            m = r.choice(maps)
            i = r.randrange(len(m.value))
            old = m.value[i][0]
            siblings = [k.value for k, _ in m.value if isinstance(k, yaml.ScalarNode)]
            pool = KUSTOMIZATION_FIELDS if is_kustomization and m is doc else RESOURCE_FIELDS
            new = r.choice(siblings + pool if r.random() < 0.3 else pool)
            m.value[i] = (yaml.ScalarNode(STR, new), m.value[i][1])
            return f"key {getattr(old, 'value', '?')!r} renamed {new!r}"
        if op == "swap" and maps:
            m = r.choice(maps)
            if len(m.value) < 2:
                return None
            i, j = r.sample(range(len(m.value)), 2)
            (ki, vi), (kj, vj) = m.value[i], m.value[j]
            m.value[i], m.value[j] = (ki, vj), (kj, vi)
            return f"values of {getattr(ki, 'value', '?')!r} and {getattr(kj, 'value', '?')!r} swapped"
        if op == "item" and seqs:
            s = r.choice(seqs)
            i = r.randrange(len(s.value))
            how = r.choice(["delete", "duplicate", "move"])
            if how == "delete":
                del s.value[i]
            elif how == "duplicate":
                s.value.insert(i, copy.deepcopy(s.value[i]))
            else:
                s.value.insert(r.randrange(len(s.value)), s.value.pop(i))
            return f"list item {i} {how}d"
        if op == "style":
            if r.random() < 0.5 and values:
                node, parent, where = r.choice(values)
                if node.tag != STR:
                    return None
                style = r.choice([None, "'", '"', "|", ">"])
                put(parent, where, yaml.ScalarNode(STR, node.value, style=style))
                return f"scalar {node.value[:40]!r} style {style!r}"
            colls = [n for n, _, _ in nodes if isinstance(n, (yaml.MappingNode, yaml.SequenceNode)) and n.value]
            if not colls:
                return None
            c = r.choice(colls)
            c.flow_style = not c.flow_style
            return f"{type(c).__name__} flow style {c.flow_style}"
        if op == "splice":
            field = r.choice([f for f in KUSTOMIZATION_FIELDS if f in self.corpus.fields])
            value = copy.deepcopy(r.choice(self.corpus.fields[field]))
            for i, (k, _) in enumerate(doc.value):
                if isinstance(k, yaml.ScalarNode) and k.value == field:
                    doc.value[i] = (k, value)
                    return f"field {field!r} replaced from another kustomization"
            doc.value.insert(r.randrange(len(doc.value) + 1), (yaml.ScalarNode(STR, field), value))
            return f"field {field!r} added from another kustomization"
        return None


def main():
    import argparse

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from difftest import run_trees

    ap = argparse.ArgumentParser(add_help=False)
    default = Path(__file__).resolve().parent.parent.parent / "shared/conformance/cases"
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("--tree", action="append", default=[])
    known, rest = ap.parse_known_args()
    corpora = known.corpus or ([] if known.tree else [default])
    Tree.corpus = Corpus(corpora, known.tree)
    sys.argv = [sys.argv[0]] + rest
    return run_trees("difftest-mutate", Tree, "difftest-mutate-failures", __doc__)


if __name__ == "__main__":
    sys.exit(main())
