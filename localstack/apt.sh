# apt.sh — sourced by the scripts that install the Debian packages a test
# needs when they are missing (debs.sh, chromium.sh, qemu.sh).
#
# apt_install HINT PACKAGE=COMMAND...: every COMMAND on PATH, or the
# PACKAGEs of those that are not installed with one apt-get run when this
# runs as root (CI), or a message naming them and HINT, and exit status 1.
apt_install() {
  local hint=$1 pair missing=()
  shift
  for pair in "$@"; do
    command -v "${pair#*=}" >/dev/null 2>&1 || missing+=("${pair%%=*}")
  done
  ((${#missing[@]})) || return 0
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "missing: install ${missing[*]} (Debian/Ubuntu: sudo apt-get install ${missing[*]})$hint" >&2
    return 1
  fi
  echo "installing ${missing[*]} with apt-get ..."
  export DEBIAN_FRONTEND=noninteractive
  # force-unsafe-io: dpkg without an fsync per file (a fresh CI machine; a
  # crash mid-install leaves a package to install again, nothing else).
  local install=(apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "${missing[@]}")
  # man-db's trigger re-indexes every manual page after an install (about
  # 3 s of CPU in a CI run, for pages no test reads): its auto-update flag
  # is lifted for this install only, and put back.
  local mandb=/var/lib/man-db/auto-update restore=0
  if [[ -e $mandb ]]; then
    mv "$mandb" "$mandb.conclave" && restore=1
  fi
  local rc=0
  # The package lists may be missing on a fresh machine: fetched once then.
  if ! "${install[@]}"; then
    { apt-get update -q && "${install[@]}"; } || rc=1
  fi
  ((restore)) && mv "$mandb.conclave" "$mandb"
  ((rc == 0)) || return 1
  for pair in "$@"; do
    command -v "${pair#*=}" >/dev/null 2>&1 || return 1
  done
}
