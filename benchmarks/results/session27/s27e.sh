#!/usr/bin/env bash
# Session 27 run E (run D's build): the local CUDA suites with both warp-specialised backward
# kernels on every grid (run D's stopped at its time limit on the last test), the slowest tests;
# sliding configs 0, 1, 4 with every peer; the host profile of config 1 (win(256,256), host-bound).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s27d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_LOCAL_BWD_KV_WS=1 FWA_LOCAL_BWD_Q_WS=1 timeout 300 python -m pytest -q -m cuda --durations=6 tests/test_local_attention.py tests/test_local_extremes.py tests/test_local_random.py tests/test_local_tile_ranges.py 2>&1 | tail -12 > $OUT/tests.txt
cat $OUT/tests.txt
timeout 200 python benchmarks/bench_sliding_window.py --configs 0,1,4 --no-scaling --out $OUT/sliding-nvidia-h100-80gb-hbm3-session27-configs014.json > $OUT/bench_sliding014.log 2>&1
echo bench rc $?; grep -E "^(block|win|causal)|PASS|FAIL|summary" $OUT/bench_sliding014.log
timeout 60 python tools/host_profile_local.py --config 1 > $OUT/host1.txt 2>&1
head -45 $OUT/host1.txt
