#!/usr/bin/env python3
"""What each request of a first apply costs the API server.

Sends N requests of each kind a krmsync first apply makes (and N*M
server-side applies of ConfigMaps for comparison) to the cluster in
KUBECONFIG, through `kubectl proxy`, 8 at a time, and prints for each kind
the CPU that a kube-apiserver and an etcd running on this machine spent
per request. The bodies have the size and shape of what the controller
sends for a Kustomization of M ConfigMaps. Namespaces `krmsync-req-<i>`
are created and deleted at the end.

  python3 bench/requests.py --count 1000 --objects 10

With --status-parts it measures instead what each part of the status
costs: for each part (none, the conditions, the inventory with and
without its fingerprints, the other fields, all of it) N new
Kustomizations get a status of only that part, then two rounds of a
one-annotation merge patch show what every later write of the object pays
for carrying it (namespaces `krmsync-req-<part>-<i>`, deleted at the end).

Needs the krmsync CRDs installed (bench/cluster.py installs them).
"""

import argparse
import base64
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import server_cpu  # noqa: E402

SHA = "sha256:" + "c08a5160e25478b4a5c75a6d6577071f91a3391a8b6676963d258df15c3b23c8"
KS = "/apis/krmsync.dev/v1alpha1/namespaces/{ns}/kustomizations"
local = threading.local()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, ctype="application/json", accept=None):
    if not hasattr(local, "conn"):
        local.conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"Content-Type": ctype}
    if accept:
        headers["Accept"] = accept
    data = json.dumps(body) if body is not None else None
    local.conn.request(method, path, body=data, headers=headers)
    r = local.conn.getresponse()
    r.read()
    return r.status


def phase(name, items, fn, per_ks, threads=8):
    before, t0 = server_cpu(), time.monotonic()
    with ThreadPoolExecutor(threads) as ex:
        codes = list(ex.map(fn, items))
    wall = time.monotonic() - t0
    after = server_cpu()
    cpu = sum(after.get(k, 0) - before[k] for k in ("kube-apiserver", "etcd") if k in before)
    bad = [c for c in codes if c >= 300]
    if bad:
        sys.exit(f"{name}: {len(bad)} of {len(items)} requests failed (HTTP {bad[0]})")
    ms = 1000 * cpu / len(items)
    print(f"{name:44s} {ms:6.2f} ms/request  {ms * per_ks:6.2f} ms/Kustomization  wall {wall:5.1f} s",
          flush=True)
    return ms * per_ks


def status(ns, m, final):
    cond = lambda t, msg: {"type": t, "status": "True", "reason": "Succeeded", "message": msg,  # noqa: E731
                           "observedGeneration": 1, "lastTransitionTime": "2026-11-25T16:41:59Z"}
    entries = [{"id": f"{ns}_cm-{j}__ConfigMap", "v": "v1"} for j in range(m)]
    if not final:
        return {"status": {"conditions": [cond("Rendered", f"Rendered {m} resources from revision {SHA}")],
                           "lastAttemptedRevision": SHA, "inventory": {"entries": entries}}}
    for e in entries:
        e["h"] = "9bcc00b2654404b0b9e5d4b5098fa4de"
    return {"status": {
        "conditions": [cond("Rendered", f"Rendered {m} resources from revision {SHA}"),
                       cond("Applied", f"{m} created, 0 configured, 0 unchanged"),
                       cond("Ready", f"Applied revision {SHA}")],
        "inventory": {"entries": entries}, "observedGeneration": 1, "resourceCount": m,
        "lastAttemptedRevision": SHA, "lastAppliedRevision": SHA, "renderedDigest": SHA,
        "rendered": {"digest": SHA, "revision": SHA, "secrets": ["app-rendered-c41299a6310a8070-0"]},
        "lastRenderDuration": "0.081s", "lastApplyDuration": "0.089s", "settledAttempt": "x"}}


