#!/usr/bin/env bash
# Session 27 run F (run D's build, both warp-specialised backward kernels): sliding configs 2, 3
# with every peer and the scaling check; the per-kernel breakdown of every config.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s27d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 400 python benchmarks/bench_sliding_window.py --configs 2,3 --out $OUT/sliding-nvidia-h100-80gb-hbm3-session27-configs23-kvws.json > $OUT/bench_sliding23.log 2>&1
echo bench rc $?; grep -E "^(block|win|causal)|PASS|FAIL|summary" $OUT/bench_sliding23.log
timeout 150 python tools/local_breakdown.py --configs 2,3,1,4,0 --impls ours > $OUT/kb.txt 2>&1
grep -v Warn $OUT/kb.txt
