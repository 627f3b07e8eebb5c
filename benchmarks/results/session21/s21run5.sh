#!/usr/bin/env bash
# session 21 run 5: ncu of the causal d = 64 config (build s21c): forward, key side, query side.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s21c_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 200 ncu --set full -k regex:local_attn -c 4 python tools/device/s21lfb.py 4 > $OUT/ncu-causal.txt 2>&1
echo ncu rc $? | tee $OUT/summary.txt
grep -E "local_attn_|Duration|Memory Throughput|L2 Cache Throughput|DRAM Throughput|L1/TEX Hit|L2 Hit Rate|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Registers Per|Achieved Occupancy|Theoretical Occupancy|Executed Ipc A|lts__t|Max Bandwidth|Mem Busy|Warp Cycles Per Issued" $OUT/ncu-causal.txt | tee -a $OUT/summary.txt | head -120
