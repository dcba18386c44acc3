#!/usr/bin/env bash
# Install the Debian packages a make target needs: apt-get as root, else fail naming them.
# scripts/apt_install.sh "WHAT NEEDS THEM" PACKAGE...   (no package: nothing to do)
set -euo pipefail
what=$1
shift
[ "$#" -gt 0 ] || exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  echo "make: installing $* with apt-get"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
else
  echo "make: $what need $*: install it (apt-get install $*)" >&2
  exit 1
fi
