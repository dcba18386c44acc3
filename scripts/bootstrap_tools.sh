#!/usr/bin/env bash
# Create the tools venv (default build/tools) from the exact pins in requirements/tools.txt and
# requirements/sanity.txt, or another venv from the requirements files given, with pip as configured on
# this machine (no index URLs here). The first file pins pip.
# Usage: scripts/bootstrap_tools.sh [VENV [REQUIREMENTS...]]; PYTHON=/path/to/python3.12 picks the interpreter.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/build/tools}
shift || true
requirements=("$@")
[ ${#requirements[@]} -gt 0 ] || requirements=("$root/requirements/tools.txt" "$root/requirements/sanity.txt")

python=$("$root/scripts/find_python.sh")
echo "bootstrap_tools: $("$python" -c 'import sys; print("Python %d.%d.%d" % sys.version_info[:3])') at $python -> $venv"

rm -rf "$venv"
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check --quiet)
# pip first, at its pinned version, so the resolver below behaves the same everywhere.
"${pip[@]}" install "$(grep -E '^pip==' "${requirements[0]}")"
"${pip[@]}" install "${requirements[@]/#/--requirement=}"
"${pip[@]}" check
