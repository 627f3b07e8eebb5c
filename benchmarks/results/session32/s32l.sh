#!/usr/bin/env bash
# Session 32 run L: build s32k = s32j + the row-tail kernel walking the windows in the reverse of
# the main grid's order (last chunk, last window first: their k and v the likeliest in L2).
# window_bitwise s32j vs s32k (the order changes no result), the row-tail tests, the forward
# s32j / s32k alternately, 2 rounds.
set -u
export PYTHONPATH=$PWD
R=benchmarks/results/session32
python tools/device/unxz.py tools/device/s32j_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runL-bitwise.txt 2>&1
python tools/device/unxz.py tools/device/s32k_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runL-bitwise.txt 2>&1; echo "cmp rc $?" >> $OUT/runL-bitwise.txt
tail -2 $OUT/runL-bitwise.txt
timeout 200 python -m pytest -q tests/test_window_attention.py -k "row_tail" > $OUT/runL-pytest.txt 2>&1; echo "rc $?" >> $OUT/runL-pytest.txt
tail -2 $OUT/runL-pytest.txt
for r in 1 2; do
  for b in s32j s32k; do
    python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
    python $R/row_tail_ab.py 2>&1 | grep -v N196 | sed "s/^/$b /"
  done
done 2>&1 | tee $OUT/runL-order-ab.txt
