#!/usr/bin/env python3
"""Differential test of YAML reading and writing: random resource files
written in the many ways YAML allows, built with `kubectl kustomize`
(kustomize v5.5, the reference) and `krmsync build`.

    python3 tools/difftest_yaml.py [--trees N] [--seed S] [--krmsync BIN] [--keep DIR]

Where tools/difftest.py and tools/difftest_features.py vary what a
kustomization says, this generator varies how its resource files are
written, since `krmsync build` must print the same bytes:

  * scalars: plain (single and multi-line, with inner `:` `#` `,` and
    brackets), single- and double-quoted (escapes, folding, empty),
    literal and folded block scalars with chomping and indentation
    indicators, blank and more-indented lines; numbers, booleans, nulls
    and dates in their YAML 1.1 and 1.2 spellings; tags (`!!str`, `!!int`,
    `!!binary`, custom); long lines and unicode;
  * collections: block maps and sequences (indented or not, nested, empty),
    flow maps and sequences, anchors, aliases and merge keys, keys that are
    numbers, booleans or quoted text;
  * comments everywhere, document markers (`---`, `...`), several documents
    per file, varied indentation widths;
  * Deployments whose containers (merged by name) carry such values in
    images, args and env, patched container by container;
  * transformers that re-write the resources: name prefixes, namespaces,
    labels, annotations, strategic-merge and JSON patches carrying random
    scalars, replacements copying them, generators with such literals.

A tree passes when both tools fail, or both succeed with byte-identical
output. Failing trees are kept with both outputs (see tools/difftest.py).
"""

import json
import sys
from pathlib import Path

WORDS = ["alpha", "beta", "gamma", "delta", "web", "api", "x", "on", "yes", "null", "true", "0x1F", "1e3"]

PLAIN_STRINGS = [
    "hello", "hello world", "a-b", "a.b", "a/b/c", "http://example.com/x?y=1", "a:b", "a#b", "a #", "-a",
    "a,b", "a[b]", "a{b}", "x y  z", "café", "日本語", "emoji🙂", "C:\\path", "$(VAR)", "${X}", "%pct", "a'b",
    'a"b', "a|b", "a>b", "=eq", "~tilde", "a~", "@x", "`tick", "?q", "1.2.3", "v1", "1a", "0x", "1_", "e5",
    "2001-13-45", "12:30", "1:20", "0o17", "+12", "-", "--", ".", "..", "...x", "<<", "*x", "&x", "!x", "|x",
]
NUMBERS = [
    "0", "1", "-1", "+1", "007", "0o17", "0x1F", "0X1f", "0b101", "1_000", "1.5", ".5", "1.", "1e3", "1E-3",
    "12345678901234567890", "0.1e+5", "3.14159265358979323846", "-0", "-0.0", "1e", "0.",
    "0755", "08", "0x", "1__0", "0b", "1:20", "190:20:30", "6.8523015e+5", "685_230.15", "-1_000.5",
]
BOOLS = ["true", "True", "TRUE", "false", "False", "FALSE", "yes", "Yes", "YES", "no", "No", "on", "On", "ON", "off",
         "Off", "y", "Y", "n", "N", "tRue"]
NULLS = ["null", "Null", "NULL", "~", ""]
DATES = ["2001-01-01", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5", "2002-12-14", "2001-12-15T02:59:43.1Z",
         "20010101"]
ESCAPES = ["\\n", "\\t", "\\\\", '\\"', "\\u00e9", "\\x41", "\\u2028", "\\x7f", "\\0", "\\e", "\\a", "\\/", "\\ ",
           "\\_", "\\N", "\\L", "\\P", "\\U0001F600", "\\b", "\\r", "\\v"]


