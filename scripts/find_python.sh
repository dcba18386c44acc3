#!/usr/bin/env bash
# Print the real path of a working Python that can make venvs.
#   find_python.sh        Python >= 3.12 for the tools venv (ansible-core 2.20+ needs it on the
#                         controller): $PYTHON if set; else python3.14, python3.13, python3.12,
#                         python3 on PATH; else pyenv's installed versions, newest first.
#   find_python.sh 3.9    exactly Python 3.9: python3.9 on PATH, else pyenv's newest 3.9.x
#                         (scripts/sanity.py uses this for ansible-test's other target versions).
# A candidate counts only if it really runs: pyenv shims exist for versions that are not
# selected, and fail when called.
set -euo pipefail

MIN_MINOR=12
exact=${1:-}

# Print the interpreter's real path and succeed if it runs, has the wanted version, can make
# venvs (Debian splits ensurepip into python3.X-venv) and, unless $2 is "any", is no venv's
# (such as build/tools itself, first on make's PATH).
probe() {
    "$1" -c "import sys, venv, ensurepip
version = sys.version_info[:2]
if ('$exact' and '%d.%d' % version != '$exact') or version < (3, $MIN_MINOR) and not '$exact':
    sys.exit(1)
if sys.prefix != sys.base_prefix and '${2:-}' != 'any':
    sys.exit(1)
print(sys.executable)" 2>/dev/null
}

# pyenv's installed versions (bare, like 3.13.0, not 3.13.0/envs/x nor system), newest first.
pyenv_candidates() {
    command -v pyenv >/dev/null 2>&1 || return 0
    local version minor
    for version in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.[0-9]+\.[0-9]+$' | sort -rV); do
        minor=${version#3.}
        minor=${minor%%.*}
        if [ -n "$exact" ]; then
            [ "3.$minor" = "$exact" ] || continue
        else
            [ "$minor" -ge "$MIN_MINOR" ] || continue
        fi
        echo "$(pyenv prefix "$version" 2>/dev/null)/bin/python3"
    done
}

if [ -n "$exact" ]; then
    names=("python$exact")
elif [ -n "${PYTHON:-}" ]; then
    probe "$PYTHON" any && exit 0
    echo "find_python: PYTHON=$PYTHON is not a working Python >= 3.${MIN_MINOR} with venv and ensurepip." >&2
    exit 1
else
    names=(python3.14 python3.13 python3.12 python3)
fi

for name in "${names[@]}"; do
    if command -v "$name" >/dev/null 2>&1 && probe "$name"; then
        exit 0
    fi
done
for candidate in $(pyenv_candidates); do
    probe "$candidate" && exit 0
done

if [ -n "$exact" ]; then
    echo "find_python: no working Python $exact with venv support" >&2
    exit 1
fi
cat >&2 <<EOF
find_python: need Python >= 3.${MIN_MINOR} with venv support (ansible-core 2.20+ requires it).
Install one, e.g. 'apt-get install python3.12 python3.12-venv' (or 'pyenv install 3.12'),
or point to one: make PYTHON=/path/to/python3.12 ...
EOF
exit 1
