#!/usr/bin/env bash
# The main job on an embedded default: build three broken stand-in CUDA venvs, the incident's states (contaminated by
# cu13 wheels, gutted by their uninstall, a partial restore), and repair them with
# `ansible-playbook playbooks/repair.yml -l demo`: diagnosis, plan, staged batches with the probe after each,
# verification (the benchmark is skipped without a GPU, with the reason), recap; and an HTML report of it all.
# Needs no GPU, no Proxmox and no network; `make demo` runs it after `make setup`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools_python="$PWD/build/tools/bin/python"
demo="$PWD/build/demo"
cache="${CUDA_VENV_STANDIN_CACHE:-$PWD/build/standin-cache}"
rm -rf "$demo"
mkdir -p "$demo/tools-wheelhouse"

echo "== building stand-in venvs (tiny real wheels, gcc-compiled libraries, real pip)"
for scenario in contaminated gutted partial-restore; do
  "$tools_python" -m tests.standin scenario "$scenario" "$demo/$scenario" --cache "$cache" >"$demo/$scenario.json"
  echo "   $scenario: $demo/$scenario/venv"
done

# The role gives the modules a tools venv of their own on each node, filled from a wheelhouse. Offline here, that
# wheelhouse gets a wheel of the packaging this tools venv already has, and each demo host its own tools venv.
"$tools_python" - "$demo" "$tools_python" <<'PY'
import base64, hashlib, json, os, sys, zipfile
from importlib import metadata

demo, python = sys.argv[1], sys.argv[2]


def wheel_from_installed(name, dest):
    """A py3-none-any wheel of the installed pure-Python distribution `name`."""
    dist = metadata.distribution(name)
    files = [f for f in dist.files if "__pycache__" not in f.parts and not str(f).startswith("..")]
    dist_info = next(f.parts[0] for f in files if f.parts[0].endswith(".dist-info"))
    records = []
    path = os.path.join(dest, dist_info[:-len(".dist-info")] + "-py3-none-any.whl")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as wheel:
        for file in sorted(files, key=str):
            if file.parts[0] == dist_info and file.name in ("RECORD", "INSTALLER", "REQUESTED", "direct_url.json"):
                continue
            data = file.read_binary()
            wheel.writestr(str(file), data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append("%s,sha256=%s,%d" % (file, digest, len(data)))
        records.append(dist_info + "/RECORD,,")
        wheel.writestr(dist_info + "/RECORD", "\n".join(records) + "\n")


wheel_from_installed("packaging", os.path.join(demo, "tools-wheelhouse"))
hosts = {}
for name in ("contaminated", "gutted", "partial-restore"):
    with open(os.path.join(demo, name + ".json"), encoding="utf-8") as handle:
        info = json.load(handle)
    hosts["incident-" + name] = {
        "venv_repair_path": info["venv"],
        "venv_repair_find_links": [w for w in (info["wheelhouse"], info["extra_wheelhouse"]) if w],
        "venv_repair_tools_venv": os.path.join(demo, "tools-incident-" + name),
    }
inventory = {"all": {"children": {"demo": {"hosts": hosts, "vars": {
    "ansible_connection": "local",
    "ansible_python_interpreter": python,
    "venv_repair_no_index": True,
    "venv_repair_backend": "pip",
    "venv_repair_tools_find_links": [os.path.join(demo, "tools-wheelhouse")],
}}}}}
with open(os.path.join(demo, "inventory.json"), "w", encoding="utf-8") as handle:
    json.dump(inventory, handle, indent=2)
PY

echo "== ansible-playbook playbooks/repair.yml -l demo"
# pip and uv read no configuration of this machine: the wheelhouses are all the demo needs.
while read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(PIP|UV)_' || true)
rc=0
PIP_CONFIG_FILE=/dev/null ANSIBLE_CONFIG="$PWD/ansible.cfg" \
  build/tools/bin/ansible-playbook -i "$demo/inventory.json" playbooks/repair.yml -l demo \
  -e cuda_venv_report_dir="$demo/report" || rc=$?
# The HTML report: the fleet page, and per host the graph of what importing torch loads, before and after.
if [ -f "$demo/report/index.html" ]; then
  echo "== HTML report: $demo/report/index.html"
fi
exit "$rc"
