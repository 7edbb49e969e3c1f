#!/usr/bin/env bash
# Set up (.venv) and run the checks and the test suite, the way CI does.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
ruff check .
mypy cigeval
python -m pytest -q "$@"
