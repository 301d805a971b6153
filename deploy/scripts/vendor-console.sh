#!/usr/bin/env bash
# Refresh the console's vendored JavaScript and CSS from the npm registry (`make vendor-console`).
# The gateway serves these files itself: nothing is fetched from the internet at run time.
# Each entry: npm package, version, file inside its tarball, name under gateway/console/static/vendor/.
# gateway/console/static/vendor/vendor.json records package, version, licence and sha256 of each file.
set -euo pipefail

cd "$(dirname "$0")/../.."
DEST=gateway/console/static/vendor
FILES=(
  "htmx.org 2.0.4 package/dist/htmx.min.js htmx.min.js"
  "uplot 1.6.32 package/dist/uPlot.iife.min.js uPlot.iife.min.js"
  "uplot 1.6.32 package/dist/uPlot.min.css uPlot.min.css"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$DEST"
entries=()
for spec in "${FILES[@]}"; do
  read -r pkg ver inner name <<<"$spec"
  tgz="$work/$pkg-$ver.tgz"
  if [ ! -f "$tgz" ]; then
    (cd "$work" && npm pack --silent "$pkg@$ver" >/dev/null && mv "$work"/*"$ver".tgz "$tgz" 2>/dev/null || true)
    mkdir -p "$work/$pkg-$ver" && tar xzf "$tgz" -C "$work/$pkg-$ver"
    cp "$work/$pkg-$ver/package/LICENSE" "$DEST/LICENSE.$pkg"
  fi
  cp "$work/$pkg-$ver/$inner" "$DEST/$name"
  licence=$(cd "$work/$pkg-$ver/package" && node -p 'require("./package.json").license')
  sha=$(sha256sum "$DEST/$name" | cut -d' ' -f1)
  entries+=("{\"file\": \"$name\", \"package\": \"$pkg\", \"version\": \"$ver\", \"licence\": \"$licence\", \"licence_file\": \"LICENSE.$pkg\", \"sha256\": \"$sha\"}")
done
{
  echo "["
  for i in "${!entries[@]}"; do
    sep=","; [ "$i" -eq $((${#entries[@]} - 1)) ] && sep=""
    echo "  ${entries[$i]}$sep"
  done
  echo "]"
} >"$DEST/vendor.json"
echo "vendored into $DEST:"; cat "$DEST/vendor.json"
