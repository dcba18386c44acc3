#!/usr/bin/env bash
# Make sure the system packages a make target needs are there: scripts/need_packages.sh TARGET COMMAND=PACKAGE...
# (a path or a command on PATH, then the Debian package that provides it). Missing ones are installed with apt-get
# as root; anywhere else the target fails naming them.
set -euo pipefail
target=$1
shift
missing=()
for pair in "$@"; do
  command=${pair%%=*}
  if [ "${command#/}" != "$command" ]; then [ -x "$command" ] && continue; else command -v "$command" >/dev/null && continue; fi
  missing+=("${pair#*=}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "make $target: installing ${missing[*]} with apt-get"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "make $target needs ${missing[*]}: install it as root (apt-get install ${missing[*]})" >&2
  exit 1
fi
