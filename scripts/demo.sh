#!/usr/bin/env bash
# The main job on an embedded default: build two broken stand-in CUDA venvs (the incident: contaminated by
# cu13 wheels, then gutted by their uninstall) and repair them with `ansible-playbook playbooks/repair.yml -l demo`.
# Needs no GPU and no Proxmox; `make demo` runs it after `make setup`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools_python="$PWD/build/tools/bin/python"
demo="$PWD/build/demo"
cache="${CUDA_VENV_STANDIN_CACHE:-$PWD/build/standin-cache}"
rm -rf "$demo"
mkdir -p "$demo"

echo "== building stand-in venvs (tiny real wheels, gcc-compiled libraries, real pip)"
for scenario in contaminated gutted; do
  "$tools_python" -m tests.standin scenario "$scenario" "$demo/$scenario" --cache "$cache" >"$demo/$scenario.json"
done

"$tools_python" - "$demo" "$tools_python" <<'PY'
import json, sys
demo, python = sys.argv[1], sys.argv[2]
hosts = {}
wheelhouses = []
for name in ("contaminated", "gutted"):
    info = json.load(open("%s/%s.json" % (demo, name)))
    hosts["incident-" + name] = {"cuda_venv_path": info["venv"]}
    for wheelhouse in (info["wheelhouse"], info["extra_wheelhouse"]):
        if wheelhouse and wheelhouse not in wheelhouses:
            wheelhouses.append(wheelhouse)
inventory = {"all": {"children": {"demo": {"hosts": hosts, "vars": {
    "ansible_connection": "local", "ansible_python_interpreter": python,
    "cuda_venv_find_links": wheelhouses, "cuda_venv_no_index": True, "cuda_venv_backend": "pip"}}}}}
json.dump(inventory, open("%s/inventory.json" % demo, "w"), indent=2)
PY

echo "== ansible-playbook playbooks/repair.yml -l demo"
ANSIBLE_CONFIG="$PWD/ansible.cfg" build/tools/bin/ansible-playbook -i "$demo/inventory.json" playbooks/repair.yml -l demo
