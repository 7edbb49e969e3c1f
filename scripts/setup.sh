#!/usr/bin/env bash
# Create .venv (if missing) and install cigeval into it with the extras named:
#   bash scripts/setup.sh                  the core only: what scripts/main.sh's tables need
#   bash scripts/setup.sh grounding hf     the core and those extras
#   bash scripts/setup.sh --all            every extra the tests use and the dev tools (CI)
# torch is installed first when an extra needs it, pinned to the CPU build, so nothing pulls a
# multi-GB CUDA build. CI's other environments and Chromium are scripts/setup_test.sh's.
set -euo pipefail
cd "$(dirname "$0")/.."
ALL=(dev hf grounding ocr robust train ray ray-serve anthropic datasets wandb mlflow inspect mcp calibrate)
NEED_TORCH=" hf grounding train "

WANT=()
for arg in "$@"; do
  case "$arg" in
    --all) WANT+=("${ALL[@]}") ;;
    litellm)
      # LiteLLM pins openai<3 and huggingface-hub<2, which would move the whole environment
      # back: it gets an environment of its own (docs/judges/litellm.md, scripts/setup_test.sh)
      echo "setup.sh: the litellm extra needs an environment of its own (docs/judges/litellm.md)" >&2
      exit 2 ;;
    -*) echo "setup.sh: unknown option $arg (extras by name, or --all)" >&2; exit 2 ;;
    *) WANT+=("$arg") ;;
  esac
done

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
# The stamp in .venv holds a hash of pyproject.toml and this script, then the extras installed
# with them: a run asking for nothing new skips pip (it would only confirm what is installed,
# seconds on every scripts/main.sh); a changed pyproject.toml or setup.sh installs again.
STAMP=.venv/.cigeval-setup
HASH="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
HAVE_HASH="" HAVE_EXTRAS=""
if [ -f "$STAMP" ]; then read -r HAVE_HASH HAVE_EXTRAS < "$STAMP" || true; fi
HAVE=()
if [ "$HAVE_HASH" = "$HASH" ]; then
  # "-" stands for the core alone
  IFS=, read -r -a HAVE <<< "${HAVE_EXTRAS:--}"
  [ "${HAVE[*]}" = "-" ] && HAVE=()
fi
MISSING=()
for extra in ${WANT[@]+"${WANT[@]}"}; do
  case " ${HAVE[*]-} " in *" $extra "*) ;; *) MISSING+=("$extra") ;; esac
done
if [ "$HAVE_HASH" = "$HASH" ] && [ ${#MISSING[@]} -eq 0 ]; then
  exit 0
fi

EXTRAS=()
for extra in ${HAVE[@]+"${HAVE[@]}"} ${MISSING[@]+"${MISSING[@]}"}; do
  case " ${EXTRAS[*]-} " in *" $extra "*) ;; *) EXTRAS+=("$extra") ;; esac
done
python -m pip install --quiet --upgrade pip
for extra in ${EXTRAS[@]+"${EXTRAS[@]}"}; do
  case "$NEED_TORCH" in
    *" $extra "*) python -m pip install --quiet "torch==2.13.0"; break ;;
  esac
done
if [ ${#EXTRAS[@]} -eq 0 ]; then
  python -m pip install --quiet -e .
  echo "$HASH -" > "$STAMP"
else
  LIST="$(IFS=,; echo "${EXTRAS[*]}")"
  python -m pip install --quiet -e ".[$LIST]"
  echo "$HASH $LIST" > "$STAMP"
fi
