#!/usr/bin/env bash
# Session 39 run K: the sliding-window benchmark at configs 0 (block256x16) and 4 (causal), every
# peer, no scaling check, on s39j (the deferred dq at d = 64; its default is the final form).
export PYTHONPATH=$PWD
t0=$(date +%s)
python tools/device/unxz.py tools/device/s39j_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 380 python benchmarks/bench_sliding_window.py --configs 0,4 --no-scaling --out $OUT/sliding-nvidia-h100-80gb-hbm3-session39-configs04.json > $OUT/runK-bench04.log 2>&1
echo "bench rc $? $(( $(date +%s) - t0 )) s"
grep -v -i warn $OUT/runK-bench04.log | grep -E "^(block|causal)|PASS|FAIL|summary"
