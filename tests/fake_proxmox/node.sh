#!/usr/bin/env bash
# A fake Proxmox VE node for tests: sshd on 127.0.0.1 (public key only, keys generated per run) in a
# private mount and PID namespace, where /usr/sbin/pct is the stand-in tests/fake_proxmox/pct and each
# container VMID is a real LXC container (lxc-start; pct enters it with lxc-attach, as Proxmox's does) whose
# root file system is an overlay of a shared Debian rootfs (rootfs.sh) with its writes on a tmpfs.
# The host's /usr/sbin, /run and ~/.ssh are never touched: the mounts exist only in the namespace,
# and everything in it dies with it.
#
#   node.sh start STATE ROOTFS VMID...  start, wait until sshd answers, print the node as JSON
#   node.sh stop STATE                  stop (kills the namespace) and remove STATE; no-op if absent
#   node.sh status STATE                print running or stopped (exit 0 / 1)
#
# STATE is a new directory for this node: keys, sshd_config, logs, and known_hosts, the line a client
# needs in ~/.ssh/known_hosts (the only file paramiko and proxmox_pct_remote read: give the client a
# temporary HOME). The node stops itself after FAKE_PROXMOX_LIFETIME seconds (default 1800).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/fake_proxmox/names.sh
. "$here/names.sh"
LIFETIME=${FAKE_PROXMOX_LIFETIME:-1800}
PYTHON=${FAKE_PROXMOX_PYTHON:-python3}

die() { echo "node.sh: $*" >&2; exit 1; }

# Paths end up in sshd_config, overlay options and a generated script: keep them plain.
check_path() {
  [[ "$1" =~ ^/[A-Za-z0-9._/+-]+$ ]] || die "$1: use a path of letters, digits and ._/+- only"
}

