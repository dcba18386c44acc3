# shellcheck shell=bash
# Sourced by node.sh and pct: the LXC name of the fake node's container VMID. Unique per node (its sshd port), so
# that two nodes on one machine, and Proxmox's own containers, never share a name (nor the cgroups LXC names after it).
container_name() {  # STATE VMID
  echo "fakepve$(cat "$1/port")-$2"
}
