#!/usr/bin/env bash
# Session 49 run C (H200): run B's side stream (slower) split: FWA_CPB_SIDE_STREAM=2 joins the side
# stream right after the bias (no forward overlap; autograd still runs the bias's backward on the
# side stream, beside the layers' backward). Models' GPU time, eager swapped / ceiling, window16 and
# base_window12_192, modes 0 / 2 alternating twice. (s49a build unpacked: Python-only change.)
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runC.txt) 2>&1
fwa_unpack .devbuild/s49a.so.xz flash_window_attn/_C.abi3.so
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
for r in 1 2; do for s in 0 2; do
  FWA_CPB_SIDE_STREAM=$s timeout 100 python benchmarks/bench_models.py $M --out /tmp/m.json > /tmp/g.log 2>&1
  echo "round $r side_stream=$s"; grep -h "GPU time" /tmp/g.log
done; done
echo "done $(( $(date +%s) - t0 )) s"
