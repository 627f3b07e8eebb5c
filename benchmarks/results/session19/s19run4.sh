#!/usr/bin/env bash
# session 19 run 4: build b (= 93b5474 kernels): sanitizers (window family), window bench configs 0,5,6,7,8, models window8.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s19b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 150 bash tests/gpu/run_sanitizers.sh /tmp/san > $OUT/san.log 2>&1
echo san rc $? | tee $OUT/summary.txt; grep -iE "error summary|problems|errors" $OUT/san.log | tail -6 | tee -a $OUT/summary.txt
timeout 240 python benchmarks/bench_window_attention.py --configs 0,5,6,7,8 --out $OUT/win-s19-n64.json > $OUT/win-s19-n64.log 2>&1
echo bench rc $? | tee -a $OUT/summary.txt
grep -A14 "^Bars" $OUT/win-s19-n64.log | tee -a $OUT/summary.txt
timeout 200 python benchmarks/bench_models.py --models swinv2_tiny_window8_256 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 180 --out $OUT/models-s19-window8.json > $OUT/models-s19-window8.log 2>&1
echo models rc $? | tee -a $OUT/summary.txt
tail -12 $OUT/models-s19-window8.log
