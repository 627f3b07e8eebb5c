#!/usr/bin/env bash
# Session 23 run F: the key side on bwd_kv_wg_kernel.cuh (Npad 256 default): window CUDA suites,
# A/B kernel times, window-family sanitizers.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s23f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 260 python -m pytest -q -x -m cuda tests/test_window_attention.py tests/test_dropout.py tests/test_extremes.py 2>&1 | tail -30 | tee $OUT/tests.txt
for m in 0 1 all; do echo "== FWA_WINDOW_BWD_KV_WG=$m"; FWA_WINDOW_BWD_KV_WG=$m FWA_WINDOW_BWD_Q_WG=$m timeout 80 python tools/kernel_breakdown.py --configs 1,2 2>&1 | grep -E "GPU time|bwd_kv|bwd_q|preprocess|dsum|fwd|reduce"; done 2>&1 | tee $OUT/kb.txt
SANITIZER_TOOLS="memcheck racecheck" SELECTION_ARGS="--family window" timeout 130 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
echo san rc $? | tee -a $OUT/kb.txt; tail -4 $OUT/san.txt | tee -a $OUT/kb.txt
