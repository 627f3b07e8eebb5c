#!/usr/bin/env bash
# Session 30 run A: the wgmma forward at bf16 with the fixed softmax shift at most 3 warpgroups per
# CTA (166 registers, no spill): s30a = Npad 256 only, s30b = Npad 192 and 256 (+ the CPB op's C++
# autocast guard); old = s29g (main's kernels). Forward kernel time (kernel_breakdown, 2 rounds),
# then CUDA tests on s30b, then the host time of one swapped layer (module_host), old Python +
# s29g against new Python (no autocast context around the CPB op) + s30b.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s29g_so/_C.abi3.so.xz /tmp/old.so
python tools/device/unxz.py tools/device/s30a_so/_C.abi3.so.xz /tmp/a.so
python tools/device/unxz.py tools/device/s30b_so/_C.abi3.so.xz /tmp/b.so
S="--shape 512,4,256,32,16,16,v2 --shape 1024,6,256,32,16,16,v2 --shape 512,4,144,32,16,12,v2 --shape 512,4,256,32,16,16,v1"
for r in 1 2; do for so in old a b; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  echo "== $so round $r"
  timeout 60 python tools/kernel_breakdown.py $S --iters 20 2>&1 | grep -E "GPU time|fwd_wgmma"
done; done
cp /tmp/b.so flash_window_attn/_C.abi3.so
timeout 150 python -m pytest -q -x -m cuda tests/test_extremes.py tests/test_window_attention.py -k "bf16 or fixed_shift" 2>&1 | tail -4
timeout 30 python -m pytest -q -m cuda tests/test_cpb.py 2>&1 | tail -2
for r in 1 2; do
  patch -s -p1 -R < benchmarks/results/session30/swin_common_autocast.patch; cp /tmp/old.so flash_window_attn/_C.abi3.so
  echo "== old host round $r"; timeout 60 python tools/module_host.py --iters 300 2>&1 | grep "host issue"
  patch -s -p1 < benchmarks/results/session30/swin_common_autocast.patch; cp /tmp/b.so flash_window_attn/_C.abi3.so
  echo "== new host round $r"; timeout 60 python tools/module_host.py --iters 300 2>&1 | grep "host issue"
done
