#!/usr/bin/env bash
# Session 28 run F: the window backward's preprocess with 4 rows per thread (s28f) against one
# (s28a): (1) outputs and every gradient bitwise (tools/window_bitwise.py); (2) per-kernel GPU time
# of fwd+bwd, benchmark configs 1-4 (N 256, 256, 144, 576), 2 rounds A/B; (3) window CUDA suites.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz /tmp/a.so
python tools/device/unxz.py tools/device/s28f_so/_C.abi3.so.xz /tmp/f.so
cp /tmp/a.so flash_window_attn/_C.abi3.so
timeout 100 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/bitwise.txt 2>&1
cp /tmp/f.so flash_window_attn/_C.abi3.so
echo "== 4-row preprocess vs run A's build" >> $OUT/bitwise.txt
timeout 100 python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
cat $OUT/bitwise.txt
for r in 1 2; do for so in a f; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  echo "== round $r build $so"
  timeout 100 python tools/kernel_breakdown.py --configs 1,2,3,4 2>&1 | grep -E "GPU time|preprocess"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
cp /tmp/f.so flash_window_attn/_C.abi3.so
timeout 280 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_extremes.py 2>&1 | tail -3 > $OUT/tests.txt
cat $OUT/tests.txt
