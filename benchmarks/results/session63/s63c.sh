#!/usr/bin/env bash
# Session 63 run C: the window wgmma forward's CTA prologue (run B: ~15 % of its warp samples at
# (1024, 3, 256) bf16): the fixed row shifts by every warp (8 threads per row at 4 warpgroups),
# and the bias+mask rows read by 16-byte loads, 8 chunks per thread in flight. Base = main's
# kernels (.devbuild/s63base.so.xz). Bitwise against it, the forward's CUDA tests, kernel times.
export PYTHONPATH=$PWD
t0=$(date +%s)
exec > >(tee $OUT/runC.txt) 2>&1
source benchmarks/results/device_steps.sh
fwa_build s63c C
fwa_unpack .devbuild/s63base.so.xz /tmp/base.so
fwa_bitwise_vs s63base C
echo "bitwise done $(( $(date +%s) - t0 )) s"
cp /tmp/new.so flash_window_attn/_C.abi3.so
timeout 330 python -m pytest -q -x tests/test_window_attention.py -m cuda \
  -k "wgmma_forward or reads_bias_mask or bias_mask_build_ordering or clustered or many_windows_per_cta" 2>&1 | tail -5
echo "tests done $(( $(date +%s) - t0 )) s"
for r in 1 2; do for b in base new; do
  cp /tmp/$b.so flash_window_attn/_C.abi3.so
  for dt in bf16 fp16; do
    echo "== round $r $b $dt"
    timeout 100 python tools/kernel_breakdown.py --configs 1,2,3,8 --dtype $dt 2>&1 | grep -E "GPU time|fwd_wgmma"
  done
done; done
cp /tmp/new.so flash_window_attn/_C.abi3.so
echo "end $(( $(date +%s) - t0 )) s"
