#!/usr/bin/env bash
# Session 49 run E (H200): the model-level batch of the Swin V2 position biases (one
# swin_cpb_bias_batch_forward / _backward call per training step; the one-layer kernels now shared
# bodies). Build; CPB / modules / swap / DDP CUDA tests; CPB bitwise of the one-layer op against
# s49a (main before); models' GPU time, eager swapped / ceiling, window16 and base_window12_192 with
# FWA_CPB_BATCH=0 / 1 alternating twice; then window8 and window12to24 batched.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runE.txt) 2>&1
fwa_build s49e E
T="tests/test_cpb.py tests/test_modules.py tests/test_swap.py tests/test_ddp.py"
timeout 240 python -m pytest -q -p no:cacheprovider -m cuda $T 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -12
echo "tests $(( $(date +%s) - t0 )) s"
fwa_bitwise_vs s49a E benchmarks/results/session47/cpb_bitwise.py
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
for r in 1 2; do for s in 0 1; do
  [ $(( $(date +%s) - t0 )) -gt 420 ] && break
  FWA_CPB_BATCH=$s timeout 100 python benchmarks/bench_models.py $M --out $( [ "$r$s" = 11 ] && echo $OUT/models-e1-batch1.json || echo /tmp/m.json ) > /tmp/g.log 2>&1
  echo "round $r batch=$s"; grep -h "GPU time\|host issue" /tmp/g.log
done; done
if [ $(( $(date +%s) - t0 )) -lt 440 ]; then
  timeout 110 python benchmarks/bench_models.py --models swinv2_tiny_window8_256,swinv2_base_window12to24_192to384 --variants swap,ceiling --no-compile --out $OUT/models-e-others.json > /tmp/o.log 2>&1
  echo "others (batched)"; grep -h "GPU time\|host issue\|^== " /tmp/o.log
fi
echo "done $(( $(date +%s) - t0 )) s"
