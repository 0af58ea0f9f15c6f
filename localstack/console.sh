#!/usr/bin/env bash
# The console's bundle (docs/console.md): its own files
# (functions/console/web: the page, its script modules, its style sheet)
# and the libraries it is pinned to (functions/console/web/package.json:
# marked, DOMPurify), copied as they are: no bundler, no build of the
# code. The console function serves the bundle from beside its bootstrap
# (make build: dist/console/web), the local cloud from .local/console
# (shared/api/consoleapi.Dir).
#
#   localstack/console.sh [DIR]      # or: make console; DIR: .local/console
#
# The npm packages (and axe-core, the browser tests' accessibility
# checker, in .local/console-npm/node_modules) are installed once per
# machine and lock file in the shared cache (localstack/cache.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=localstack/cache.sh
. localstack/cache.sh

DIR="${1:-.local/console}"
WEB=functions/console/web
NPM_DIR=.local/console-npm

# install_npm DIR: the lock file's packages in DIR/node_modules, from the
# registry (npm's own cache first), no install scripts.
install_npm() {
  local dir=$1
  mkdir -p "$dir"
  cp "$WEB/package.json" "$WEB/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error) || {
    echo "npm could not install the console's packages (functions/console/web/package-lock.json)" >&2
    exit 1
  }
}

key="$({ cat "$WEB/package.json" "$WEB/package-lock.json"; node --version; } | sha256sum | cut -c1-16)"
cached "$NPM_DIR" console-npm "$key" install_npm

# The bundle is made again only when its sources changed (make test runs
# this twice, the second time beside tests that read the bundle), and then
# beside it and moved into place.
sources=$(find "$WEB" -maxdepth 1 -type f \( -name '*.html' -o -name '*.js' -o -name '*.css' \) | sort)
# shellcheck disable=SC2086 # a list of paths without spaces
bundle_key="$({ echo "$key"; cat $sources; } | sha256sum | cut -c1-16)"
if [[ "$(cat "$DIR/.key" 2>/dev/null)" == "$bundle_key" ]]; then
  exit 0
fi
tmp="$DIR.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp/vendor"
# shellcheck disable=SC2086
cp $sources "$tmp/"
cp "$NPM_DIR/node_modules/marked/lib/marked.esm.js" "$NPM_DIR/node_modules/dompurify/dist/purify.es.mjs" "$tmp/vendor/"
echo "$bundle_key" >"$tmp/.key"
rm -rf "$DIR"
mv "$tmp" "$DIR"
