#!/usr/bin/env bash
# session 20 run 8: build e (= ea464de kernels): memcheck + racecheck on the window family, then
# models swinv2_tiny_window16_256, the four swapped / ceiling variants.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s20e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 200 bash tests/gpu/run_sanitizers.sh /tmp/san > $OUT/san.txt 2>&1
echo san rc $? | tee $OUT/summary.txt; grep -i "error summary\|problems\|ERROR SUMMARY" $OUT/san.txt | tail -6 | tee -a $OUT/summary.txt
timeout 370 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap_compile,ceiling_compile,swap,ceiling --time-budget 340 --out $OUT/models-s20-window16.json > $OUT/models-s20-window16.log 2>&1
echo models rc $? | tee -a $OUT/summary.txt
tail -16 $OUT/models-s20-window16.log
