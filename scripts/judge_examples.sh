#!/usr/bin/env bash
# The judging part of scripts/main.sh: judge examples/samples.jsonl with $CIGEVAL_MODEL into
# runs/examples.jsonl and write its report, runs/examples.html. Extra `cigeval evaluate`
# arguments come from $CIGEVAL_ARGS, quoted as in a shell (e.g. "--tools 'Difference,Scene Graph'").
# Expects `cigeval` on PATH (main.sh activates .venv first).
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL="${CIGEVAL_MODEL:?set CIGEVAL_MODEL, e.g. openai:gpt-4o-2024-05-13}"

# $CIGEVAL_ARGS split as a shell would (quotes respected), without eval
EXTRA=()
while IFS= read -r -d '' arg; do EXTRA+=("$arg"); done < <(
  python -c 'import os, shlex, sys; sys.stdout.write("".join(a + "\0" for a in shlex.split(os.environ.get("CIGEVAL_ARGS", ""))))'
)

# $1 as one shell word: in double quotes when that is safe, else escaped
shell_word() {
  case "$1" in
    *[\"\$\`\\]*) printf '%q' "$1" ;;
    *[![:alnum:]_/:.,@%+=-]*) printf '"%s"' "$1" ;;
    *) printf '%s' "$1" ;;
  esac
}

# the one line that reruns the main job with CIGEVAL_ARGS=$1 (never prints a key)
rerun_line() {
  local line="CIGEVAL_MODEL=$(shell_word "$MODEL") "
  if [ -n "${OPENAI_BASE_URL:-}" ]; then
    line+="OPENAI_BASE_URL=$(shell_word "$OPENAI_BASE_URL") "
  fi
  printf '%sCIGEVAL_ARGS=%s bash scripts/main.sh\n' "$line" "$(shell_word "$1")"
}

echo "== Judging examples/samples.jsonl with $MODEL${CIGEVAL_ARGS:+ ($CIGEVAL_ARGS)} =="
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
# stderr shown as it comes and kept in $log, to find a fix to offer
{ cigeval evaluate examples/samples.jsonl --model "$MODEL" --out runs/examples.jsonl \
    ${EXTRA[@]+"${EXTRA[@]}"} 2>&1 1>&3 3>&- | tee "$log" >&2; status=${PIPESTATUS[0]}; } 3>&1
set -e
# exit status 1 means some samples ended in error records: the report still shows them all
if [ "$status" -le 1 ]; then
  echo "== Report: runs/examples.html (open it in a browser; no network needed) =="
  cigeval report runs/examples.jsonl -o runs/examples.html
elif fix="$(grep -o -- "--tools '[^']*'" "$log" | tail -n 1)" && [ -n "$fix" ]; then
  # the preflight could not load Grounding's weights (offline, no local copy): the same
  # job without Grounding, as one line to paste
  echo "main.sh: Grounding cannot be used here; to judge with the other tools, run:" >&2
  rerun_line "${CIGEVAL_ARGS:+$CIGEVAL_ARGS }$fix" >&2
  if [ -n "${OPENAI_API_KEY:-}" ]; then
    echo "(with OPENAI_API_KEY set as before)" >&2
  fi
fi
exit "$status"
