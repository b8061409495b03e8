#!/usr/bin/env bash
# Create (or reuse) a virtual environment with the ns-3 Python bindings used by
# benches/ns3_dumbbell.py. Idempotent: a venv that already has the pinned ns3
# wheel is left alone. The venv's python path is printed on the last
# line of stdout so callers can do: PY=$(bash benches/ns3_setup.sh | tail -n1)
set -euo pipefail

# PyPI has no plain "3.44" release, only the wheel rebuild 3.44.post0 (same
# ns-3 3.44 sources), and "==3.44" does not match post releases under PEP 440.
NS3_VERSION="3.44.post0"
VENV="${NS3_VENV:-/tmp/aqmlab-ns3-venv}"
PY="$VENV/bin/python"

have_ns3() {
    # The wheel ships its version in package metadata; checking that is much
    # cheaper than importing ns (cppyy loads every ns-3 library on import).
    [ -x "$PY" ] && "$PY" - "$NS3_VERSION" <<'PYEOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
sys.exit(0 if version("ns3") == sys.argv[1] else 1)
PYEOF
}

if ! have_ns3; then
    if [ ! -x "$PY" ]; then
        echo "creating venv at $VENV" >&2
        python3 -m venv "$VENV"
    fi
    echo "installing ns3==$NS3_VERSION into $VENV (this can take a few minutes)" >&2
    "$PY" -m pip install --disable-pip-version-check -q "ns3==$NS3_VERSION" >&2
fi

echo "$PY"
