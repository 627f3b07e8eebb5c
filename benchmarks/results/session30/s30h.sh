#!/usr/bin/env bash
# Session 30 run H (s30i): the forward with and without PDL, 3 alternating rounds (pdl_ab.py).
export PYTHONPATH=$PWD:$PWD/benchmarks
python tools/device/unxz.py tools/device/s30i_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2 3; do for m in 1 0; do FWA_WINDOW_PDL=$m timeout 60 python benchmarks/results/session30/pdl_ab.py 2>&1 | grep PDL; done; done
