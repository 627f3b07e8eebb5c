#!/usr/bin/env bash
# Session 25 run K: the key-range dq parts summed by each group's last CTA (arrival counters; the
# parts still in L2) instead of a separate kernel (s25k) against s25h; then the key-range, dropout
# N = 300, memory, forms and determinism tests on s25k.
export PYTHONPATH=$PWD
S="--shape 128,6,576,32,4,24,v2 --shape 32,4,1024,32,4,32,v2 --shape 256,4,400,32,4,20,v2"
for b in s25h s25k s25h s25k; do
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  echo "== build $b"
  timeout 50 python tools/kernel_breakdown.py $S 2>&1 | grep -E "GPU time|bwd_q|reduce"
done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
python tools/device/unxz.py tools/device/s25k_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 150 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py -k "key_ranges or backward_memory or d32_forms or deterministic or (matches and 300) or n1024" 2>&1 | tail -4
