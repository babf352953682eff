#!/usr/bin/env bash
# Benchmark: krmsync build vs kubectl kustomize, side by side, plus a scaling
# run of krmsync alone. Not part of the test suite (timings are not tests).
#
#   bench/bench.sh                 # N=1000 comparison + scaling 1k/10k/50k
#   RUNS=9 SIZES="1000 10000" bench/bench.sh
#
# Needs: python3, GNU time (/usr/bin/time, Debian package `time`), kubectl
# (for the comparison), and ../shared/bench (gen_tree.py, compare.py).
set -euo pipefail
cd "$(dirname "$0")/.."
SHARED=${SHARED:-../shared/bench}
RUNS=${RUNS:-5}
SIZES=${SIZES:-"1000 10000 50000"}
WORK=${WORK:-$(mktemp -d /tmp/krmsync-bench.XXXXXX)}

[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install time" >&2; exit 1; }
cargo build --release --locked --quiet
BIN=$PWD/target/release/krmsync

for n in $SIZES; do
    python3 "$SHARED/gen_tree.py" --resources "$n" --seed 1 --out "$WORK/t$n" >/dev/null
done

if command -v kubectl >/dev/null 2>&1; then
    echo "## krmsync build vs kubectl kustomize (N=1000, overlays/prod; A=kubectl, B=krmsync)"
    python3 "$SHARED/compare.py" -n "$RUNS" --a 'kubectl kustomize' --b "$BIN build" \
        "$WORK/t1000/overlays/prod"
else
    echo "kubectl not found: skipping the side-by-side comparison"
fi

echo
echo "## scaling: krmsync build alone (overlays/prod), median of $RUNS runs"
printf '%8s %10s %10s %10s %12s\n' N resources wall_s cpu_s peak_rss_MiB
for n in $SIZES; do
    target="$WORK/t$n/overlays/prod"
    count=$("$BIN" build "$target" | grep -c '^kind:' || true)
    python3 - "$BIN" "$target" "$RUNS" "$n" "$count" <<'PY'
import statistics, subprocess, sys, tempfile
bin_, target, runs, n, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
walls, cpus, rss = [], [], []
for _ in range(runs):
    with tempfile.NamedTemporaryFile("r") as tf:
        subprocess.run(["/usr/bin/time", "-f", "%e %U %S %M", "-o", tf.name, bin_, "build", target],
                       stdout=subprocess.DEVNULL, check=True)
        e, u, s, m = tf.read().split()[-4:]
    walls.append(float(e)); cpus.append(float(u) + float(s)); rss.append(int(m) / 1024)
print(f"{n:>8} {count:>10} {statistics.median(walls):10.3f} {statistics.median(cpus):10.3f} {statistics.median(rss):12.1f}")
PY
done
echo "trees left in $WORK"
