#!/usr/bin/env bash
# Set up (.venv with every extra, the tests' other environments, Chromium) and run the checks
# and the test suite, the way CI does.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --all
bash scripts/setup_test.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
ruff check .
mypy cigeval
# The litellm: judge in the environment that has LiteLLM (its pins clash with the main one).
# It runs first, its third-party warnings not shown, so the main suite's summary line is the
# last thing printed.
if [ -x .venv-litellm/bin/python ]; then
  .venv-litellm/bin/python -m pytest -q -p no:cacheprovider -p no:warnings \
    tests/backends/test_litellm_backend.py tests/test_judges_by_name.py -k litellm
fi
python -m pytest -q "$@"
