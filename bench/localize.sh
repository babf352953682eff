#!/usr/bin/env bash
# Time `krmsync localize` of a kustomization with N remote git roots, all
# served from local bare repositories through --mirror (no network).
#
#   bench/localize.sh [N] [RUNS]        (defaults: 20 roots, 5 runs)
#   KRMSYNC=path/to/krmsync bench/localize.sh
#
# Prints the wall time of each run and the median. Each remote root is
# https://github.com/bench/repoI//base?ref=v1 (a tag), mirrored from
# file://<tmp>/mirrors/repoI; each base holds a ConfigMap and a Deployment.
set -euo pipefail
N=${1:-20}
RUNS=${2:-5}
KRMSYNC=${KRMSYNC:-"$(dirname "$0")/../target/release/krmsync"}
if [ ! -x "$KRMSYNC" ]; then
    echo "no krmsync binary at $KRMSYNC (cargo build --release, or set KRMSYNC)" >&2
    exit 1
fi
command -v git >/dev/null || { echo "git is needed to create the mirrors" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
mkdir -p "$tmp/mirrors" "$tmp/app"
for i in $(seq 1 "$N"); do
    w="$tmp/work$i"
    mkdir -p "$w/base"
    cat > "$w/base/kustomization.yaml" <<YAML
namePrefix: r$i-
resources: [cm.yaml, deploy.yaml]
YAML
    cat > "$w/base/cm.yaml" <<YAML
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  repo: "$i"
YAML
    cat > "$w/base/deploy.yaml" <<YAML
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  selector: {matchLabels: {app: web$i}}
  template:
    metadata: {labels: {app: web$i}}
    spec: {containers: [{name: web, image: nginx:1.27}]}
YAML
    git -C "$w" init -q -b main
    git -C "$w" add -A
    git -C "$w" commit -q -m base
    git -C "$w" tag v1
    git clone -q --bare "$w" "$tmp/mirrors/repo$i"
    echo "- https://github.com/bench/repo$i//base?ref=v1" >> "$tmp/app/resources.txt"
done
{ echo "resources:"; cat "$tmp/app/resources.txt"; } > "$tmp/app/kustomization.yaml"

times=()
for r in $(seq 1 "$RUNS"); do
    rm -rf "$tmp/out"
    start=$(date +%s.%N)
    "$KRMSYNC" localize "$tmp/app" "$tmp/out" --quiet \
        --mirror "https://github.com/bench/=file://$tmp/mirrors/"
    end=$(date +%s.%N)
    t=$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')
    times+=("$t")
    printf 'run %d: %.3f s\n' "$r" "$t"
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
objects=$("$KRMSYNC" build "$tmp/out" | grep -c '^kind:')
printf 'localize: %d remote roots from file:// mirrors, %d objects, verified: median %.3f s over %d runs\n' \
    "$N" "$objects" "$median" "$RUNS"
