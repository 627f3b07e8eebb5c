#!/usr/bin/env bash
# Session 24 run E: ncu warp-stall breakdown (per issued instruction) of the N = 256 window kernels and the causal local kernels (a84bdbf's build).
export PYTHONPATH=$PWD
python tools/device/unxz.py tools/device/s24b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
M="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.per_cycle_active,gpu__time_duration.sum"
timeout 150 ncu --metrics "$M" -k regex:"bwd_kv|bwd_q_wg|fwd_wgmma" -c 3 python benchmarks/results/session20/s20fb.py 1024 6 256 16 > $OUT/ncu-window.txt 2>&1
timeout 150 ncu --metrics "$M" -k regex:"local_attn" -c 4 python tools/device/s24causal.py > $OUT/ncu-local.txt 2>&1
for f in $OUT/ncu-window.txt $OUT/ncu-local.txt; do grep -E "^  [a-z_ ]*kernel|void|stalled|issue_active|warps_active|duration" $f | grep -vE " 0(\.0+)?$" ; done
