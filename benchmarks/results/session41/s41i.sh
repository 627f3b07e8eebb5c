#!/usr/bin/env bash
# Session 41 run I (timing only, s41e): the folded row tail's forward under the plan (2 CTAs of 2
# warpgroups per SM) against one CTA of 4 warpgroups (FWA_FWD_WG=4: the strip shared by 4), config
# 3 and V1 (1024, 4, 144), 2 rounds.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s41e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2; do
  python benchmarks/results/session37/fwd_ab.py plan 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
  FWA_FWD_WG=4 python benchmarks/results/session37/fwd_ab.py wg4 3 1024,4,144,32,16,12,v1 2>&1 | grep -v -i warn
done | tee $OUT/runI-fwd.txt
