#!/usr/bin/env bash
# Session 50 run C (H200): models with run A's build (s50a: the batched CPB backward's MLP part in one
# launch at MaxH 32) and run B's (s50b: grouped by MaxH), three alternating rounds, window16 and
# base_window12_192, eager swapped / ceiling, GPU time and the table rows.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runC.txt) 2>&1
fwa_unpack .devbuild/s50a.so.xz /tmp/a.so
fwa_unpack .devbuild/s50b.so.xz /tmp/b.so
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
for r in 1 2 3; do for b in a b; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  timeout 110 python benchmarks/bench_models.py $M --out $OUT/models-c$r-$b.json > /tmp/g.log 2>&1
  echo "round $r build s50$b"; grep -h "GPU time\|^c swapped\|^e ceiling" /tmp/g.log
done; done
rm -f $OUT/models-c1-* $OUT/models-c2-* $OUT/models-c3-a.*
echo "done $(( $(date +%s) - t0 )) s"
