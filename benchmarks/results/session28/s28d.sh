#!/usr/bin/env bash
# Session 28 run D (s28a's build): host time of one attention layer's training fwd + bwd, timm vs
# swapped vs ceiling (tools/module_host.py), window 16 (N = 256, H = 3) and window 8 (N = 64, H = 24).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s28a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 120 python tools/module_host.py --windows 4 --window 16 --heads 3 > $OUT/module_host_w16.txt 2>&1
cat $OUT/module_host_w16.txt | head -150
timeout 60 python tools/module_host.py --windows 1 --window 8 --dim 768 --heads 24 --iters 300 2>&1 | grep round > $OUT/module_host_w8.txt
cat $OUT/module_host_w8.txt
