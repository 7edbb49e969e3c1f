#!/usr/bin/env bash
# What only the tests need beside .venv (scripts/test.sh runs this after `setup.sh --all`):
# LiteLLM's environment, fakellm's, and Chromium for the report's browser test. Each part is
# made once; a part that cannot be made is said, and the tests that need it skip (CI sets
# CIGEVAL_REQUIRE_BROWSER=1, so there a missing browser fails its test).
set -euo pipefail
cd "$(dirname "$0")/.."
# cigeval without torch, plus LiteLLM (about a minute): the litellm: judge's tests run there,
# because LiteLLM pins openai<3 and huggingface-hub<2 (docs/judges/litellm.md).
if [ ! -x .venv-litellm/bin/python ]; then
  { python3 -m venv .venv-litellm && .venv-litellm/bin/python -m pip install --quiet -e ".[dev,litellm]"; } \
    || echo "setup_test.sh: could not set up .venv-litellm; the litellm: tests will be skipped" >&2
fi
# fakellm, a third-party server of the Anthropic messages API (tests/test_fakellm_judge.py), in
# an environment of its own: its FastAPI/uvicorn pins need not meet the project's. The test
# skips without it; tests/anthropic_server.py covers the same path in-process.
if [ ! -x .venv-fakellm/bin/fakellm ]; then
  { python3 -m venv .venv-fakellm && .venv-fakellm/bin/python -m pip install --quiet fakellm; } \
    || echo "setup_test.sh: could not install fakellm; tests/test_fakellm_judge.py will skip" >&2
fi
# Headless Chromium for the report's browser test (tests/report/test_report_browser.py), from
# Debian's packages; playwright (dev extra) drives it and never downloads a browser.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
    || echo "setup_test.sh: could not install chromium; the browser test cannot run (CI fails it)" >&2
fi
