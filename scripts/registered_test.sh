#!/usr/bin/env bash
# The registered test of results/registered/REGISTRATION.md, step by step. Every step resumes where
# it stopped (stores are finished with --resume, training with termrl train --resume), so after any
# stop run the same command again. Progress goes to stderr; each store's summary to STORE.json.
#
#   scripts/registered_test.sh            # every step, in order
#   scripts/registered_test.sh base-0.5b  # one step: models | base-0.5b | train | sft-0.5b | rl-0.5b | base-1.5b | analyse
set -euo pipefail
cd "$(dirname "$0")/.."
R=results/registered
M05=${M05:-$HOME/.cache/termrl/models/qwen2.5-coder-0.5b-instruct}
M15=${M15:-$HOME/.cache/termrl/models/qwen2.5-coder-1.5b-instruct}
TRAIN=results/registered-train
export TERMRL_DATASETS=${TERMRL_DATASETS:-$(cd .. && pwd)/shared/datasets}
# The harness every step runs (amendments 2 and 3 of REGISTRATION.md): termrl's code at this commit, from a
# worktree beside this checkout, whatever this checkout holds now. Its Python is a venv of its own
# that sees this checkout's .venv packages but not its editable termrl; -P keeps the working
# directory off sys.path, so `import termrl` finds only the worktree's.
HARNESS=4310bd440919b2fd775f32f2325b8692a8903e23
W=${TERMRL_HARNESS_DIR:-$(cd .. && pwd)/termrl-harness-${HARNESS:0:7}}
if [ ! -d "$W/termrl" ]; then
  git worktree add --detach "$W" "$HARNESS" >&2
fi
if [ ! -x "$W/.venv/bin/python" ]; then
  "$(.venv/bin/python -c 'import sys; print(sys._base_executable)')" -m venv --without-pip "$W/.venv"
  site=$("$W/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  .venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > "$site/termrl-main-packages.pth"
fi
export PYTHONPATH="$W"
# glibc takes its arena limit only at start (amendment 2): the pinned harness's runtime setting
# missed the eval's CTranslate2 threads, which page-faulted every step. Since amendment 3 llama-server
# inherits it, as it did in the measurements that chose it (termrl eval sets it: results/cpu-engines)
export MALLOC_ARENA_MAX=1
TERMRL=("$W/.venv/bin/python" -P -m termrl)
echo "registered test: harness $("$W/.venv/bin/python" -P -c 'import termrl.provenance as p; print(p.harness(), "from", p.PACKAGE)')" >&2
# the registered sets: T, the six families' held-out templates at level 1; X1 and X3, HumanEval
T="logs-count@1:heldout:0-39+csv-aggregate@1:heldout:0-39+py-function@1:heldout:0-39+c-fix-bug@1:heldout:0-39"
T="$T+json-transform@1:heldout:0-39+shell-files@1:heldout:0-39"

play() {  # NAME MODEL_DIR: the model on T, X1 and X3, greedy, llama.cpp q8_0 on one thread (amendment 3)
  local name=$1 model=$2 set suite steps
  bash scripts/build_llamacpp.sh >&2  # once: exits at once when built
  for set in T X1 X3; do
    case $set in
      T) suite=$T; steps=4 ;;
      X1) suite=humaneval; steps=1 ;;
      X3) suite=humaneval:0-79; steps=3 ;;
    esac
    mkdir -p "$R/$name"
    echo "registered test: $name on $set ($suite, $steps replies)" >&2
    nice -n 10 "${TERMRL[@]}" eval --policy "llamacpp:$model" --suite "$suite" --max-steps "$steps" --time-limit 900 \
      --temperature 0 --max-new-tokens 384 --stop-at-action --action-format tool_call --workers 8 --threads 1 \
      --out "$R/$name/$set" --resume --json > "$R/$name/$set.json"
  done
}

step() {
  case $1 in
    models)
      bash ../shared/tools/qwen2.5-coder-0.5b.sh "$M05" >&2
      bash ../shared/tools/qwen-coder-1.5b.sh "$M15" >&2 ;;
    base-0.5b) play base-0.5b "$M05" ;;
    train) bash scripts/build_llamacpp.sh >&2
           nice -n 10 "${TERMRL[@]}" train configs/registered-0.5b.toml --json --resume > "$R/train.json" ;;
    sft-0.5b) play sft-0.5b "$TRAIN/sft" ;;
    rl-0.5b) play rl-0.5b "$TRAIN/final" ;;
    base-1.5b) play base-1.5b "$M15" ;;
    analyse) .venv/bin/python bench/registered_test.py "$R" ;;
    *) echo "unknown step $1: use models, base-0.5b, train, sft-0.5b, rl-0.5b, base-1.5b or analyse" >&2; exit 2 ;;
  esac
}

if [ $# -eq 0 ]; then
  set -- models base-0.5b train sft-0.5b rl-0.5b base-1.5b analyse
fi
for s in "$@"; do step "$s"; done
