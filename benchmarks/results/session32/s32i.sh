#!/usr/bin/env bash
# Session 32 run I: build s32e, swinv2_base_window12_192 (N = 144 in stages 1-3), swapped eager,
# GPU time per inference and training step (tools/model_profile.py, torch.profiler, 5 steps),
# with session 32's forms off (FWA_WINDOW_ROW_TAIL=0 FWA_WINDOW_WGMMA_TAIL=0: session 30's kernels)
# and on (default), two rounds.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s32e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2; do
  for t in 0 1; do
    for m in infer train; do
      echo "== round $r FORMS=$t $m"
      FWA_WINDOW_ROW_TAIL=$t FWA_WINDOW_WGMMA_TAIL=$t timeout 120 python tools/model_profile.py --model swinv2_base_window12_192 --variants swap --mode $m --steps 5 --top 8 2>&1 | grep -v Warning | tail -12
    done
  done
done
