#!/usr/bin/env bash
# Runs the Python client's tests in a virtual environment under clients/python/.venv (made on
# first use, git-ignored): installs the package (editable) with pytest, then runs pytest with
# any arguments given, e.g.
#   clients/python/run-tests.sh                      # unit tests (+ integration if EARSHOTD is set)
#   EARSHOTD=.build/debug/earshotd EARSHOT_TEST_CATALOG=… EARSHOT_TEST_AUDIO=… clients/python/run-tests.sh
#   clients/python/run-tests.sh -m integration -x    # integration only (fails without EARSHOTD)
# Needs python3 with venv (Debian: python3-venv, which scripts/setup.sh installs) and PyPI.
# PYTHON picks the interpreter; EARSHOT_PY_VENV another venv folder.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
venv="${EARSHOT_PY_VENV:-$here/.venv}"

if [ ! -x "$venv/bin/python" ]; then
    echo "run-tests: creating $venv"
    if ! "$python" -m venv "$venv"; then
        rm -rf "$venv"
        echo "run-tests: '$python -m venv' failed; on Debian install python3-venv (scripts/setup.sh does)" >&2
        exit 1
    fi
fi

# Reinstall only when the package's metadata changed (the install is editable: code changes
# need none).
stamp="$venv/.earshot-client-installed"
want="$(cat "$here/pyproject.toml" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "run-tests: installing earshot-client[test] into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e "$here[test]"
    echo "$want" > "$stamp"
fi

cd "$here"
exec "$venv/bin/python" -m pytest "$@"
