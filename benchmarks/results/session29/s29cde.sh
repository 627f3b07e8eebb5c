#!/usr/bin/env bash
# Session 29 runs C, D, E: the position-bias op's kernels, old (s28k = main) against new ($1: the
# build s29c, s29d or s29e under tools/device; benchmarks/NOTES.md, session 29): kernel times
# (tools/cpb_op_bench.py); the new build's outputs against old (runs C, D: bitwise equal; run E: not,
# the MLP backward's sums in another order) and against its own rerun (determinism); CPB / swap /
# module CUDA tests; with $2 = profile also the window16 swapped training step's CPB kernels.
# (Run C ran the tests without test_modules.py and the profile with --top 12; run D no profile.)
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28k_so/_C.abi3.so.xz /tmp/old.so
python tools/device/unxz.py tools/device/$1_so/_C.abi3.so.xz /tmp/new.so
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
if [ "$2" = profile ]; then
  timeout 150 python tools/model_profile.py --variants swap --mode train --top 60 2>&1 | grep -E "==|cpb"
fi
