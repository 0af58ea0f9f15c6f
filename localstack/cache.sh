# cache.sh — sourced by cloud.sh and contract.sh: what is installed from a
# pinned input (moto's virtualenv, the test tools' virtualenv, DynamoDB
# Local's jars) is built once per machine and input, in a directory every
# clone shares, like Go's module cache:
#
#   ${CONCLAVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave}/NAME-KEY
#
# and the tree's path (.local/venv, …) is a symbolic link to it. Why: a fresh
# clone (CI, a second worktree) reinstalled both virtualenvs and ran Maven,
# about 33 s of CPU (pip 29, Maven 5) on the path to a running local cloud,
# although pip's and Maven's caches were warm. The key is a hash of
# everything the install reads (the requirements or the pom, and the Python
# that runs the virtualenv), so a changed pin builds a new directory and
# never changes one a running cloud uses. CONCLAVE_CACHE=off installs into
# the tree, as before; delete the directory to reclaim its space.

# cached LINK NAME KEY BUILD...: LINK is a symbolic link to the shared
# NAME-KEY, which `BUILD... DIR` builds once. Builds are serialised by a
# lock (two clones starting at once build it once); a directory whose build
# did not finish (no .complete) is built again from nothing. Callers use
# CONCLAVE_CACHE=off for a path the user chose (CONCLAVE_VENV, …): never
# replaced by a link.
cached() {
  local link=$1 name=$2 key=$3
  shift 3
  local root="${CONCLAVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave}"
  if [[ "$root" == off ]] || ! mkdir -p "$root" 2>/dev/null || [[ ! -w "$root" ]]; then
    # No shared cache: build at LINK itself, once per key (over what is
    # there: LINK may be a path the user chose).
    if [[ -L "$link" ]]; then rm -f "$link"; fi
    if [[ "$(cat "$link/.complete" 2>/dev/null)" != "$key" ]]; then
      "$@" "$link"
      echo "$key" >"$link/.complete"
    fi
    return 0
  fi
  local dir="$root/$name-$key"
  if [[ ! -f "$dir/.complete" ]]; then
    (
      flock 9
      if [[ ! -f "$dir/.complete" ]]; then
        rm -rf "$dir"
        "$@" "$dir"
        echo "$key" >"$dir/.complete"
      fi
    ) 9>"$dir.lock"
  fi
  if [[ "$(readlink "$link" 2>/dev/null)" != "$dir" ]]; then
    rm -rf "$link" # a link to another key, or an install from before the cache
    mkdir -p "$(dirname "$link")"
    ln -sfn "$dir" "$link"
  fi
}

# python_key FILE...: a key for a virtualenv of $PYTHON with FILE's pins.
python_key() {
  { cat "$@"; "${PYTHON:-python3}" -c 'import sys; print(sys.executable, sys.version)'; } | sha256sum | cut -c1-16
}

# UV_VERSION: the uv that installs the virtualenvs (make_venv).
UV_VERSION=0.13.8

# uv_bin prints the path of uv, installed once per machine into the shared
# cache (in .local/uv-$UV_VERSION with CONCLAVE_CACHE=off), or fails.
# Why uv: on a fresh machine pip took 113 s to install the test tools
# (schemathesis, cfn-lint, the MCP and A2A SDKs: resolving and downloading
# one package after another) and held back every step that waits on them;
# uv installs the same pins in about 3 s. It is a pinned PyPI package
# itself, so it needs nothing pip does not.
uv_bin() {
  local root="${CONCLAVE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/conclave}"
  if [[ "$root" == off ]] || ! mkdir -p "$root" 2>/dev/null || [[ ! -w "$root" ]]; then
    root=.local
    mkdir -p "$root"
  fi
  local dir="$root/uv-$UV_VERSION"
  if [[ ! -f "$dir/.complete" ]]; then
    (
      flock 9
      if [[ ! -f "$dir/.complete" ]]; then
        rm -rf "$dir"
        "${PYTHON:-python3}" -m venv "$dir" &&
          "$dir/bin/pip" install --quiet --disable-pip-version-check --no-compile "uv==$UV_VERSION" &&
          touch "$dir/.complete"
      fi
    ) 9>"$dir.lock" >&2 || return 1
  fi
  echo "$dir/bin/uv"
}

# make_venv REQUIREMENTS DIR: a virtualenv of $PYTHON in DIR with the pins,
# installed by uv (pip's index settings passed on: the certificates of the
# machine's trust store, PIP_INDEX_URL and PIP_FIND_LINKS), or by pip when
# uv cannot be installed. Neither byte-compiles: compiling all of moto's
# services took 40 % of pip's install CPU; Python compiles the few modules
# that are imported.
make_venv() {
  local uv
  if uv=$(uv_bin); then
    local env=(UV_NATIVE_TLS=1)
    [[ -z "${PIP_INDEX_URL:-}" ]] || env+=("UV_INDEX_URL=$PIP_INDEX_URL")
    [[ -z "${PIP_FIND_LINKS:-}" ]] || env+=("UV_FIND_LINKS=$PIP_FIND_LINKS")
    env "${env[@]}" "$uv" venv --quiet --python "${PYTHON:-python3}" "$2" &&
      env "${env[@]}" "$uv" pip install --quiet --python "$2/bin/python" -r "$1"
    return
  fi
  echo "uv $UV_VERSION could not be installed: installing with pip" >&2
  "${PYTHON:-python3}" -m venv "$2"
  "$2/bin/pip" install --quiet --disable-pip-version-check --no-compile -r "$1"
}
