#!/usr/bin/env bash
# Session 29 run L (s29g): run K's host CPU operators for the eager ceiling (to set against the eager
# swapped step's), and the compiled swapped step's expensive fill_ / copy_ calls with their parents.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s29g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 150 python benchmarks/results/session29/host_ops.py ceiling train 2>&1 | grep -v Warn
timeout 250 python benchmarks/results/session29/fill_probe.py swap_compile 2>&1 | grep -v Warn | head -30
