#!/usr/bin/env bash
# Session 52 run C: the sliding forward's scale folded into the exponent (kFold: the row max over
# the raw logits, scaled once; P = exp2(fma(s, sl, -max)); full steps of the wgmma and
# warp-specialised forwards), build F; and F plus FlashAttention-4's rescale rule
# (FWA_FWD_RESCALE_SKIP: a warp keeps its rows' running max, and skips O's rescale, while no row
# grows it by more than 8 in log2 units), build FR. GPU time base (main's build, .devbuild/s51d.so.xz)
# / F and base / FR at configs 0, 4, 1, 2 (2 rounds each); test_local_extremes with each.
# (FWA_FWD_RESCALE_SKIP was this run's macro; main has the rule as local_softmax_step's
# kSkipRescale, on at d = 128 only, run D.)
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s52f C
cp /tmp/new.so /tmp/f.so
sed -i '1i #define FWA_FWD_RESCALE_SKIP' csrc/kernels/local/local_fwd_kernel.cuh
fwa_build s52fr C2
cp /tmp/new.so /tmp/fr.so
fwa_unpack .devbuild/s51d.so.xz /tmp/base.so
echo "builds done $(( $(date +%s) - t0 )) s"
for v in f fr; do
  echo "=== base / $v"
  cp /tmp/$v.so /tmp/new.so
  fwa_local_graph_ab 0 4 1 2
  echo "graph $v done $(( $(date +%s) - t0 )) s"
  timeout 150 python -m pytest -q -m cuda tests/test_local_extremes.py 2>&1 | tail -2
  echo "extremes $v done $(( $(date +%s) - t0 )) s"
done
echo "end $(( $(date +%s) - t0 )) s"
