#!/usr/bin/env bash
# Session 41 run F (s41e, carried): bench_window_attention config 3 with every peer (JSON / PNG /
# log); compute-sanitizer memcheck / racecheck / synccheck over the window family (its N = 144
# d = 24 problem runs the folded row tail); the window suite's subprocess tests; one after another
# (run B's and D's children aborted at exit only beside the sanitizer).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s41e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 300 python benchmarks/bench_window_attention.py --configs 3 --out $OUT/window-session41-config3-s41e.json > $OUT/window-session41-config3-s41e.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
tail -12 $OUT/window-session41-config3-s41e.log
SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family window" timeout 200 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runF-san.txt 2>&1; echo "rc $?" >> $OUT/runF-san.txt
rm -f $OUT/san/*.log $OUT/san/*.out
tail -n 5 $OUT/runF-san.txt
echo "sanitizers done $(( $(date +%s) - t0 )) s"
timeout 330 python -m pytest -q -m cuda tests/test_window_attention.py -k subprocess > $OUT/runF-sub.txt 2>&1; echo "rc $?" >> $OUT/runF-sub.txt
tail -n 3 $OUT/runF-sub.txt
grep -h -E "^FAILED|^ERROR" $OUT/runF-*.txt | head
echo "total $(( $(date +%s) - t0 )) s"
