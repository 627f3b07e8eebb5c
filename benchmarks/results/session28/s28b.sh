#!/usr/bin/env bash
# Session 28 run B (s28a's build): the window16 eager training step, swapped vs ceiling:
# (1) every kernel of ours per step (model_profile, all names); (2) wall vs host issue vs GPU time
# per step (step_profile); (3) bench_models eager swap / ceiling train (the bar's ratio, this call).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 150 python tools/model_profile.py --variants swap --mode train --steps 5 --top 200 > $OUT/model_profile_swap.txt 2>&1
grep -E "==|fwa|Memset|Fill" $OUT/model_profile_swap.txt
timeout 200 python tools/step_profile.py swap,ceiling > $OUT/step_profile.txt 2>&1
cat $OUT/step_profile.txt | head -120
timeout 200 python benchmarks/bench_models.py --models swinv2_tiny_window16_256 --variants swap,ceiling --modes train --out $OUT/models_w16_eager.json > $OUT/models_w16_eager.log 2>&1
tail -30 $OUT/models_w16_eager.log
