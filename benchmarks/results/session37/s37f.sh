#!/usr/bin/env bash
# Session 37 run F (no build): GPU time per swapped eager training step (tools/model_profile.py, bs
# 64, 5 steps), session 36's build (s36g) against this session's (s37e), 2 rounds:
# swinv2_base_window12_192 (N = 144 in stages 1-3) and swinv2_tiny_window16_256 (N = 256).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s37e_so/_C.abi3.so.xz /tmp/s37e.so
python tools/device/unxz.py tools/device/s36g_so/_C.abi3.so.xz /tmp/s36g.so
for r in 1 2; do
  for b in s36g s37e; do
    cp /tmp/$b.so flash_window_attn/_C.abi3.so
    for m in swinv2_base_window12_192 swinv2_tiny_window16_256; do
      echo "== round $r $b $m train"
      timeout 120 python tools/model_profile.py --model $m --variants swap --mode train --steps 5 --top 3 2>&1 | grep -v Warning | grep "GPU time per step"
    done
  done
done | tee $OUT/runF-model.txt
cp /tmp/s37e.so flash_window_attn/_C.abi3.so
