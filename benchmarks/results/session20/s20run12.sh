#!/usr/bin/env bash
# session 20 run 12: build g: host issue time vs wall of (256,12,64) and (4096,3,64), PDL on / off, 2 rounds.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s20g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for r in 1 2; do for P in 1 0; do for C in 6 0; do
FWA_WINDOW_PDL=$P timeout 60 python tools/device/s19host.py pdl$P $C 2>&1 | grep "^\[" | tee -a $OUT/summary.txt
done; done; done
FWA_WINDOW_PDL=1 timeout 60 python tools/device/s19host.py pdl1 6 2>&1 | grep -E "cudaLaunch|Self CPU|Name" | tee -a $OUT/summary.txt
FWA_WINDOW_PDL=0 timeout 60 python tools/device/s19host.py pdl0 6 2>&1 | grep -E "cudaLaunch|Self CPU|Name" | tee -a $OUT/summary.txt
