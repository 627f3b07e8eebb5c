#!/usr/bin/env bash
# Session 63 run G: run F's CUDA-core V2 inverse norms at head dim 32 only, and all key blocks'
# at the window's start (run F computed blocks 1.. inside the block loop: spills at Npad 256, and
# head dim 64 was slower): one barrier per window as before. Not bitwise (the sums' order): the
# forward's CUDA tests against float64 and the inverse-norm tests; kernel times against main's
# kernels (.devbuild/s63base.so.xz).
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runG.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s63g G
fwa_unpack .devbuild/s63base.so.xz /tmp/base.so
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  for dt in bf16 fp16; do
    echo "== round $r $b $dt"
    timeout 100 python tools/kernel_breakdown.py --configs 1,2,3,0,5 --dtype $dt 2>&1 | grep -E "GPU time|fwd_wgmma"
  done
done; done
echo "timing done $(( $(date +%s) - t0 )) s"
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 200 python -m pytest -q -x tests/test_window_attention.py -m cuda \
  -k "wgmma_forward or reads_bias_mask or clustered or determinis" 2>&1 | tail -3
timeout 60 python -m pytest -q -x tests/test_qk_inv_norm.py -m cuda 2>&1 | tail -2
echo "end $(( $(date +%s) - t0 )) s"
