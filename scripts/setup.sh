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
