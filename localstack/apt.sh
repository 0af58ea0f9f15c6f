# apt.sh — sourced by the scripts that install a Debian package a test
# needs when it is missing (chromium.sh, qemu.sh).
#
# apt_install PACKAGE COMMAND HINT: COMMAND on PATH, or PACKAGE installed
# with apt-get when this runs as root (CI), or a message naming HINT and
# exit status 1.
apt_install() {
  local package=$1 command=$2 hint=$3
  command -v "$command" >/dev/null 2>&1 && return 0
  if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "$command is missing: install it (Debian/Ubuntu: sudo apt-get install $package)$hint" >&2
    return 1
  fi
  echo "installing $package with apt-get ..."
  export DEBIAN_FRONTEND=noninteractive
  # force-unsafe-io: dpkg without an fsync per file (a fresh CI machine; a
  # crash mid-install leaves a package to install again, nothing else).
  local install=(apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io "$package")
  # The package lists may be missing on a fresh machine: fetched once then.
  if ! "${install[@]}"; then
    apt-get update -q && "${install[@]}"
  fi
  command -v "$command" >/dev/null 2>&1
}
