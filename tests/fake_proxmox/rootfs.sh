#!/usr/bin/env bash
# Build (once) and print the path of a Debian container rootfs for the fake Proxmox node:
# debootstrap --variant=minbase with python3 and python3-venv, about 270 MB, ~1-2 min.
# Usage: tests/fake_proxmox/rootfs.sh CACHE_DIR   (prints CACHE_DIR/rootfs-KEY)
# The key hashes this script, so editing the suite or packages below builds a new rootfs and
# removes the old ones. Containers never write here: the node mounts an overlay over it.
# Environment: FAKE_PROXMOX_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

SUITE=bookworm
PACKAGES=python3,python3-venv
MIRROR=${FAKE_PROXMOX_MIRROR:-http://deb.debian.org/debian}
BUILD_TIMEOUT=900

die() { echo "rootfs.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: rootfs.sh CACHE_DIR"
[ "$(id -u)" = 0 ] || die "debootstrap and the fake node need root (mount namespaces, chroot)"
command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap (make molecule does this as root)"
command -v unshare >/dev/null || die "unshare (util-linux) is missing"

cache=$(mkdir -p "$1" && cd "$1" && pwd)
key=$(sha256sum "$0" | cut -c1-16)
rootfs=$cache/rootfs-$key
# A finished build appears by rename, so the directory existing means it is complete.
if [ -d "$rootfs" ]; then
  echo "$rootfs"
  exit 0
fi

exec 9>"$cache/.rootfs.lock"
flock 9
if [ -d "$rootfs" ]; then  # built by another run while this one waited
  echo "$rootfs"
  exit 0
fi

tmp=$(mktemp -d "$cache/.build-XXXXXX")
trap 'rm -rf --one-file-system "$tmp"' EXIT
echo "rootfs.sh: debootstrap $SUITE ($PACKAGES) from $MIRROR into $rootfs" >&2
start=$SECONDS
# A private mount namespace: the /proc and /sys debootstrap mounts go away with it, even if it
# is killed; nothing leaks onto the host's mount table.
if ! timeout --kill-after=10 "$BUILD_TIMEOUT" unshare --mount --propagation private \
    debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$tmp/rootfs" "$MIRROR" >"$tmp/debootstrap.log" 2>&1; then
  tail -n 30 "$tmp/debootstrap.log" >&2
  die "debootstrap failed (log above); the mirror must be reachable (FAKE_PROXMOX_MIRROR)"
fi
rm -rf "$tmp/rootfs/var/cache/apt/archives/"*.deb "$tmp/rootfs/var/lib/apt/lists/"*_Packages
chroot "$tmp/rootfs" python3 -c 'import venv, ensurepip' || die "the rootfs has no working python3 with venv and ensurepip"
for old in "$cache"/rootfs-*; do
  [ -d "$old" ] && [ "$old" != "$rootfs" ] && rm -rf --one-file-system "$old"
done
mv "$tmp/rootfs" "$rootfs"
echo "rootfs.sh: built in $((SECONDS - start)) s" >&2
echo "$rootfs"
