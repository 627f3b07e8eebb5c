#!/usr/bin/env bash
# Session 27 run C (run B's build): local sanitizers with the warp-specialised query side on every
# grid; sliding configs 2, 3 with every peer and the scaling check.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s27b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_LOCAL_BWD_Q_WS=1 SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family local" timeout 170 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/san.txt 2>&1
tail -4 $OUT/san.txt
timeout 400 python benchmarks/bench_sliding_window.py --configs 2,3 --out $OUT/sliding-nvidia-h100-80gb-hbm3-session27-configs23.json > $OUT/bench_sliding23.log 2>&1
echo bench rc $?; grep -E "^(block|win|causal)|PASS|FAIL|summary|scal" $OUT/bench_sliding23.log
