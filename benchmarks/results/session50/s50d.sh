#!/usr/bin/env bash
# Session 50 run D (H200): the batched CPB kernels compiled for more CTAs per SM (the dtable at
# kStep 4 and 2 CTAs of 512 threads, the MLP forward at 5 CTAs of 256): build, CPB / swap CUDA tests,
# cpb_batch_graph.py; then models with run B's build (s50b) and this one, two alternating rounds.
export PYTHONPATH=$PWD
t0=$(date +%s)
source benchmarks/results/device_steps.sh
exec > >(tee $OUT/runD.txt) 2>&1
fwa_build s50d D
timeout 150 python -m pytest -q -p no:cacheprovider -m cuda tests/test_cpb.py tests/test_swap.py 2>&1 | grep -E "passed|failed|FAILED|ERROR|Error|xpass" | tail -8
echo "tests $(( $(date +%s) - t0 )) s"
timeout 100 python benchmarks/results/session50/cpb_batch_graph.py 2>&1 | grep -v -i warn | grep -v "^    "
fwa_unpack .devbuild/s50b.so.xz /tmp/b.so
M="--models swinv2_tiny_window16_256,swinv2_base_window12_192 --variants swap,ceiling --no-compile"
for r in 1 2; do for b in b new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  timeout 110 python benchmarks/bench_models.py $M --out /tmp/m.json > /tmp/g.log 2>&1
  echo "round $r build $b"; grep -h "GPU time" /tmp/g.log
done; done
echo "done $(( $(date +%s) - t0 )) s"
