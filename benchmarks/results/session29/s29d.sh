#!/usr/bin/env bash
# Session 29 run D: the position-bias op's backward kernels (dtable: entries 2-4 at a time; MLP
# backward: next chunk prefetched, every quantity combined after one barrier instead of a barrier
# pair each; the gather as on main): old (s28k = main) against new (s29d): kernel times
# (tools/cpb_op_bench.py), outputs bitwise, CPB + swap CUDA tests.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28k_so/_C.abi3.so.xz /tmp/old.so
python tools/device/unxz.py tools/device/s29d_so/_C.abi3.so.xz /tmp/new.so
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

