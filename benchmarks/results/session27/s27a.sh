#!/usr/bin/env bash
# Session 27 run A: where the sliding fwd+bwd step's event time goes beyond its kernels (ours and
# FlexAttention): tools/step_gaps.py on configs 2, 4, 0; and the per-kernel breakdown of ours and
# flex on config 2 (the d = 128 backward against FlexAttention's).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s26g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 300 python tools/step_gaps.py --configs 2,4,0 --impls ours,flex > $OUT/gaps.txt 2>&1
cat $OUT/gaps.txt | grep -v Warning
timeout 200 python tools/local_breakdown.py --configs 2,3 --impls ours,flex > $OUT/kb.txt 2>&1
cat $OUT/kb.txt | grep -v Warning