class Gen:
    def __init__(self, r):
        self.r = r
        self.anchors = []
        self.counter = 0
        self.step = r.choice([2, 2, 2, 3, 4])
        self.compact = r.random() < 0.5  # block sequences under a key not indented

    def word(self):
        return self.r.choice(WORDS)

    def scalar_text(self, indent):
        """A scalar as it may appear after `key: ` or `- ` (may span lines)."""
        r = self.r
        k = r.random()
        if k < 0.16:
            s = r.choice(PLAIN_STRINGS)
            # some plain texts are not plain scalars: quote those
            if s[:1] in "-?:,[]{}#&*!|>'\"%@`" or ": " in s or " #" in s or s.endswith(":") or s in ("-", "--"):
                return json.dumps(s, ensure_ascii=False)
            return s
        if k < 0.28:
            return r.choice(NUMBERS)
        if k < 0.36:
            return r.choice(BOOLS)
        if k < 0.40:
            return r.choice(NULLS)
        if k < 0.44:
            return r.choice(DATES) if r.random() < 0.4 else r.choice(["-.inf", ".NaN", ".Inf"]) if r.random() < 0.1 else r.choice(PLAIN_STRINGS[:20])
        if k < 0.52:
            parts = [r.choice(PLAIN_STRINGS + NUMBERS + BOOLS) for _ in range(r.randint(0, 3))]
            s = " ".join(parts)
            if r.random() < 0.3:
                s = " " + s
            if r.random() < 0.3:
                s += " "
            return "'" + s.replace("'", "''") + "'"
        if k < 0.62:
            parts = []
            for _ in range(r.randint(0, 4)):
                parts.append(r.choice(ESCAPES) if r.random() < 0.5 else r.choice(PLAIN_STRINGS + NUMBERS + BOOLS).replace("\\", "\\\\").replace('"', '\\"'))
            return '"' + "".join(parts) + '"'
        if k < 0.66:
            # a multi-line flow scalar (folded by the parser)
            pad = " " * (indent + self.step)
            q = r.choice(["", "'", '"'])
            lines = [r.choice(["alpha beta", "gamma", "x", "1", "a-b"]) for _ in range(r.randint(2, 3))]
            sep = "\n" + pad
            if r.random() < 0.3:
                sep = "\n\n" + pad
            body = sep.join(lines)
            return q + body + q
        if k < 0.80:
            return self.block_scalar(indent)
        if k < 0.88:
            tag = r.choice(["!!str", "!!str", "!!str", "!!int", "!!float", "!!bool", "!!null", "!!null", "!!binary", "!custom"])
            val = {
                "!!str": lambda: r.choice(NUMBERS + BOOLS + NULLS + ["text", "'quoted'", '"d"']),
                "!!int": lambda: r.choice(["3", '"5"', "0x10", "3", "1_0"]),
                "!!float": lambda: r.choice(["1", "1.5", '"2"']),
                "!!bool": lambda: r.choice(["true", "false", "True"]),
                "!!null": lambda: r.choice(["", "null", "~"]),
                "!!binary": lambda: r.choice(["aGVsbG8=", "'aGVsbG8='"]),
                "!custom": lambda: r.choice(["x", "1", "[a, b]"]),
            }[tag]()
            return (tag + " " + val).rstrip()
        if k < 0.92:
            long = " ".join(r.choice(["lorem", "ipsum", "dolor", "sit", "amet", "consectetur"]) for _ in range(r.randint(14, 30)))
            return r.choice([long, json.dumps(long), "'" + long + "'", "x" * r.randint(70, 130)])
        if k < 0.95 and self.anchors:
            return "*" + r.choice(self.anchors)
        return r.choice(["{}", "[]", "[a, 'b', \"c\", 1, true, null]", "{a: 1, 'b': \"two\", c: [x]}", "[ ]", "{ }",
                         "[a, [b, c], {d: e}]", "[\"x y\", 'it''s']"])

    def block_scalar(self, indent):
        r = self.r
        style = r.choice(["|", ">"])
        chomp = r.choice(["", "-", "+"])
        pad_n = indent + self.step
        lead_space = r.random() < 0.15
        header = style + chomp
        if lead_space or r.random() < 0.1:
            ind = r.randint(1, 3)
            header = style + str(ind) + chomp if r.random() < 0.5 else style + chomp + str(ind)
            pad_n = indent + ind
        if r.random() < 0.15:
            header += " # header comment"
        pad = " " * pad_n
        lines = []
        for i in range(r.randint(1, 5)):
            c = r.random()
            if c < 0.15 and i > 0:
                lines.append("")
            elif c < 0.3 and i > 0:
                lines.append(pad + "  " + r.choice(["indented more", "- item", "x: y"]))
            elif c < 0.38:
                lines.append(pad + r.choice(["trailing  ", "tab\there", "# not a comment"]))
            else:
                lines.append(pad + r.choice(["line one", "second line", "key: value", "{\"json\": true}", "café", "x"]))
        if lead_space:
            lines[0] = pad + " leading space"
        if r.random() < 0.2:
            lines.append("")
        if r.random() < 0.1:
            lines.append("")
        return header + "\n" + "\n".join(lines)

    def key(self):
        r = self.r
        self.counter += 1
        k = r.random()
        if k < 0.05:
            # strings to go-yaml v3 that YAML 1.1 readers take for booleans
            return r.choice(["on", "y", "yes", "n", "off", "NO", "Y", "True2"]) + str(self.counter % 3 or "")
        if k < 0.95:
            return f"{r.choice(['k', 'key', 'field', 'a', 'z', 'item', 'Port', 'camelCase', 'with-dash', 'with_under', 'dot.ted', 'sl/ash'])}{self.counter}"
        if k < 0.99:
            return r.choice([f'"quoted key {self.counter}"', f"'single {self.counter}'", f'"{self.counter}"',
                             f"k{self.counter} x", f'"on{self.counter}"', f"on{self.counter}"])
        return r.choice([f"{self.counter}", f"{self.counter}.5", "-.inf"])

    def value(self, indent, depth, in_seq=False):
        """Returns (inline, text): inline text after `key:`/`- ` or a block
        starting on the next line (then text starts with a newline)."""
        r = self.r
        anchor = ""
        if r.random() < 0.06:
            name = f"anc{self.counter}"
            self.counter += 1
            anchor = "&" + name + " "
            self.anchors.append(name)
        c = r.random()
        if depth < 3 and c < 0.22:
            return self.block_map(indent + self.step, depth + 1, anchor)
        if depth < 3 and c < 0.38:
            ind = indent if (self.compact and not in_seq) else indent + self.step
            return self.block_seq(ind, depth + 1, anchor)
        if depth < 3 and c < 0.43:
            return " " + anchor + self.flow_multiline(indent)
        s = self.scalar_text(indent)
        if s.startswith("*"):
            return " " + s
        if anchor and (s.startswith("|") or s.startswith(">")):
            anchor = ""
        return " " + anchor + s

    def flow_multiline(self, indent):
        """A flow collection over several lines, with comments."""
        r = self.r
        inner = " " * (indent + self.step)
        seq = r.random() < 0.5
        items = []
        for _ in range(r.randint(1, 4)):
            v = r.choice(PLAIN_STRINGS[:12] + NUMBERS[:10] + BOOLS[:6] + ['"q u"', "'s'", "[x, y]", "{a: b}", ""])
            if not seq:
                v = f"{self.key()}: {v}"
            items.append(v)
        sep = "," + r.choice(["\n" + inner, " ", "\n" + inner + "# c\n" + inner])
        close = " " * (indent + r.choice([self.step, self.step + 1]))
        body = sep.join(items) + (r.choice([",", ""]) if seq else "")
        o, c = ("[", "]") if seq else ("{", "}")
        return f"{o}\n{inner}{body}\n{close}{c}"

    def comment(self, pad):
        return f"{pad}# {self.r.choice(['note', 'TODO: x', 'key: value', '- item', ''])}\n"

    def block_map(self, indent, depth, anchor=""):
        r = self.r
        pad = " " * indent
        out = []
        n = r.randint(1, 4)
        if anchor:
            out.append(" " + anchor.strip())
        if depth >= 2 and self.anchors and r.random() < 0.1:
            out.append(f"\n{pad}<<: *{r.choice(self.anchors)}")
        for _ in range(n):
            if r.random() < 0.08:
                out.append("\n" + self.comment(pad).rstrip("\n"))
            v = self.value(indent, depth)
            if r.random() < 0.03 and not v.startswith("\n"):
                # an explicit key
                out.append(f"\n{pad}? {self.key()}\n{pad}:{v}")
                continue
            line = f"\n{pad}{self.key()}:{v}"
            if not v.startswith("\n") and "\n" not in v and r.random() < 0.1:
                line += "  # trailing"
            out.append(line)
        return "".join(out)

    def block_seq(self, indent, depth, anchor=""):
        r = self.r
        pad = " " * indent
        out = []
        if anchor:
            out.append(" " + anchor.strip())
        for _ in range(r.randint(1, 4)):
            if r.random() < 0.08:
                # a sequence in a sequence item, on the dash line
                vals = [r.choice(PLAIN_STRINGS[:12] + NUMBERS[:8]) for _ in range(r.randint(1, 3))]
                out.append(f"\n{pad}- - " + f"\n{pad}  - ".join(vals))
                continue
            if r.random() < 0.3 and depth < 3:
                # a map in a sequence item: first key on the dash line
                inner = self.block_map(indent + 2, depth + 1)
                first, _, rest = inner.lstrip("\n").partition("\n")
                out.append(f"\n{pad}- {first.strip()}" + ("\n" + rest if rest else ""))
                continue
            v = self.value(indent, depth, in_seq=True)
            if v.startswith("\n"):
                r.random()  # an unused draw: seeds keep giving the trees they gave
            out.append(f"\n{pad}-{v}")
        return "".join(out)


