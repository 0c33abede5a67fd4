#!/usr/bin/env bash
# Runs fidelity_test.py (unittest) with the system's python3.
set -euo pipefail
exec python3 "$(dirname "$0")/fidelity_test.py" -v
