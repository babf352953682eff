#!/usr/bin/env python3
"""Regenerates src/kustomize/openapi/k8s_v1_21_2.json, the builtin OpenAPI
data the engine uses for strategic-merge patches and namespace scope.

Input: the Kubernetes v1.21.2 OpenAPI v2 definitions as kustomize v5.5 embeds
them, reduced to the fields strategic merge needs (for example
../shared/conformance/reference/k8s-openapi-v1.21.2-reduced.json, where a
reference is spelled `"ref": "<definition name>"`).

Output: a minified JSON document in OpenAPI v2 spelling, so that the engine
reads it with the same code as a user's `openapi: {path: ...}` file:

  {"definitions": {NAME: SCHEMA, ...},
   "x-krmsync-cluster-scoped": [[apiVersion, kind], ...],
   "x-krmsync-source": "..."}

SCHEMA keeps only `properties`, `additionalProperties`, `items`, `$ref`
(`#/definitions/NAME`), `type` when it is "array" (the only type the merge
logic tests), and the `x-kubernetes-patch-strategy`,
`x-kubernetes-patch-merge-key`, `x-kubernetes-list-map-keys`,
`x-kubernetes-list-type` and `x-kubernetes-group-version-kind` extensions.

`x-krmsync-cluster-scoped` lists the kinds kustomize treats as certainly
cluster-scoped. kustomize learns the scope from API paths that have a GET
operation, so create-only review kinds (TokenReview, SubjectAccessReview,
SelfSubject*Review) have no known scope and count as namespaced (checked
with `kubectl kustomize`: a `namespace:` is added to them).

Usage: tools/gen_openapi.py INPUT.json > src/kustomize/openapi/k8s_v1_21_2.json
"""
import json
import sys

# Cluster-scoped kinds whose API has no GET path: kustomize does not know
# their scope and treats them as namespaced.
CREATE_ONLY_KINDS = {"TokenReview", "SubjectAccessReview",
                     "SelfSubjectAccessReview", "SelfSubjectRulesReview"}

EXTENSIONS = ("x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key",
              "x-kubernetes-list-map-keys", "x-kubernetes-list-type",
              "x-kubernetes-group-version-kind")


def convert(schema):
    out = {}
    if "ref" in schema:
        out["$ref"] = "#/definitions/" + schema["ref"]
    if schema.get("type") == "array":
        out["type"] = "array"
    if "properties" in schema:
        out["properties"] = {k: convert(v) for k, v in sorted(schema["properties"].items())}
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = convert(schema["additionalProperties"])
    if isinstance(schema.get("items"), dict):
        out["items"] = convert(schema["items"])
    for ext in EXTENSIONS:
        if ext in schema:
            out[ext] = schema[ext]
    return out


def api_version(gvk):
    return gvk["group"] + "/" + gvk["version"] if gvk["group"] else gvk["version"]


def main():
    ref = json.load(open(sys.argv[1]))
    definitions = {name: convert(d) for name, d in sorted(ref["definitions"].items())}
    cluster = sorted({(api_version(g), g["kind"]) for g in ref["clusterScoped"]
                      if g["kind"] not in CREATE_ONLY_KINDS})
    out = {
        "x-krmsync-source": ref.get("source", ""),
        "x-krmsync-cluster-scoped": [list(c) for c in cluster],
        "definitions": definitions,
    }
    json.dump(out, sys.stdout, separators=(",", ":"), sort_keys=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