def resource(g, kind, name, r):
    body = g.block_map(g.step, 1)
    if kind == "ConfigMap":
        data = []
        for _ in range(r.randint(1, 5)):
            s = g.scalar_text(g.step)
            if s.startswith("*") or s.startswith("{") or s.startswith("["):
                s = '"x"'
            data.append(f"{' ' * g.step}{g.key()}: {s}")
        head = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n{' ' * g.step}name: {name}\n"
        if r.random() < 0.3:
            head += f"{' ' * g.step}labels:\n{' ' * 2 * g.step}app: {r.choice(['web', json.dumps('1'), 'on', json.dumps('yes')])}\n"
        return head + "data:\n" + "\n".join(data) + "\n"
    if kind == "Deployment":
        return deployment(g, name, r)
    doc = f"apiVersion: example.com/v1\nkind: {kind}\nmetadata:\n{' ' * g.step}name: {name}\nspec:{body}\n"
    if r.random() < 0.2:
        doc = "# leading comment\n" + doc
    if r.random() < 0.15:
        doc = doc.replace("kind:", "kind:   ", 1)
    return doc


def scalar_value(g, indent):
    """A scalar for a field that must hold one (no alias, no collection)."""
    v = g.scalar_text(indent)
    if v.startswith(("*", "{", "[", "!!map", "!custom [")):
        return '"x"'
    return v


