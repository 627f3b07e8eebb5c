#!/usr/bin/env bash
# Session 39 run I: compute-sanitizer memcheck / racecheck / synccheck over the sliding-window
# family (tests/gpu/sanitizer_selection.py --family local) on s39f with the warp-specialised
# forward on every problem (FWA_LOCAL_FWD_WS=1: the deferred P v at d = 128).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s39f_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_LOCAL_FWD_WS=1 SANITIZER_TOOLS="memcheck racecheck synccheck" SELECTION_ARGS="--family local" timeout 400 bash tests/gpu/run_sanitizers.sh $OUT/san > $OUT/runI-san.txt 2>&1
echo "rc $?" >> $OUT/runI-san.txt
cat $OUT/runI-san.txt | tail -8
echo "total $(( $(date +%s) - t0 )) s"
