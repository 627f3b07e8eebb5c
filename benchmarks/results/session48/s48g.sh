#!/usr/bin/env bash
# Session 48 run G (H200): a second and third A/B of run F's model figures (main 9c412dd against
# s47c): bench_models eager swapped / ceiling, GPU time, window16 and base_window12_192, alternating
# s47c / new twice.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
fwa_build s48g G
fwa_unpack .devbuild/s47c.so.xz /tmp/s47c.so
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
for r in 1 2; do for b in s47c new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  timeout 100 python benchmarks/bench_models.py $M --out $OUT/models-g$r-$b.json > /tmp/g.log 2>&1
  echo "round $r $b"; grep -h "GPU time\|^== " /tmp/g.log
done; done | tee $OUT/runG-models.txt
echo "done $(( $(date +%s) - t0 )) s"
