#!/usr/bin/env bash
# One short GPU session's checks, in priority order; every result is written to $OUT as soon as it exists, so a
# run stopped at its time limit still returns what it measured.
#
#   1. the machine: nvidia-smi, library versions;
#   2. the app's own NVML module on a real driver (`vramdesk gpus --json`), and one estimate through the CLI;
#   3. what loading a checkpoint leaves in PyTorch's cache, four common ways (measure_loading.py);
#   4. transformers generate of catalog models for BUDGET_INFERENCE_S seconds (100; measure_inference.py);
#   5. committed traces' steps not measured yet, with the default allocator (max_memory_allocated / reserved,
#      NVML per phase), for BUDGET_S seconds (200);
#   6. some with expandable segments, for BUDGET_EXPANDABLE_S seconds (45).
# About 8 minutes in all on an H200; each step stops at its budget plus at most one item's time-out (60-90 s), so
# give the whole command a 560 s limit: what finished is already in $OUT. Commit what comes back under
# benchmarks/data/device/ (the inference lines as NAME-inference.jsonl) and run benchmarks/accuracy.py.
#
# Usage (repository root, a machine with a GPU, torch, transformers and peft; the app's own pure-Python
# dependencies may come as wheels in .whl/): OUT=/some/dir bash benchmarks/device/session.sh
# Compare afterwards: python benchmarks/allocator/replay_report.py --device $OUT/steps.jsonl
set -u
OUT=${OUT:?set OUT to a folder for the results}
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
    SITE=$(mktemp -d)
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
        && export PYTHONPATH=$SITE:${PYTHONPATH:-}
fi
export PYTHONPATH=$PWD:${PYTHONPATH:-}

{
    nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
    $PY -c "import torch, transformers, peft; print('torch', torch.__version__, 'cuda', torch.version.cuda, \
'transformers', transformers.__version__, 'peft', peft.__version__)"
} 2>&1 | tee "$OUT/machine.txt"

# the app's NVML module against a real driver, and the CLI on the GPU it found
$PY -m vramdesk gpus --json >"$OUT/gpus.json" 2>&1
cat "$OUT/gpus.json"
$PY -m vramdesk estimate Qwen/Qwen2.5-1.5B --mode finetune --method full --micro-batch 2 --seq-len 4096 \
    --grad-checkpointing --gpu "H200" --json >"$OUT/estimate.json" 2>&1 || head -c 600 "$OUT/estimate.json"

# what loading a checkpoint leaves in the cache (a bf16 Qwen2.5-1.5B written with random weights, loaded four ways)
$PY benchmarks/device/measure_loading.py --timeout 60 --out "$OUT/loading.jsonl" \
    benchmarks/data/configs/Qwen__Qwen2.5-1.5B.json

# transformers generate of catalog models, as many as the budget allows
$PY benchmarks/device/measure_inference.py --timeout 90 --budget "${BUDGET_INFERENCE_S:-100}" \
    --out "$OUT/inference.jsonl"

# every committed trace without a GPU result in benchmarks/data/device/ yet, as many as the budget allows; then a
# few with expandable segments. Append the results to benchmarks/data/device/ afterwards (a new file per session).
$PY benchmarks/device/measure_steps.py --timeout 90 --unmeasured --budget "${BUDGET_S:-200}" --out "$OUT/steps.jsonl"
$PY benchmarks/device/measure_steps.py --timeout 90 --expandable --unmeasured --budget "${BUDGET_EXPANDABLE_S:-45}" \
    --out "$OUT/steps-expandable.jsonl"
echo "session done"
