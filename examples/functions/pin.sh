#!/bin/sh
# Builds the example KRM functions and pins them: copies the binaries to
# app/bin and writes app/catalog.yaml (for `krmsync build
# --trusted-catalog`) and catalog-cr.yaml (the cluster Catalog) with their
# sha256 digests. Run from anywhere; needs cargo and sha256sum.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
cargo build --release --bin krmsync-fn-set-labels --bin krmsync-fn-hello-generator
target=${CARGO_TARGET_DIR:-$here/../../target}/release
mkdir -p app/bin
cp "$target/krmsync-fn-set-labels" "$target/krmsync-fn-hello-generator" app/bin/
os=$(uname -s | tr '[:upper:]' '[:lower:]')
case $(uname -m) in
  x86_64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) arch=$(uname -m) ;;
esac
set_labels=$(sha256sum app/bin/krmsync-fn-set-labels | cut -d' ' -f1)
hello=$(sha256sum app/bin/krmsync-fn-hello-generator | cut -d' ' -f1)
for t in catalog.template.yaml:app/catalog.yaml catalog-cr.template.yaml:catalog-cr.yaml; do
  sed -e "s/@OS@/$os/g" -e "s/@ARCH@/$arch/g" \
      -e "s/@SET_LABELS_SHA256@/$set_labels/g" -e "s/@HELLO_SHA256@/$hello/g" \
      "${t%%:*}" >"${t#*:}"
done
echo "pinned krmsync-fn-set-labels sha256:$set_labels"
echo "pinned krmsync-fn-hello-generator sha256:$hello"
echo "wrote $here/app/catalog.yaml and $here/catalog-cr.yaml"
