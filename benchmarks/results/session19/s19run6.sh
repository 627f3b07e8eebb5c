#!/usr/bin/env bash
# session 19 run 6: host time of (256,12,64) fwd+bwd with / without the Npad-64 wgmma forward.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s19b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for S in 0 1; do FWA_WINDOW_WGMMA_SMALL=$S timeout 100 python tools/device/s19host.py small$S 6 > $OUT/host$S.txt 2>&1; grep "^\[" $OUT/host$S.txt; done
