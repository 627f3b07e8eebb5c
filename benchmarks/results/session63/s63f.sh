#!/usr/bin/env bash
# Session 63 run F: the window wgmma forward's V2 inverse norms on the CUDA cores (q's rows and key
# block 0 at the window's start, key block kt + 1 at the end of block kt while its P v and the next
# S run; a warpgroup barrier at each block's top) instead of the diagonals of q qᵀ and k kᵀ on the
# tensor cores (run A: that phase is 12-13 % of the bf16 forward). Not bitwise (the sums' order
# changes): the forward's CUDA tests against float64, the inverse-norm tests, kernel times against
# main's kernels (.devbuild/s63base.so.xz).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runF.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s63f F
fwa_unpack .devbuild/s63base.so.xz /tmp/base.so
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  for dt in bf16 fp16; do
    echo "== round $r $b $dt"
    timeout 100 python tools/kernel_breakdown.py --configs 1,2,3,0,8 --dtype $dt 2>&1 | grep -E "GPU time|fwd_wgmma"
  done
done; done
echo "timing done $(( $(date +%s) - t0 )) s"
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 300 python -m pytest -q -x tests/test_window_attention.py -m cuda \
  -k "wgmma_forward or reads_bias_mask or clustered or many_windows_per_cta or determinis" 2>&1 | tail -5
timeout 120 python -m pytest -q -x tests/test_qk_inv_norm.py -m cuda 2>&1 | tail -3
echo "end $(( $(date +%s) - t0 )) s"
