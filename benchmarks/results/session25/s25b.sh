#!/usr/bin/env bash
# Session 25 run B: window wgmma forward with S of the next block AND P v of this block both in
# flight (s25c: 3 warpgroups per CTA at up to 168 registers for Npad >= 128, no serialisation) against
# s24b (4 warpgroups, 128 registers) and s24b forced to 3 warpgroups (FWA_FWD_WG=3).
export PYTHONPATH=$PWD
S="--shape 512,4,256,32,16,16,v2 --shape 1024,6,256,32,16,16,v2 --shape 512,4,144,32,16,12,v2 --shape 1024,4,100,32,16,10,v2 --shape 128,6,576,32,4,24,v2"
for r in 1 2; do for b in s24b s24b:3 s25c; do
  so=${b%%:*}; wg=${b#*:}; [ "$wg" = "$b" ] && wg=""
  python tools/device/unxz.py tools/device/${so}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  echo "== round $r build $b"
  FWA_FWD_WG=$wg timeout 80 python tools/kernel_breakdown.py $S 2>&1 | grep -E "GPU time|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
python tools/device/unxz.py tools/device/s25c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
K="grid_cuda or full_featured or clustered or all_masked or shift_mask or many_windows_per_cta or deterministic"
timeout 150 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_extremes.py -k "$K" -x 2>&1 | tail -4 > $OUT/tests.txt
cat $OUT/tests.txt
