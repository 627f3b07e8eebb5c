#!/usr/bin/env bash
# Session 24 run C1 (build s24d = s24b + key-side q/dout copies from per-thread streams + dv/dk issued
# before the column sums (non-dropout kWgmma) + the local forward's full-tile exponents as
# fma(s, sl, -max)): CUDA tests of both families, sanitizers.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s24d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 230 python -m pytest -q -m cuda tests/test_window_attention.py tests/test_dropout.py tests/test_extremes.py 2>&1 | tail -4 > $OUT/tests.txt
timeout 200 python -m pytest -q -m cuda tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -4 >> $OUT/tests.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 100 bash tests/gpu/run_sanitizers.sh $OUT/sanw > $OUT/sanw.txt 2>&1
echo sanw rc $? >> $OUT/tests.txt; tail -3 $OUT/sanw.txt >> $OUT/tests.txt
cat $OUT/tests.txt
