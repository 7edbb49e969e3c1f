#!/usr/bin/env bash
# The main job: set up, reproduce the paper's meta-evaluation rows from the shipped human
# ratings, then judge the example samples with a real LMM when one is configured. It installs
# only what it runs: the core for the tables, then what the judge named in CIGEVAL_MODEL needs.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
SHARED="${CIGEVAL_SHARED:-../shared}"

echo "== Human raters vs each other (CIGEval Table 3, first row), SC, paper averaging =="
cigeval meta imagenhub --human --dimension SC --average paper
if [ -f "$SHARED/data/viescore_outputs/scores/gpt4o_0shot.tsv" ]; then
  echo "== VIEScore GPT-4o recorded judgments vs humans (Table 3, VIEScore GPT-4o row) =="
  cigeval meta imagenhub --scores "$SHARED/data/viescore_outputs/scores/gpt4o_0shot.tsv" \
    --format viescore --dimension SC --average paper
fi

MODEL="${CIGEVAL_MODEL:-}"
if [ -z "$MODEL" ]; then
  cat <<'MSG'
== Judging examples/samples.jsonl: skipped ==
A real judge needs a model. Set CIGEVAL_MODEL and its credentials, then rerun, e.g.
  CIGEVAL_MODEL=openai:gpt-4o-2024-05-13 OPENAI_API_KEY=sk-... bash scripts/main.sh
  CIGEVAL_MODEL=openai:Qwen/Qwen2.5-VL-7B-Instruct OPENAI_BASE_URL=http://localhost:8000/v1 bash scripts/main.sh
Extra `cigeval evaluate` arguments go in CIGEVAL_ARGS, e.g. CIGEVAL_ARGS="--tools 'Difference,Scene Graph'".
MSG
  exit 0
fi

# What judging needs beyond the core: Grounding's extra (transformers, torch) unless the tools
# given leave Grounding out, and the judge's provider's extra. Other extras a flag in
# CIGEVAL_ARGS needs (--track, --dataset, --engine ray) are named by cigeval's error.
EXTRAS=()
case "${CIGEVAL_ARGS:-}" in
  *--tools*Grounding* | *--grounding*) EXTRAS+=(grounding) ;;
  *--tools*) ;;
  *) EXTRAS+=(grounding) ;;
esac
case "$MODEL" in
  hf:*) EXTRAS+=(hf) ;;
  anthropic:*) EXTRAS+=(anthropic) ;;
  litellm:*)
    echo "main.sh: litellm: judges need LiteLLM in an environment of its own (its pins clash" >&2
    echo "with this one's); see docs/judges/litellm.md" >&2
    exit 2 ;;
esac
if [ ${#EXTRAS[@]} -gt 0 ]; then
  echo "== Installing what the judge needs: ${EXTRAS[*]} =="
  bash scripts/setup.sh "${EXTRAS[@]}"
fi
exec bash scripts/judge_examples.sh  # extra `cigeval evaluate` arguments: $CIGEVAL_ARGS
