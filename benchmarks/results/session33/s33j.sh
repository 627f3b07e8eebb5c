#!/usr/bin/env bash
# Session 33 run J: build s33h, swinv2_base_window12_192 swapped eager, GPU busy time per inference
# and training step (tools/model_profile.py, 5 steps), the forward's bias+mask rows built
# (FWA_WINDOW_FWD_DIRECT_BM=0) / direct (default), alternately, three rounds.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s33h_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2 3; do
  for dm in 0 1; do
    for m in infer train; do
      echo "== round $r DIRECT_BM=$dm $m"
      FWA_WINDOW_FWD_DIRECT_BM=$dm timeout 120 python tools/model_profile.py --model swinv2_base_window12_192 --variants swap --mode $m --steps 5 --top 4 2>&1 | grep -v Warning | grep -A4 "GPU time per step"
    done
  done
done
