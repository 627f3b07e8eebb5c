#!/usr/bin/env bash
# Session 29 run C: the position-bias op's kernels (gather one thread per (head, position); dtable
# entries 2-4 at a time; MLP backward prefetching its next chunk): old (s28k = main) against new
# (s29c): kernel times (tools/cpb_op_bench.py), outputs bitwise, CPB CUDA tests, window16 profile.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28k_so/_C.abi3.so.xz /tmp/old.so
python tools/device/unxz.py tools/device/s29c_so/_C.abi3.so.xz /tmp/new.so
for so in old new; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  echo "== $so"
  timeout 120 python tools/cpb_op_bench.py bench 2>&1 | grep -v Warn
done
cp /tmp/old.so flash_window_attn/_C.abi3.so
python benchmarks/results/session29/cpb_bits.py save /tmp/cpb_old.pt
cp /tmp/new.so flash_window_attn/_C.abi3.so
python benchmarks/results/session29/cpb_bits.py cmp /tmp/cpb_old.pt
timeout 200 python -m pytest -q -x -m cuda tests/test_cpb.py tests/test_swap.py 2>&1 | tail -5
timeout 150 python tools/model_profile.py --variants swap --mode train --top 12 2>&1 | grep -v Warn | head -30
