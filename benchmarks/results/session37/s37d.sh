#!/usr/bin/env bash
# Session 37 run D (no build, s37c's .so): the SIGSEGV's C++ stack (torch's fatal-signal trace, gdb
# if present); the benchmark at configs 3 and 1 (every peer).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s37c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python benchmarks/results/session37/segv_gdb.py > $OUT/runD-segv.txt 2>&1; echo "rc $?" >> $OUT/runD-segv.txt
if command -v gdb > /dev/null; then
  timeout 120 gdb -batch -ex run -ex bt --args python benchmarks/results/session37/segv_gdb.py > $OUT/runD-gdb.txt 2>&1
else echo "no gdb" > $OUT/runD-gdb.txt; fi
tail -40 $OUT/runD-segv.txt | cut -c1-200
grep -E "^#" $OUT/runD-gdb.txt | head -25 | cut -c1-200
timeout 300 python benchmarks/bench_window_attention.py --configs 3,1 --out $OUT/runD-bench.json > $OUT/runD-bench.log 2>&1
echo "bench rc $?"
tail -12 $OUT/runD-bench.log
