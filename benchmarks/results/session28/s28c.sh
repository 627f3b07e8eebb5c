#!/usr/bin/env bash
# Session 28 run C (s28a's build): where the window16 eager training step leaves the GPU idle,
# swapped vs ceiling (tools/model_gaps.py), and the same for inference; then bench_models eager
# swap / ceiling train again (host noise check).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 200 python tools/model_gaps.py --variants swap,ceiling --mode train --steps 5 --top 30 > $OUT/gaps_train.txt 2>&1
cat $OUT/gaps_train.txt
timeout 150 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap,ceiling --modes train --out $OUT/models_w16_eager.json > $OUT/models_w16_eager.log 2>&1
grep -E "train  |FAIL|PASS" $OUT/models_w16_eager.log
