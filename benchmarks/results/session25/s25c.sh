#!/usr/bin/env bash
# Session 25 run C: s25d = s25c's overlap (S of the next block and P v of this block in flight) at 4
# warpgroups / 128 registers, made to fit by dropping the ones columns of [v | 1] (P v as m64n32k16;
# row sums of P by FADD, fp32) against s24b and s25c (3 warpgroups, 168 registers).
export PYTHONPATH=$PWD
S="--shape 512,4,256,32,16,16,v2 --shape 1024,6,256,32,16,16,v2 --shape 512,4,144,32,16,12,v2 --shape 1024,4,100,32,16,10,v2 --shape 4096,3,64,32,64,8,v2"
for r in 1 2; do for b in s24b s25d s25c; do
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  echo "== round $r build $b"
  timeout 80 python tools/kernel_breakdown.py $S 2>&1 | grep -E "GPU time|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
python tools/device/unxz.py tools/device/s25d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
K="grid_cuda or full_featured or clustered or all_masked or shift_mask or many_windows_per_cta or deterministic"
timeout 150 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_extremes.py -k "$K" -x 2>&1 | tail -4 > $OUT/tests.txt
cat $OUT/tests.txt
