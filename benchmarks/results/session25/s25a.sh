#!/usr/bin/env bash
# Session 25 run A: window wgmma forward. s25a = P v of block kt - 1 overlapping block kt's logits and
# exps (one S buffer; S of kt + 1 issued with P v of kt); s25b = s25a + the strip and key factors
# stored column-permuted, read as float4. Fwd-focused CUDA tests on each, then per-kernel A/B vs s24b.
export PYTHONPATH=$PWD
K="grid_cuda or wgmma_forward or full_featured or clustered or all_masked or shift_mask or many_windows_per_cta or deterministic or forward_placements"
for b in s25b s25a; do
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  echo "== tests $b" >> $OUT/tests.txt
  timeout 140 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_extremes.py -k "$K" -x 2>&1 | tail -4 >> $OUT/tests.txt
done
cat $OUT/tests.txt
for r in 1 2; do for b in s24b s25a s25b; do
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  echo "== round $r build $b"
  timeout 80 python tools/kernel_breakdown.py --shape 512,4,256,32,16,16,v2 --shape 1024,6,256,32,16,16,v2 --shape 512,4,144,32,16,12,v2 --shape 1024,4,100,32,16,10,v2 --shape 4096,3,64,32,64,8,v2 2>&1 | grep -E "GPU time|fwd"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
