#!/usr/bin/env bash
# Session 42 run F (s42b's kernels): bench config 3 with every peer; the window subprocess tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s42b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 200 python benchmarks/bench_window_attention.py --configs 3 --out $OUT/window-session42-config3-s42b.json > $OUT/window-session42-config3-s42b.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
tail -12 $OUT/window-session42-config3-s42b.log
timeout 380 python -m pytest -q -m cuda tests/test_window_attention.py -k subprocess > $OUT/runF-sub.txt 2>&1; echo "rc $?" >> $OUT/runF-sub.txt
tail -n 3 $OUT/runF-sub.txt
grep -h -E "^FAILED|^ERROR" $OUT/runF-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
