#!/usr/bin/env bash
# Fetch MathJax from the npm registry into $2/static/vendor/mathjax so that the book serves
# it itself (no CDN). npm checks the package's registry integrity hash on download.
set -euo pipefail
version="$1"; dest="$2"
work="$dest/npm"
rm -rf "$work" && mkdir -p "$work"
(cd "$work" && npm pack --silent "mathjax@$version" >/dev/null && tar xzf "mathjax-$version.tgz")
out="$dest/static/vendor/mathjax"
rm -rf "$out" && mkdir -p "$out"
es5="$work/package/es5"
cp "$es5/tex-chtml.js" "$out/"
for part in a11y adaptors input output sre ui; do cp -r "$es5/$part" "$out/"; done
rm -rf "$work"
echo "MathJax $version ready in $out"
