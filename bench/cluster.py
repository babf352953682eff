#!/usr/bin/env python3
"""Controller benchmark against the cluster in KUBECONFIG.

Creates N Kustomizations, each applying M ConfigMaps from an in-cluster
bundle, runs `krmsync controller` as a local process against the cluster
and prints one line per figure:

  raw_ssa_seconds          N*M server-side applies by 8 parallel `kubectl apply --server-side`
  raw_ssa_noop_seconds     the same applies again (nothing changes)
  converge_seconds         Kustomizations created -> all Ready (with
                           --created-before-start: controller started, every
                           Kustomization already there -> all Ready)
  converge_ratio           converge_seconds / raw_ssa_seconds (target <= 1.3)
  controller_cpu_seconds   controller CPU (user+system) until all Ready
  noop_resync_seconds      controller restarted with every Kustomization asked
                           to reconcile (krmsync.dev/reconcile-at), nothing changed
                           -> every request handled
  restore_deleted_seconds  a ConfigMap deleted -> back
  restore_edited_seconds   a ConfigMap edited by another field manager -> restored
  peak_rss_mib             the controller's peak resident memory (VmHWM), over all phases

and, when the API server's /metrics can be read, the requests the cluster
served in each phase by verb and resource (everything, the cluster's own
controllers included), and the CPU that a kube-apiserver, an etcd and a
kube-controller-manager running on this machine, the whole machine and this
script spent in each phase. Completion is seen through one raw watch of the
Kustomizations (see `Watch`), not by listing them all again and again (a
list of 1,000 Kustomizations costs the API server about a third of a
second).

The raw applies and the Kustomizations use namespaces of their own
(`krmsync-bench-raw-<i>`, `krmsync-bench-<i>`), all deleted at the end
unless --keep. The controller runs with the kubeconfig's identity.

  python3 bench/cluster.py --kustomizations 1000 --objects 10 --krmsync target/release/krmsync
"""

import argparse
import base64
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

PREFIX = "krmsync-bench"
LABEL = "krmsync.dev/bench=true"
KS = "kustomizations.krmsync.dev"
VERSION = "v1alpha1"


def kubectl(args, stdin=None, check=True):
    p = subprocess.run(
        ["kubectl"] + args,
        input=stdin.encode() if isinstance(stdin, str) else stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if check and p.returncode != 0:
        sys.exit(f"kubectl {' '.join(args[:6])} failed: {p.stderr.decode().strip()}")
    return p


def apply_list(items, server_side=True, manager="krmsync-bench"):
    """Applies `items` (dicts) in one kubectl call."""
    doc = json.dumps({"apiVersion": "v1", "kind": "List", "items": items})
    args = ["apply", "-f", "-", "-o", "name"]
    if server_side:
        args += ["--server-side", "--force-conflicts", f"--field-manager={manager}"]
    kubectl(args, doc)


def chunks(xs, n):
    """`xs` dealt into at most `n` non-empty parts."""
    return [part for part in (xs[i::n] for i in range(n)) if part]


def configmap(name, ns, i):
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns},
        "data": {"index": str(i), "payload": f"value-{i}-" + "x" * 200},
    }


def apiserver_requests():
    """Requests served and seconds spent by the API server, by (verb,
    resource, subresource, dry_run): {key: [count, seconds]}, or None."""
    p = kubectl(["get", "--raw", "/metrics"], check=False)
    if p.returncode != 0:
        return None
    out = {}
    pat = re.compile(r"^(apiserver_request_total|apiserver_request_duration_seconds_sum)\{([^}]*)\} ([0-9.e+-]+)$")
    for line in p.stdout.decode().splitlines():
        m = pat.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        key = (
            labels.get("verb", ""),
            labels.get("resource", "") + ("/" + labels["subresource"] if labels.get("subresource") else ""),
            "dry-run" if labels.get("dry_run") else "",
        )
        slot = out.setdefault(key, [0.0, 0.0])
        slot[0 if m.group(1) == "apiserver_request_total" else 1] += float(m.group(3))
    return out


