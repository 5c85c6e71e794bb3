#!/usr/bin/env bash
# One short GPU session's checks, in priority order; every result is written to $OUT as soon as it exists, so a
# run stopped at its time limit still returns what it measured.
#
#   1. the machine: nvidia-smi, library versions;
#   2. the app's own NVML module on a real driver (`vramdesk gpus --json`), and one estimate through the CLI;
#   3. committed traces' steps with the default allocator (max_memory_allocated / reserved, NVML per phase);
#   4. a few of them again with expandable segments.
#
# Usage (repository root, a machine with a GPU, torch, transformers and peft; the app's own pure-Python
# dependencies may come as wheels in .whl/): OUT=/some/dir bash benchmarks/device/session.sh
# Compare afterwards: python benchmarks/allocator/replay_report.py --device $OUT/steps.jsonl
set -u
OUT=${OUT:?set OUT to a folder for the results}
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
if ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
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

STEPS=(
    g-qwen15-full-b2-s4096 g-qwen15-lora-all-b4-s4096 v-qwen15-all-L4096
    g-mistral-lora-b4-s4096 g-mistral-lora-b8-s4096 g-llama2-lora-all-b2-s4096 g-mistral-full-b4-s4096
    g-qwen15-full-amp-b1-s2048 g-qwen15-dora-all-b2-s2048 g-qwen15-lora-qv-save-embed-head-b1-s1024
    g-qwen15-full-adafactor-b1-s1024 g-qwen15-full-sgd-b1-s1024
)
$PY benchmarks/device/measure_steps.py --timeout 150 --out "$OUT/steps.jsonl" "${STEPS[@]}"
$PY benchmarks/device/measure_steps.py --timeout 150 --expandable --out "$OUT/steps-expandable.jsonl" \
    g-qwen15-full-b2-s4096 v-qwen15-all-L4096 g-mistral-lora-b8-s4096
echo "session done"
