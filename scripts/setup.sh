#!/usr/bin/env bash
# Create .venv (if missing) and install cigeval with every extra and the dev tools.
# torch is installed first, pinned to the CPU build, so nothing pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
# A second run with the same pyproject.toml and setup.sh skips the pip steps below (they would
# only confirm what is installed, seconds on every scripts/main.sh); the stamp lives in .venv,
# so a new environment always installs.
STAMP=.venv/.cigeval-setup
WANT="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$STAMP" 2>/dev/null || true)" != "$WANT" ]; then
  python -m pip install --quiet --upgrade pip
  python -m pip install --quiet "torch==2.13.0"
  # The litellm extra is left out on purpose: LiteLLM pins openai<3 and huggingface-hub<2, which
  # would move the whole environment back (docs/judges/litellm.md). It gets an environment of
  # its own below, where scripts/test.sh runs the litellm: tests.
  python -m pip install --quiet -e ".[dev,hf,grounding,ocr,train,ray,ray-serve,anthropic,datasets,wandb,mlflow,inspect]"
  echo "$WANT" > "$STAMP"
fi
# cigeval without torch, plus LiteLLM (about a minute): the litellm: judge's tests run there.
if [ ! -x .venv-litellm/bin/python ]; then
  { python3 -m venv .venv-litellm && .venv-litellm/bin/python -m pip install --quiet -e ".[dev,litellm]"; } \
    || echo "setup.sh: could not set up .venv-litellm; the litellm: tests will be skipped" >&2
fi
# fakellm, a third-party server of the Anthropic messages API (tests/test_fakellm_judge.py), in
# an environment of its own: its FastAPI/uvicorn pins need not meet the project's. The test
# skips without it; tests/anthropic_server.py covers the same path in-process.
if [ ! -x .venv-fakellm/bin/fakellm ]; then
  { python3 -m venv .venv-fakellm && .venv-fakellm/bin/python -m pip install --quiet fakellm; } \
    || echo "setup.sh: could not install fakellm; tests/test_fakellm_judge.py will skip" >&2
fi
# Headless Chromium for the report's browser test (tests/report/test_report_browser.py), from
# Debian's packages; playwright (dev extra) drives it and never downloads a browser.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
    || echo "setup.sh: could not install chromium; the browser test cannot run (CI fails it)" >&2
fi
