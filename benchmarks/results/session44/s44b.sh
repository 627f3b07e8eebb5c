#!/usr/bin/env bash
# Session 44 run B: host time of the compiled swapped window16 model against the compiled ceiling
# (run A: inference issued in 7.38 against 3.30 ms per step), main's kernels (s43b's .so).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s43b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 250 python benchmarks/results/session44/host_compile.py swap_compile,ceiling_compile,swap infer > $OUT/runB-infer.txt 2>&1
echo "infer rc $? $(( $(date +%s) - t0 )) s"
grep -rl "flash_window_attn" /tmp/torchinductor_*/ 2>/dev/null | head -5 > $OUT/runB-codefiles.txt
f=$(grep -l "window_attention" $(cat $OUT/runB-codefiles.txt) 2>/dev/null | head -1)
[ -n "$f" ] && cp "$f" $OUT/runB-inductor-code.py
grep -v -i warn $OUT/runB-infer.txt | head -150