def print_requests(phase, before, after):
    """The requests of a phase, and the API server's time spent on them
    (summed over concurrent requests, so it can exceed the phase)."""
    if before is None or after is None:
        return
    diff = {k: [a - b for a, b in zip(v, before.get(k, [0.0, 0.0]))] for k, v in after.items()}
    # watches are long-running: their seconds are not work
    diff = {k: v for k, v in diff.items() if v[0] >= 1 and k[0] != "WATCH"}
    total = sum(v[0] for v in diff.values())
    secs = sum(v[1] for v in diff.values())
    print(f"# requests during {phase}: {int(total)}, {secs:.1f} s of API server time")
    for (verb, res, dry), (n, t) in sorted(diff.items(), key=lambda kv: -kv[1][0])[:12]:
        print(f"#   {int(n):>7} {verb} {res} {dry}".rstrip() + f"  ({t:.1f} s, {1000 * t / n:.1f} ms each)")


class Controller:
    def __init__(self, binary, work, extra):
        self.log = open(os.path.join(work, "controller.log"), "ab")
        self.proc = subprocess.Popen(
            [binary, "controller", "--metrics-addr", "127.0.0.1:0", "--health-addr",
             "127.0.0.1:0", "--work-dir", os.path.join(work, "work"), "--log-format", "json"]
            + extra,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
        )
        self.peak_kib = 0
        self.threads = 0

    def cpu_seconds(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def sample(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                    elif line.startswith("Threads:"):
                        self.threads = max(self.threads, int(line.split()[1]))
        except FileNotFoundError:
            pass
        if self.proc.poll() is not None:
            sys.exit(f"the controller exited ({self.proc.returncode}); see its log")

    def rss_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
        return 0

    def rss_parts(self):
        """The resident memory now by kind: heap and stacks (anon), the
        binary's pages (file), and transparent huge pages among the anon."""
        parts = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                key = line.split(":")[0]
                if key in ("RssAnon", "RssFile"):
                    parts[key] = round(int(line.split()[1]) / 1024, 1)
        try:
            with open(f"/proc/{self.proc.pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("AnonHugePages:"):
                        parts["AnonHugePages"] = round(int(line.split()[1]) / 1024, 1)
        except FileNotFoundError:
            pass
        return ", ".join(f"{k} {v} MiB" for k, v in parts.items())

    def stop(self):
        self.sample()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def list_kustomizations():
    p = kubectl(["get", KS, "-A", "-l", LABEL, "-o", "json"])
    return json.loads(p.stdout)["items"]


def ready(k):
    for c in k.get("status", {}).get("conditions", []):
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


class Watch:
    """The Kustomizations' Ready status and lastHandledReconcileAt, kept
    current by one watch of them: polling the whole list every second would
    cost the API server (and this script) far more than the controller's
    own work in a phase of a few seconds. The watch is read raw (`kubectl
    get --raw`: one JSON event per line, passed through as it comes), so the
    observer decodes each event once, in this script, instead of kubectl
    also decoding and re-printing it: the machine is shared with what is
    measured, and `kubectl get --watch -o json` took about 1.2 s of CPU in
    a converge of 1,000 Kustomizations."""

    def __init__(self):
        self.state = {}
        self.lock = threading.Lock()
        path = (f"/apis/{KS.split('.', 1)[1]}/{VERSION}/{KS.split('.', 1)[0]}"
                f"?watch=true&labelSelector={LABEL}")
        self.proc = subprocess.Popen(
            ["kubectl", "get", "--raw", path],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            k = ev.get("object", {})
            ns = k.get("metadata", {}).get("namespace")
            if not ns or ev.get("type") not in ("ADDED", "MODIFIED"):
                continue
            with self.lock:
                self.state[ns] = (ready(k), k.get("status", {}).get("lastHandledReconcileAt", ""))

    def count(self, done):
        with self.lock:
            return sum(1 for r, handled in self.state.values() if done(r, handled))

    def cpu_seconds(self):
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except FileNotFoundError:
            return 0.0

    def stop(self):
        print(f"# the watch (kubectl) used {self.cpu_seconds():.1f} s of CPU", flush=True)
        self.proc.terminate()
        self.proc.wait()


def wait_all(n, what, done, controller, timeout, watch):
    """Waits until `done(ready, last_handled)` holds for all n
    Kustomizations; the watch is stopped."""
    t0 = time.monotonic()
    try:
        while watch.count(done) < n:
            controller.sample()
            if time.monotonic() - t0 > timeout:
                items = list_kustomizations()
                bad = [k for k in items if not done(ready(k), k.get("status", {}).get("lastHandledReconcileAt", ""))][:3]
                sys.exit(f"timed out waiting for {what}: {watch.count(done)}/{n}; e.g. "
                         + json.dumps([(k["metadata"]["namespace"], k.get("status", {}).get("conditions")) for k in bad]))
            time.sleep(0.05)
    finally:
        watch.stop()


def server_cpu():
    """CPU seconds used so far by a kube-apiserver and an etcd running on
    this machine ({name: seconds}; empty for a remote cluster)."""
    out = {}
    # /proc's process names are cut at 15 characters
    for name in ("kube-apiserver", "etcd", "kube-controller"):
        p = subprocess.run(["pgrep", "-x", name], stdout=subprocess.PIPE, text=True)
        total = 0.0
        for pid in p.stdout.split():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (FileNotFoundError, IndexError):
                pass
        if p.stdout.split():
            out[name] = total
    if out:
        out["machine"] = machine_cpu()
    return out


def machine_cpu():
    """(busy, total) CPU seconds of the whole machine so far, and this
    script's own CPU (its threads; not its kubectl children)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    idle = ticks[3] + ticks[4]
    return (sum(ticks) - idle) / hz, sum(ticks) / hz, time.process_time()


def print_server_cpu(phase, before, after):
    if before:
        spent = ", ".join(f"{k} {after.get(k, 0) - v:.1f} s" for k, v in before.items() if k != "machine")
        print(f"# server CPU during {phase}: {spent}")
    if "machine" in before:
        (b0, t0, s0), (b1, t1, s1) = before["machine"], after["machine"]
        print(f"# machine CPU during {phase}: {b1 - b0:.1f} s busy of {t1 - t0:.1f} s; "
              f"this script {s1 - s0:.1f} s")


def wait_object(ns, name, ok, controller, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        p = kubectl(["get", "configmap", name, "-n", ns, "-o", "json"], check=False)
        if p.returncode == 0 and ok(json.loads(p.stdout)):
            return time.monotonic() - t0
        controller.sample()
        time.sleep(0.05)
    sys.exit(f"timed out waiting for configmap {ns}/{name}")


def install_crds(root):
    crds = os.path.join(root, "crds")
    p = kubectl(["apply", "--server-side", "--force-conflicts", "--field-manager=krmsync-bench", "-f", crds], check=False)
    if p.returncode != 0:
        # API servers older than 1.25 reject the CRDs' validation rules
        # (x-kubernetes-validations) in a server-side apply; a client-side
        # apply drops them, and the rules are then not enforced.
        print("# note: server-side apply of the CRDs failed; applied client-side without validation rules:",
              p.stderr.decode().strip().splitlines()[-1][:200])
        kubectl(["apply", "--validate=false", "-f", crds])
    kubectl(["wait", "--for=condition=Established", "--timeout=60s", "-f", crds])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kustomizations", "-n", type=int, default=1000)
    ap.add_argument("--objects", "-m", type=int, default=10)
    ap.add_argument("--krmsync", default="target/release/krmsync")
    ap.add_argument("--concurrency", type=int, default=None, help="the controller's --concurrency")
    ap.add_argument("--controller-arg", action="append", default=[], help="extra controller argument (repeatable)")
    ap.add_argument("--skip-raw", action="store_true", help="skip the raw server-side-apply baseline")
    ap.add_argument("--created-before-start", action="store_true",
                    help="converge: create every Kustomization first, then start the controller "
                         "(the time leaves out creating them)")
    ap.add_argument("--keep", action="store_true", help="leave the namespaces")
    ap.add_argument("--timeout", type=float, default=1800)
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    binary = os.path.abspath(a.krmsync)
    if not os.access(binary, os.X_OK):
        sys.exit(f"no krmsync binary at {binary} (cargo build --release)")
    if kubectl(["version", "--request-timeout=5s"], check=False).returncode != 0:
        sys.exit("no cluster reachable through kubectl (KUBECONFIG)")
    n, m = a.kustomizations, a.objects
    work = tempfile.mkdtemp(prefix="krmsync-bench-")
    print(f"# {n} Kustomizations x {m} ConfigMaps; controller {binary}; scratch {work}")
    server = json.loads(kubectl(["version", "-o", "json"]).stdout).get("serverVersion", {})
    print(f"# server {server.get('gitVersion', '?')}")

    left = kubectl(["get", "namespace", "-l", LABEL, "-o", "name"]).stdout.split()
    if left:
        sys.exit(f"{len(left)} namespaces of an earlier run are still there "
                 f"(kubectl delete namespace -l {LABEL}, then wait until they are gone)")
    install_crds(root)
    ks_ns = [f"{PREFIX}-{i}" for i in range(n)]
    raw_ns = [f"{PREFIX}-raw-{i}" for i in range(n)]
    namespaces = [{"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": x, "labels": {"krmsync.dev/bench": "true"}}}
                  for x in ks_ns + ([] if a.skip_raw else raw_ns)]
    for part in chunks(namespaces, max(1, len(namespaces) // 500)):
        apply_list(part)

    # A new namespace keeps the cluster's controllers busy for a while
    # (ServiceAccount, token, root CA ConfigMap): wait until that is done so
    # that no phase pays for it.
    t0 = time.monotonic()
    while time.monotonic() - t0 < 180:
        # one line per default ServiceAccount: its namespace, then its
        # token Secrets (API servers before 1.24 create one for each)
        sas = kubectl(["get", "serviceaccounts", "-A", "--field-selector=metadata.name=default",
                       "-o", "jsonpath={range .items[*]}{.metadata.namespace} {.secrets[*].name}{\"\\n\"}{end}"]
                      ).stdout.decode().splitlines()
        ours = [line.split() for line in sas if line.startswith(PREFIX)]
        tokens = any(len(x) > 1 for x in ours)
        if len(ours) >= len(namespaces) and (not tokens or all(len(x) > 1 for x in ours)):
            break
        time.sleep(2)
    else:
        print("# note: the namespaces' default ServiceAccounts (and their tokens) did not all appear "
              "(no controller-manager?)")
    time.sleep(3)

    pool = ThreadPoolExecutor(8)
    figures = []

    def figure(name, value, unit=""):
        figures.append((name, value))
        print(f"{name} {value}{unit}", flush=True)

    # 1. Raw server-side apply of the same objects, 8 kubectl processes.
    if not a.skip_raw:
        objs = [configmap(f"cm-{j}", ns, j) for ns in raw_ns for j in range(m)]
        parts = chunks(objs, 8)
        for phase in ("raw_ssa_seconds", "raw_ssa_noop_seconds"):
            before, cpu_before = apiserver_requests(), server_cpu()
            t0 = time.monotonic()
            list(pool.map(apply_list, parts))
            figure(phase, round(time.monotonic() - t0, 2))
            print_server_cpu(phase, cpu_before, server_cpu())
            print_requests(phase, before, apiserver_requests())

    # 2. Bundles: one tree of M ConfigMaps, stored in every namespace.
    tree = os.path.join(work, "tree")
    os.makedirs(tree)
    names = []
    for j in range(m):
        fname = f"cm-{j}.yaml"
        cm = configmap(f"cm-{j}", None, j)
        del cm["metadata"]["namespace"]
        with open(os.path.join(tree, fname), "w") as f:
            json.dump(cm, f)
        names.append(fname)
    with open(os.path.join(tree, "kustomization.yaml"), "w") as f:
        f.write("resources:\n" + "".join(f"- {x}\n" for x in names))
    tgz = os.path.join(work, "bundle.tar.gz")
    subprocess.run([binary, "bundle", "create", "--output", tgz, tree], check=True, stdout=subprocess.DEVNULL)
    data = base64.b64encode(open(tgz, "rb").read()).decode()
    bundles = [{"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "bench-bundle", "namespace": ns},
                "binaryData": {"bundle.tar.gz": data}} for ns in ks_ns]
    list(pool.map(apply_list, chunks(bundles, 8)))

    # 3. Converge: the controller is up, then every Kustomization is created
    # (--created-before-start: every Kustomization exists, then the
    # controller starts; the time then leaves out creating them).
    extra = list(a.controller_arg)
    if a.concurrency:
        extra += ["--concurrency", str(a.concurrency)]
    kss = [{"apiVersion": f"krmsync.dev/{VERSION}", "kind": "Kustomization",
            "metadata": {"name": "app", "namespace": ns, "labels": {"krmsync.dev/bench": "true"}},
            "spec": {"interval": "1h", "source": {"bundle": {"configMapRef": {"name": "bench-bundle"}}}}}
           for ns in ks_ns]
    if a.created_before_start:
        list(pool.map(apply_list, chunks(kss, 8)))
        watch = Watch()
        while watch.count(lambda r, _: True) < n:
            time.sleep(0.1)
        time.sleep(2)
        before, cpu_before = apiserver_requests(), server_cpu()
        t0 = time.monotonic()
        ctl = Controller(binary, work, extra)
        cpu0 = 0.0
    else:
        ctl = Controller(binary, work, extra)
        time.sleep(2)
        ctl.sample()
        watch = Watch()
        time.sleep(1)
        cpu0 = ctl.cpu_seconds()
        before, cpu_before = apiserver_requests(), server_cpu()
        t0 = time.monotonic()
        list(pool.map(apply_list, chunks(kss, 8)))
    wait_all(n, "all Ready", lambda r, _: r, ctl, a.timeout, watch)
    converge = time.monotonic() - t0
    cpu = ctl.cpu_seconds() - cpu0
    figure("converge_seconds", round(converge, 2))
    raw = dict(figures).get("raw_ssa_seconds")
    if raw:
        figure("converge_ratio", round(converge / raw, 2))
    figure("controller_cpu_seconds", round(cpu, 2))
    print(f"# controller RSS now {ctl.rss_mib()} MiB, peak so far {round(ctl.peak_kib / 1024, 1)} MiB, "
          f"at most {ctl.threads} threads ({ctl.rss_parts()})")
    print_server_cpu("converge", cpu_before, server_cpu())
    print_requests("converge", before, apiserver_requests())

    # 4. No-op resync: restart with every Kustomization asked to reconcile.
    ctl.stop()
    peak = ctl.peak_kib
    stamp = str(int(time.time()))
    patches = [(ns, stamp) for ns in ks_ns]

    def annotate(batch):
        for ns, s in batch:
            kubectl(["annotate", KS, "app", "-n", ns, f"krmsync.dev/reconcile-at={s}", "--overwrite"])
    list(pool.map(annotate, chunks(patches, 8)))
    watch = Watch()
    time.sleep(2)
    before, cpu_before = apiserver_requests(), server_cpu()
    t0 = time.monotonic()
    ctl = Controller(binary, work, extra)
    wait_all(n, "every reconcile request handled",
             lambda r, handled: r and handled == stamp, ctl, a.timeout, watch)
    figure("noop_resync_seconds", round(time.monotonic() - t0, 2))
    print(f"# controller RSS now {ctl.rss_mib()} MiB, peak of this process {round(ctl.peak_kib / 1024, 1)} MiB, "
          f"at most {ctl.threads} threads ({ctl.rss_parts()})")
    print_server_cpu("no-op resync", cpu_before, server_cpu())
    print_requests("no-op resync", before, apiserver_requests())

    # 5. Self-healing: a deleted and an edited ConfigMap.
    ns0 = ks_ns[0]
    old = json.loads(kubectl(["get", "configmap", "cm-0", "-n", ns0, "-o", "json"]).stdout)
    kubectl(["delete", "configmap", "cm-0", "-n", ns0, "--wait=false"])
    t = wait_object(ns0, "cm-0", lambda o: o["metadata"]["uid"] != old["metadata"]["uid"], ctl, 120)
    figure("restore_deleted_seconds", round(t, 2))
    kubectl(["patch", "configmap", "cm-1", "-n", ns0, "--field-manager=someone-else",
             "-p", json.dumps({"data": {"index": "edited"}})])
    t = wait_object(ns0, "cm-1", lambda o: o.get("data", {}).get("index") == "1", ctl, 120)
    figure("restore_edited_seconds", round(t, 2))

    ctl.stop()
    figure("peak_rss_mib", round(max(peak, ctl.peak_kib) / 1024, 1))

    if not a.keep:
        # The controller is stopped: the Kustomizations' finalizers are
        # removed by hand, and everything goes with the namespaces.
        def release(batch):
            for x in batch:
                kubectl(["patch", KS, "app", "-n", x, "--type=merge",
                         "-p", '{"metadata":{"finalizers":null}}'], check=False)
        list(pool.map(release, chunks(ks_ns, 8)))
        kubectl(["delete", "namespace", "-l", LABEL, "--wait=false"], check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