free_port() {
  "$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

alive() { [ -f "$1/node.pid" ] && kill -0 "$(cat "$1/node.pid")" 2>/dev/null; }

# STATE holds this file from the start: stop and start remove only such directories.
MARKER=.fake-proxmox-node
is_state() { [ -f "$1/$MARKER" ]; }

write_sshd_config() {
  local state=$1 port=$2
  cat >"$state/sshd_config" <<EOF
# Fake Proxmox node (tests/fake_proxmox/node.sh): loopback, keys only, nothing else.
ListenAddress 127.0.0.1
Port $port
HostKey $state/host_key
PidFile none
AuthorizedKeysFile $state/authorized_keys
AuthenticationMethods publickey
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PermitUserEnvironment no
PermitUserRC no
MaxStartups 50:30:100
LogLevel INFO
EOF
}

start() {
  [ $# -ge 3 ] || die "usage: node.sh start STATE ROOTFS VMID..."
  [ "$(id -u)" = 0 ] || die "the fake node needs root (mount namespaces, chroot)"
  local state rootfs vmid port
  state=$(realpath -m "$1")
  rootfs=$(realpath "$2")
  shift 2
  check_path "$state"
  check_path "$rootfs"
  check_path "$here"
  [ -x "$rootfs/usr/bin/python3" ] || die "$rootfs: not a container rootfs with python3 (build it with rootfs.sh)"
  for vmid in "$@"; do
    [[ "$vmid" =~ ^[1-9][0-9]{2,8}$ ]] || die "$vmid: a VMID is a number from 100"
  done
  [ -x /usr/sbin/sshd ] || die "/usr/sbin/sshd is missing: apt-get install openssh-server (make molecule does this as root)"
  if ! command -v lxc-start >/dev/null || ! command -v lxc-attach >/dev/null; then
    die "lxc-start and lxc-attach are missing: apt-get install lxc (make molecule does this as root)"
  fi
  alive "$state" && die "$state: a node is already running there (node.sh stop $state)"
  if [ -e "$state" ]; then
    is_state "$state" || die "$state exists and is not a fake node's state: give a new directory"
    rm -rf --one-file-system "$state"
  fi
  mkdir -p "$state"
  chmod 700 "$state"
  touch "$state/$MARKER"
  mkdir "$state/sbin" "$state/ct" "$state/lxc"

  ssh-keygen -q -t ed25519 -N '' -C fake-proxmox-host -f "$state/host_key"
  ssh-keygen -q -t ed25519 -N '' -C fake-proxmox-client -f "$state/client_key"
  cp "$state/client_key.pub" "$state/authorized_keys"
  port=$(free_port)
  printf '[127.0.0.1]:%s %s\n' "$port" "$(cut -d' ' -f1,2 "$state/host_key.pub")" >"$state/known_hosts"
  write_sshd_config "$state" "$port"
  printf '#!/bin/sh\nexec %s/pct --state %s "$@"\n' "$here" "$state" >"$state/sbin/pct"
  chmod 755 "$state/sbin/pct"
  # Sessions run the user's login shell, and bash sources ~/.bashrc when sshd starts it: the node's
  # /etc/passwd gives root /bin/sh, so this machine's shell set-up (pyenv ...) stays out of the node.
  awk -F: -v OFS=: '$1 == "root" { $7 = "/bin/sh" } 1' /etc/passwd >"$state/passwd"
  echo "$port" >"$state/port"

  # setsid: a process group of its own, for stop; timeout: the node's lifetime; unshare: the
  # namespaces (--kill-child: when unshare dies, the namespace's init and so all in it die).
  setsid timeout --kill-after=10 "$LIFETIME" \
    unshare --mount --propagation private --pid --fork --kill-child --mount-proc \
    "$BASH" "$here/node.sh" _inside "$state" "$rootfs" "$@" </dev/null >"$state/node.log" 2>&1 &
  echo $! >"$state/node.pid"

  local waited=0
  until [ -e "$state/ready" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    alive "$state" || { cat "$state/node.log" >&2; remove_cgroups "$state"; die "the node exited while starting (log above)"; }
    [ $waited -lt 300 ] || { stop "$state"; die "sshd did not answer on 127.0.0.1:$port within 30 s"; }
    sleep 0.1
    waited=$((waited + 1))
  done

  local containers="" sep=""
  for vmid in "$@"; do
    containers+="$sep\"$vmid\""
    sep=", "
  done
  cat <<EOF
{"state": "$state", "host": "127.0.0.1", "port": $port, "user": "root",
 "private_key": "$state/client_key", "known_hosts": "$state/known_hosts",
 "pid": $(cat "$state/node.pid"), "lifetime": $LIFETIME, "vmids": [$containers]}
EOF
}

# PID 1 of the node's namespaces: mount the containers' root file systems and the pct stand-in, start the
# containers, then run sshd. On TERM (node.sh stop) the containers are stopped first: LXC removes their cgroups.
inside() {
  local state=$1 rootfs=$2 vmid ct name
  shift 2
  mount -t tmpfs -o mode=0755,size=4g fake-proxmox-ct "$state/ct"
  mount -t overlay fake-proxmox-sbin -o "lowerdir=$state/sbin:/usr/sbin" /usr/sbin
  mount --bind "$state/passwd" /etc/passwd
  mount -t tmpfs -o mode=0755 fake-proxmox-run /run  # LXC's locks, sshd's privilege separation folder
  mkdir -m 0755 /run/sshd
  for vmid in "$@"; do
    ct=$state/ct/$vmid
    name=$(container_name "$state" "$vmid")
    mkdir -p "$ct/upper" "$ct/work" "$ct/rootfs" "$state/lxc/$name"
    mount -t overlay "fake-proxmox-$vmid" -o "lowerdir=$rootfs,upperdir=$ct/upper,workdir=$ct/work" "$ct/rootfs"
    # minbase has no init: PID 1 sleeps; no network device (nothing in the tests reaches out from a container)
    printf '%s\n' "lxc.uts.name = ct$vmid" "lxc.rootfs.path = dir:$ct/rootfs" "lxc.net.0.type = empty" \
      "lxc.apparmor.profile = unconfined" "lxc.init.cmd = /bin/sleep infinity" "lxc.mount.auto = proc:mixed sys:ro" \
      "lxc.autodev = 1" >"$state/lxc/$name/config"
    if ! lxc-start -n "$name" -P "$state/lxc" -d -l INFO -o "$state/lxc/$name.log"; then
      tail -n 20 "$state/lxc/$name.log"
      echo "node.sh: lxc-start of container $vmid failed (its log above): LXC needs root, cgroups and unshare" >&2
      stop_containers "$state"
      exit 1
    fi
  done
  /usr/sbin/sshd -D -e -f "$state/sshd_config" &
  local sshd=$!
  trap 'stop_containers "$state"; kill -TERM $sshd' TERM INT
  touch "$state/ready"
  wait $sshd
}

stop_containers() {
  local config
  for config in "$1"/lxc/*/config; do
    if [ -f "$config" ]; then
      lxc-stop -n "$(basename "$(dirname "$config")")" -P "$1/lxc" -k 2>/dev/null || true
    fi
  done
}

# What a killed node's containers leave: their empty cgroups, named after this node's containers only.
remove_cgroups() {
  local port dir
  port=$(cat "$1/port" 2>/dev/null) || return 0
  for dir in /sys/fs/cgroup/lxc.*."fakepve$port"-* /sys/fs/cgroup/*/lxc.*."fakepve$port"-*; do
    [ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}

stop() {
  [ $# -eq 1 ] || die "usage: node.sh stop STATE"
  local state pid waited=0
  state=$(realpath -m "$1")
  [ -d "$state" ] || return 0
  is_state "$state" || die "$state is not a fake node's state (no $MARKER): not removing it"
  if alive "$state"; then
    pid=$(cat "$state/node.pid")
    kill -TERM -- "-$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && [ $waited -lt 100 ]; do
      sleep 0.1
      waited=$((waited + 1))
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  remove_cgroups "$state"
  rm -rf --one-file-system "$state"
}

case "${1:-}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  status) shift; if alive "$(realpath -m "${1:?usage: node.sh status STATE}")"; then echo running; else echo stopped; exit 1; fi ;;
  _inside) shift; inside "$@" ;;
  *) die "usage: node.sh start STATE ROOTFS VMID... | stop STATE | status STATE" ;;
esac
