#!/usr/bin/env bash
# Create .venv (if missing) and install cigeval with every extra and the dev tools.
# torch is installed first, pinned to the CPU build, so nothing pulls a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[dev,hf,grounding,ocr,train,ray]"
# Headless Chromium for the report's browser test (tests/report/test_report_browser.py), from
# Debian's packages; playwright (dev extra) drives it and never downloads a browser.
if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
    || echo "setup.sh: could not install chromium; the browser test cannot run (CI fails it)" >&2
fi
