#!/usr/bin/env bash
# Session 34 run K: swinv2_base_window12_192 (N = 144 in stages 1-3) and swinv2_tiny_window16_256
# (N = 256), swapped eager, GPU busy time per training step (tools/model_profile.py,
# torch.profiler, 5 steps), build s33n (main at the session's start) and s34i (main's kernels now),
# alternately, two rounds for window12.
export PYTHONPATH=$PWD
for r in 1 2; do
  for b in s33n s34i; do
    python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
    for model in swinv2_base_window12_192 swinv2_tiny_window16_256; do
      if [ $r = 2 ] && [ $model = swinv2_tiny_window16_256 ]; then continue; fi
      echo "== round $r build $b $model train"
      timeout 120 python tools/model_profile.py --model $model --variants swap --mode train --steps 5 --top 3 2>&1 | grep -v Warning | grep "GPU time per step"
    done
  done
done
