#!/usr/bin/env bash
# session 20 run 3: ncu (full set) of the N = 256 forward and the tiled backward kernels, build a.
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s20a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
timeout 400 ncu -k regex:"wgmma|bwd_kv|bwd_q|preprocess|dsum|build_bm" -c 6 --set full python tools/device/s20fb.py 512 4 256 16 > $OUT/ncu_full.txt 2>&1
echo rc $?; wc -l $OUT/ncu_full.txt
grep -E "^  [a-z_]+.*\(|Duration|Issue Slots Busy|Executed Ipc A|Warp Cycles Per Issued|Achieved Occupancy|Registers Per|Theoretical Occ|Memory Throughput|DRAM Throughput|L2 Hit|L1/TEX Hit|Stall" $OUT/ncu_full.txt | head -120
