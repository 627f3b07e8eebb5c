#!/usr/bin/env bash
# Session 40 run H: compute-sanitizer memcheck / racecheck / synccheck over the window family
# (tests/gpu/sanitizer_selection.py --family window; its N = 144 d = 24 problem runs the row-tail
# kernel) on s40g (the 4-CTA row tail with its parts in the window's stage).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family window" timeout 540 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runH-san.txt 2>&1
echo "rc $?" >> $OUT/runH-san.txt
tail -6 $OUT/runH-san.txt
echo "total $(( $(date +%s) - t0 )) s"
