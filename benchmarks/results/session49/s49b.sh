#!/usr/bin/env bash
# Session 49 run B (H200): the training step's position bias on a side CUDA stream
# (_swin_common.bias_begin / bias_end; Python only, so run A's build s49a is unpacked, not rebuilt).
# The modules / swap / CPB CUDA tests (the two new side-stream tests among them), then the models'
# GPU time (eager swapped / ceiling, window16 and base_window12_192) with FWA_CPB_SIDE_STREAM=0 / 1
# alternating twice, and their per-call times (the host's share).
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runB.txt) 2>&1
fwa_unpack .devbuild/s49a.so.xz flash_window_attn/_C.abi3.so
T="tests/test_cpb.py tests/test_modules.py tests/test_swap.py"
timeout 240 python -m pytest -q -p no:cacheprovider -m cuda $T 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -12
echo "tests $(( $(date +%s) - t0 )) s"
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
for r in 1 2; do for s in 0 1; do
  [ $(( $(date +%s) - t0 )) -gt 500 ] && break
  FWA_CPB_SIDE_STREAM=$s timeout 100 python benchmarks/bench_models.py $M --out /tmp/m.json > /tmp/g.log 2>&1
  echo "round $r side_stream=$s"; grep -h "GPU time\|host issue\|^c swapped" /tmp/g.log
done; done
echo "done $(( $(date +%s) - t0 )) s"
