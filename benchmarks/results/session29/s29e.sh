#!/usr/bin/env bash
# Session 29 run E: the position-bias op's backward, run D's kernels plus the MLP backward on 4
# columns per block (128 blocks for hidden 512, one row per thread and chunk; 8 columns: 64 blocks):
# old (s28k = main) against new (s29e): kernel times, outputs against old (not bitwise: the dw sums'
# order changed; the tests hold them to float64), CPB / swap / module CUDA tests, window16 profile.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28k_so/_C.abi3.so.xz /tmp/old.so
python tools/device/unxz.py tools/device/s29e_so/_C.abi3.so.xz /tmp/new.so
for so in old new; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  echo "== $so"
  timeout 120 python tools/cpb_op_bench.py bench 2>&1 | grep -v Warn
done
cp /tmp/old.so flash_window_attn/_C.abi3.so
python benchmarks/results/session29/cpb_bits.py save /tmp/cpb_old.pt
cp /tmp/new.so flash_window_attn/_C.abi3.so
python benchmarks/results/session29/cpb_bits.py cmp /tmp/cpb_old.pt
python benchmarks/results/session29/cpb_bits.py save /tmp/cpb_new1.pt
python benchmarks/results/session29/cpb_bits.py cmp /tmp/cpb_new1.pt
timeout 300 python -m pytest -q -x -m cuda tests/test_cpb.py tests/test_swap.py tests/test_modules.py 2>&1 | tail -3
timeout 150 python tools/model_profile.py --variants swap --mode train --top 60 2>&1 | grep -E "==|cpb"
