#!/usr/bin/env bash
# The collection as Galaxy and Automation Hub receive it, and as an Execution Environment installs it.
# Usage: scripts/publish_check.sh PUBLISH_VENV WORKDIR   (make publish-check: build/publish, build/publish-check)
#  1. `ansible-galaxy collection build` into WORKDIR/dist.
#  2. galaxy-importer on that tarball with Automation Hub's settings (scripts/galaxy-importer.cfg): fails on
#     any error or warning it prints, not only on a failed import.
#  3. The tarball installed alone into WORKDIR/collections; `ansible-builder introspect` there must list
#     exactly the requirements of meta/ee-requirements.txt and meta/ee-bindep.txt.
#  4. `ansible-builder create` for ee/execution-environment.yml into WORKDIR/ee-context: a Containerfile
#     and the galaxy requirements (collections/requirements.yml).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=$(cd "$1" && pwd)
work=$2
fail() { echo "publish-check: $*" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work/dist" "$work/collections" "$work/import"
work=$(cd "$work" && pwd)
# The importer and ansible-builder run from the publish venv; ansible-galaxy from it too (the importer
# calls ansible-doc and ansible-lint by name).
export PATH="$venv/bin:$PATH" ANSIBLE_NOCOLOR=1
export -n ANSIBLE_CONFIG

"$venv/bin/ansible-galaxy" collection build --output-path "$work/dist" "$root" >/dev/null
tarball=$(ls "$work"/dist/gpuops-cuda_venv-*.tar.gz)
echo "publish-check: built $tarball"

# 2. galaxy-importer, from an empty directory (it writes importer_result.json into its working directory).
(cd "$work/import" && GALAXY_IMPORTER_CONFIG="$root/scripts/galaxy-importer.cfg" \
    "$venv/bin/python" -m galaxy_importer.main "$tarball") >"$work/import/output.txt" 2>&1 \
    || { cat "$work/import/output.txt"; fail "galaxy-importer refused $tarball"; }
if grep -E '^(WARNING|ERROR)' "$work/import/output.txt"; then
    fail "galaxy-importer printed the warnings or errors above for $tarball (full output: $work/import/output.txt)"
fi
grep -qx 'Importer processing completed successfully' "$work/import/output.txt" \
    || { cat "$work/import/output.txt"; fail "galaxy-importer did not say it completed"; }
echo "publish-check: galaxy-importer $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("galaxy-importer"))') (Automation Hub settings): no error, no warning"

# 3. What an Execution Environment build would find in the installed collection.
(cd "$work/collections" && ANSIBLE_COLLECTIONS_PATH="$work/collections" "$venv/bin/ansible-galaxy" collection install --offline --no-deps \
    -p "$work/collections" "$tarball" >/dev/null)
"$venv/bin/ansible-builder" introspect --sanitize "$work/collections" \
    --write-pip "$work/ee-python.txt" --write-bindep "$work/ee-system.txt" >/dev/null
declared() { grep -Ev '^[[:space:]]*(#|$)' "$1" | sed 's/[[:space:]]*$//' | sort; }
found() { sed -n 's/[[:space:]]*# from collection gpuops\.cuda_venv$//p' "$1" | sort; }
listed() {  # DECLARED_FILE INTROSPECTED_FILE
    diff <(declared "$root/$1") <(found "$2") >/dev/null \
        || { diff <(declared "$root/$1") <(found "$2") || true; fail "ansible-builder introspect does not list $1 as declared (above: < declared, > found)"; }
}
listed meta/ee-requirements.txt "$work/ee-python.txt"
listed meta/ee-bindep.txt "$work/ee-system.txt"
echo "publish-check: ansible-builder introspect lists $(found "$work/ee-python.txt" | wc -l) Python and $(found "$work/ee-system.txt" | wc -l) system requirements of gpuops.cuda_venv"

# 4. The EE build context.
"$venv/bin/ansible-builder" create -f "$root/ee/execution-environment.yml" -c "$work/ee-context" \
    --output-filename Containerfile >/dev/null
[ -s "$work/ee-context/Containerfile" ] || fail "ansible-builder create wrote no Containerfile"
cmp -s "$root/collections/requirements.yml" "$work/ee-context/_build/requirements.yml" \
    || fail "the EE build context does not carry collections/requirements.yml"
grep -q 'introspect' "$work/ee-context/Containerfile" || fail "the Containerfile does not introspect the collections"
echo "publish-check: ansible-builder create wrote $work/ee-context/Containerfile"
