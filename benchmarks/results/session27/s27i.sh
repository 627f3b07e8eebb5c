#!/usr/bin/env bash
# Session 27 run I: the backward's preprocess with 64 rows per CTA instead of 256 (latency-bound
# on the small problems): outputs bitwise against run H's build (default switches), kernel times
# against it, the local extremes suite (grids of more than 65535 CTAs) and the grid test.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s27h_so/_C.abi3.so.xz /tmp/h.so
python tools/device/unxz.py tools/device/s27i_so/_C.abi3.so.xz /tmp/i.so
cp /tmp/h.so flash_window_attn/_C.abi3.so
timeout 100 python tools/local_bitwise.py save /tmp/ref_def.pt > $OUT/bitwise.txt 2>&1
cp /tmp/i.so flash_window_attn/_C.abi3.so
echo "== 64-row preprocess vs run H" >> $OUT/bitwise.txt
timeout 100 python tools/local_bitwise.py cmp /tmp/ref_def.pt >> $OUT/bitwise.txt 2>&1; echo "rc $?" >> $OUT/bitwise.txt
grep -v saved $OUT/bitwise.txt
for r in 1 2; do for so in h i; do
  cp /tmp/$so.so flash_window_attn/_C.abi3.so
  echo "== round $r build $so"
  timeout 80 python tools/local_breakdown.py --configs 2,1,4,0 --impls ours 2>&1 | grep -E "==|prep"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
cp /tmp/i.so flash_window_attn/_C.abi3.so
timeout 200 python -m pytest -q -m cuda tests/test_local_extremes.py tests/test_local_attention.py -k "not other_kernels" 2>&1 | tail -2 > $OUT/tests.txt
cat $OUT/tests.txt
