#!/usr/bin/env bash
# The main job: set up, reproduce the paper's meta-evaluation rows from the shipped human
# ratings, then judge the example samples with a real LMM when one is configured.
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
exec bash scripts/judge_examples.sh  # extra `cigeval evaluate` arguments: $CIGEVAL_ARGS
