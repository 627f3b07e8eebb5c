#!/usr/bin/env bash
# Session 29 run K (s29g): host CPU operators per step of the compiled window16 models, swapped vs
# ceiling, training (benchmarks/results/session29/host_ops.py).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s29g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 400 python benchmarks/results/session29/host_ops.py swap_compile,ceiling_compile,swap train 2>&1 | grep -v Warn
