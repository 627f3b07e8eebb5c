#!/usr/bin/env bash
# Session 25 run H: the key-range dq parts' budget at 256 MiB (s25h) against 128 MiB (s25g): kernel
# time at N = 400, 576, 1024, then the key-range, memory and forms tests on s25h.
export PYTHONPATH=$PWD
S="--shape 128,6,576,32,4,24,v2 --shape 32,4,1024,32,4,32,v2 --shape 256,4,400,32,4,20,v2 --shape 256,4,576,32,16,24,v2"
for r in 1 2; do for b in s25g s25h; do
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  echo "== round $r build $b"
  timeout 60 python tools/kernel_breakdown.py $S 2>&1 | grep -E "GPU time|bwd_q|reduce"
done; done > $OUT/kb.txt 2>&1
cat $OUT/kb.txt
python tools/device/unxz.py tools/device/s25h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "key_ranges or backward_memory or d32_forms or n1024 or deterministic" 2>&1 | tail -4 > $OUT/tests.txt
cat $OUT/tests.txt
timeout 120 python benchmarks/bench_window_attention.py --configs 4 --out $OUT/nvidia-h100-80gb-hbm3-session25-n576.json > $OUT/bench_window.log 2>&1
echo bench rc $?; tail -8 $OUT/bench_window.log