def status_parts(port, n, m):
    """What each part of the status costs a status write, and every later
    write of the Kustomization (see the module documentation)."""
    full = lambda ns: status(ns, m, True)["status"]  # noqa: E731
    parts = [
        ("none", lambda ns: {}),
        ("conditions", lambda ns: {"conditions": full(ns)["conditions"]}),
        ("inventory", lambda ns: {"inventory": full(ns)["inventory"]}),
        ("inventory without fingerprints", lambda ns: {"inventory": {"entries": [
            {"id": e["id"], "v": e["v"]} for e in full(ns)["inventory"]["entries"]]}}),
        ("the other fields", lambda ns: {k: v for k, v in full(ns).items()
                                         if k not in ("conditions", "inventory")}),
        ("all of it", full),
    ]
    print(f"# {n} Kustomizations per part, inventories of {m}; CPU of kube-apiserver + etcd per request")
    for i, (name, part) in enumerate(parts):
        nss = [f"krmsync-req-{i}-{j}" for j in range(n)]
        phase("(setup) namespace", nss, lambda ns: request(port, "POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}), 0)
        phase("(setup) Kustomization", nss, lambda ns: request(
            port, "PATCH", KS.format(ns=ns) + "/app?fieldManager=kubectl&force=true",
            {"apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
             "metadata": {"name": "app", "namespace": ns},
             "spec": {"interval": "1h", "source": {"bundle": {"configMapRef": {"name": "bundle"}}}}},
            "application/apply-patch+yaml"), 0)
        phase(f"status write: {name}", nss, lambda ns: request(
            port, "PATCH", KS.format(ns=ns) + "/app/status?fieldManager=krmsync", {"status": part(ns)},
            "application/merge-patch+json"), 1)
        for r in range(2):
            phase(f"  then an annotation patch ({r + 1})", nss, lambda ns: request(
                port, "PATCH", KS.format(ns=ns) + "/app?fieldManager=krmsync",
                {"metadata": {"annotations": {"krmsync.dev/bench": str(r)}}},
                "application/merge-patch+json"), 1)


def main():
    a = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_argument("--count", type=int, default=1000, help="Kustomizations (namespaces)")
    a.add_argument("--objects", type=int, default=10, help="ConfigMaps per Kustomization")
    a.add_argument("--status-parts", action="store_true",
                   help="measure what each part of the status costs a write (see above)")
    args = a.parse_args()
    n, m = args.count, args.objects
    if not server_cpu():
        sys.exit("no kube-apiserver runs on this machine: its CPU cannot be measured")
    # namespaces still being deleted keep the API server busy
    left = subprocess.run(["kubectl", "get", "namespaces", "-o", "name"], stdout=subprocess.PIPE,
                          text=True, check=True).stdout.split()
    busy = [x for x in left if x.startswith("namespace/krmsync-")]
    if busy:
        sys.exit(f"{len(busy)} krmsync-* namespaces are still there (being deleted?): measure once they are gone")
    port = free_port()
    proxy = subprocess.Popen(["kubectl", "proxy", f"--port={port}"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                if request(port, "GET", "/version") == 200:
                    break
            except (OSError, http.client.HTTPException):
                del local.conn
                time.sleep(0.1)
        if args.status_parts:
            status_parts(port, n, m)
            return
        nss = [f"krmsync-req-{i}" for i in range(n)]
        print(f"# {n} Kustomizations x {m} ConfigMaps; CPU of kube-apiserver + etcd per request")
        setup = lambda ns: request(port, "POST", "/api/v1/namespaces",  # noqa: E731
                                   {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        phase("(setup) namespace", nss, setup, 0)
        bundle = base64.b64encode(os.urandom(1200)).decode()
        phase("(setup) bundle ConfigMap", nss, lambda ns: request(port, "POST", f"/api/v1/namespaces/{ns}/configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bundle"},
            "binaryData": {"bundle.tar.gz": bundle}}), 0)
        total = {}
        total["input"] = phase("Kustomization created by kubectl (SSA)", nss, lambda ns: request(
            port, "PATCH", KS.format(ns=ns) + "/app?fieldManager=kubectl&force=true",
            {"apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
             "metadata": {"name": "app", "namespace": ns},
             "spec": {"interval": "1h", "source": {"bundle": {"configMapRef": {"name": "bundle"}}}}},
            "application/apply-patch+yaml"), 1)
        ours = 0.0
        ours += phase("GET bundle", nss, lambda ns: request(port, "GET", f"/api/v1/namespaces/{ns}/configmaps/bundle"), 1)
        meta = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
        ours += phase("LIST ConfigMaps (metadata)", nss, lambda ns: request(
            port, "GET", f"/api/v1/namespaces/{ns}/configmaps", accept=meta), 1)
        pending = lambda ns: json.dumps({"attempt": "x", "entries": [  # noqa: E731
            {"id": f"{ns}_cm-{j}__ConfigMap", "v": "v1"} for j in range(m)]})
        ours += phase("PATCH finalizer + pending inventory", nss, lambda ns: request(
            port, "PATCH", KS.format(ns=ns) + "/app?fieldManager=krmsync",
            {"metadata": {"finalizers": ["krmsync.dev/finalizer"],
                          "annotations": {"krmsync.dev/pending-inventory": pending(ns)}}},
            "application/merge-patch+json"), 1)
        items = [(ns, j) for ns in nss for j in range(m)]
        total["ssa"] = phase("APPLY ConfigMap (SSA create)", items, lambda x: request(
            port, "PATCH", f"/api/v1/namespaces/{x[0]}/configmaps/cm-{x[1]}?fieldManager=krmsync&force=true",
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": f"cm-{x[1]}", "namespace": x[0], "labels": {"krmsync.dev/name": "app"}},
             "data": {"key": f"value-{x[1]}"}}, "application/apply-patch+yaml"), m, threads=16)
        ours += phase("POST Event", nss, lambda ns: request(port, "POST", f"/api/v1/namespaces/{ns}/events", {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "app.%x" % time.time_ns(), "namespace": ns},
            "involvedObject": {"apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
                               "name": "app", "namespace": ns},
            "reason": "Applied", "message": f"Revision {SHA}: {m} created", "type": "Normal",
            "source": {"component": "krmsync"}, "firstTimestamp": "2026-11-25T16:41:59Z",
            "lastTimestamp": "2026-11-25T16:41:59Z", "count": 1, "action": "Reconcile",
            "reportingComponent": "krmsync", "reportingInstance": "krmsync"}), 1)
        phase("(for comparison) POST events.k8s.io/v1 Event", nss, lambda ns: request(
            port, "POST", f"/apis/events.k8s.io/v1/namespaces/{ns}/events", {
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "app.%x" % time.time_ns(), "namespace": ns},
                "regarding": {"apiVersion": "krmsync.dev/v1alpha1", "kind": "Kustomization",
                              "name": "app", "namespace": ns},
                "reason": "Applied", "note": f"Revision {SHA}: {m} created", "type": "Normal",
                "action": "Reconcile", "reportingController": "krmsync", "reportingInstance": "krmsync",
                "eventTime": "2026-11-25T16:41:59.000000Z"}), 1)
        gz = base64.b64encode(os.urandom(60 * m)).decode()
        ours += phase("POST rendered-manifest Secret", nss, lambda ns: request(
            port, "POST", f"/api/v1/namespaces/{ns}/secrets", {
                "apiVersion": "v1", "kind": "Secret", "type": "krmsync.dev/rendered", "immutable": True,
                "metadata": {"name": "app-rendered-0", "labels": {"krmsync.dev/rendered-for": "app"},
                             "annotations": {"krmsync.dev/revision": SHA, "krmsync.dev/digest": SHA}},
                "data": {"manifests.yaml.gz": gz}}), 1)
        ours += phase("PATCH status (the report)", nss, lambda ns: request(
            port, "PATCH", KS.format(ns=ns) + "/app/status?fieldManager=krmsync", status(ns, m, True),
            "application/merge-patch+json"), 1)
        extra = phase("(for comparison) PATCH status, small", nss, lambda ns: request(
            port, "PATCH", KS.format(ns=ns) + "/app/status?fieldManager=krmsync", status(ns, m, False),
            "application/merge-patch+json"), 1)
        print(f"# per Kustomization: {total['ssa']:.1f} ms for its {m} applies, {ours:.1f} ms for krmsync's "
              f"own requests, {total['input']:.1f} ms for its creation; a separate small status write "
              f"(the inventory recorded before the first apply, as before) would add {extra:.1f} ms")
        print(f"# floor of converge / raw applies in server CPU: "
              f"{(total['ssa'] + ours + total['input']) / total['ssa']:.2f}")
    finally:
        left = subprocess.run(["kubectl", "get", "namespaces", "-o", "name"], stdout=subprocess.PIPE,
                              text=True).stdout.split()
        ours = [x.split("/", 1)[1] for x in left if x.startswith("namespace/krmsync-req-")]
        if ours:
            subprocess.run(["kubectl", "delete", "namespace", "--wait=false"] + ours,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        proxy.terminate()


if __name__ == "__main__":
    main()
