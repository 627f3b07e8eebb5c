#!/usr/bin/env bash
# session 21 run 4: build s21c: the sliding bench configs 0, 1, 4 with every peer (README table),
# then the local CUDA tests that run the other kernels in child processes.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s21c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 330 python benchmarks/bench_sliding_window.py --configs 0,1,4 --no-scaling --out $OUT/sliding-nvidia-h100-80gb-hbm3-session21-configs014.json > $OUT/sliding-nvidia-h100-80gb-hbm3-session21-configs014.log 2>&1
echo bench rc $? | tee $OUT/summary.txt
timeout 250 python -m pytest -q -m cuda tests/test_local_attention.py -k "subprocess" 2>&1 | tail -3 | tee -a $OUT/summary.txt
tail -32 $OUT/sliding-nvidia-h100-80gb-hbm3-session21-configs014.log