def containers(g, r, indent, names, patch=False):
    """Block list of containers (merged by name in strategic merges)."""
    pad = " " * indent
    out = []
    for n in names:
        lines = [f"{pad}- name: {n}"]
        inner = pad + "  "
        if not patch or r.random() < 0.5:
            lines.append(f"{inner}image: {scalar_value(g, indent + 2)}")
        if r.random() < 0.6:
            lines.append(f"{inner}args:")
            for _ in range(r.randint(1, 3)):
                lines.append(f"{inner}- {scalar_value(g, indent + 4)}")
        if r.random() < 0.7:
            lines.append(f"{inner}env:")
            for k in r.sample(range(4), r.randint(1, 3)):
                lines.append(f"{inner}- name: E{k}")
                lines.append(f"{inner}  value: {scalar_value(g, indent + 4)}")
        if r.random() < 0.3:
            lines.append(f"{inner}extra:{g.block_map(indent + 4, 2)}")
        out.append("\n".join(lines))
    return "\n".join(out) + "\n"


def deployment(g, name, r):
    return (
        f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  template:\n"
        f"    spec:\n      containers:\n" + containers(g, r, 6, ["c0", "c1"][: r.randint(1, 2)])
    )


class Tree:
    def __init__(self, r):
        self.r = r
        self.files = {}

    def build(self):
        r = self.r
        docs = []
        names = []
        for i in range(r.randint(1, 3)):
            g = Gen(r)
            kind = r.choice(["Widget", "Gadget", "ConfigMap", "Deployment"])
            name = f"{r.choice(['one', 'two', 'three'])}-{i}"
            names.append((kind, name))
            docs.append(resource(g, kind, name, r))
        text = ""
        for i, d in enumerate(docs):
            sep = r.choice(["---\n", "---\n", "--- # doc\n", "\n---\n", "...\n---\n"]) if i else r.choice(["", "", "---\n", "--- \n"])
            text += sep + d
        if r.random() < 0.1:
            text += "...\n"
        if r.random() < 0.1:
            text += "---\n"
        c = r.random()
        if c < 0.03:
            text = "%YAML 1.1\n---\n" + text.removeprefix("---\n")
        elif c < 0.06:
            text = "\ufeff" + text
        elif c < 0.09:
            text = text.replace("\n", "\r\n")
        self.files["app/resources.yaml"] = text
        k = ["resources:", "- resources.yaml"]
        c = r.random
        if c() < 0.3:
            k.append("namePrefix: p-")
        if c() < 0.3:
            k.append("namespace: ns1")
        if c() < 0.3:
            k += ["commonLabels:", "  team: " + r.choice(["a", '"1"', "'on'"])]
        if c() < 0.2:
            k += ["commonAnnotations:", "  note: " + json.dumps(r.choice(PLAIN_STRINGS + NUMBERS + BOOLS), ensure_ascii=False)]
        if c() < 0.3:
            kind, name = r.choice(names)
            g = Gen(r)
            field = "data" if kind == "ConfigMap" else "spec"
            api = {"ConfigMap": "v1", "Deployment": "apps/v1"}.get(kind, "example.com/v1")
            patch = f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n{field}:"
            if kind == "Deployment":
                names_ = r.sample(["c0", "c1", "c2"], r.randint(1, 2))
                patch += "\n  template:\n    spec:\n      containers:\n" + containers(g, r, 6, names_, patch=True)
            elif kind == "ConfigMap":
                s = g.scalar_text(2)
                if s.startswith(("*", "{", "[")):
                    s = "plain"
                patch += f"\n  added: {s}\n"
            else:
                patch += g.block_map(2, 1) + "\n"
            if c() < 0.5:
                self.files["app/patch.yaml"] = patch
                k += ["patches:", "- path: patch.yaml"]
            else:
                k += ["patches:", "- patch: |-"] + ["    " + line for line in patch.rstrip("\n").split("\n")]
        if c() < 0.25:
            kind, name = r.choice(names)
            g = Gen(r)
            s = g.scalar_text(0)
            if s.startswith("*"):
                s = "x"
            path = {"ConfigMap": "/data/added2", "Deployment": "/spec/template/spec/containers/0/args/-"}.get(kind, "/spec/added2")
            ops = f"- op: add\n  path: {path}\n  value: {s}\n"
            self.files["app/json.yaml"] = ops
            if "patches:" not in k:
                k.append("patches:")
            k += ["- path: json.yaml", "  target:", f"    kind: {kind}", f"    name: {name}"]
        if c() < 0.2:
            lits = []
            for _ in range(r.randint(1, 3)):
                s = r.choice(PLAIN_STRINGS + NUMBERS + BOOLS + NULLS + DATES)
                lits.append("  - " + json.dumps(f"k{len(lits)}={s}", ensure_ascii=False))
            k += ["configMapGenerator:", "- name: gen", "  literals:"] + lits
        if c() < 0.2 and any(kd != "ConfigMap" for kd, _ in names):
            src = r.choice([n for n in names if n[0] != "ConfigMap"])
            dst = r.choice(names)
            k += ["replacements:", "- source:", f"    kind: {src[0]}", f"    name: {src[1]}", "    fieldPath: metadata.name",
                  "  targets:", "  - select:", f"      kind: {dst[0]}", "    fieldPaths:",
                  f"    - {'data' if dst[0] == 'ConfigMap' else 'spec'}.copied", "    options:", "      create: true"]
        if c() < 0.1:
            k += ["sortOptions:", "  order: " + r.choice(["legacy", "fifo"])]
        self.files["app/kustomization.yaml"] = "\n".join(k) + "\n"
        return "app"


def main():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from difftest import run_trees

    return run_trees("difftest-yaml", Tree, "difftest-yaml-failures", __doc__)


if __name__ == "__main__":
    sys.exit(main())
