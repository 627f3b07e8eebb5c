#!/usr/bin/env bash
# session 19 run 8: ncu of the wgmma forward at (4096,3,49) V2 + bias + mask, builds b and d.
export PYTHONPATH=$PWD
for V in b d; do
python tools/device/unxz.py tools/device/s19${V}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
S18T_ITERS=1 timeout 200 ncu -k regex:wgmma -c 1 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,smsp__inst_executed.sum,l1tex__t_bytes.sum,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_issue_stalled_long_scoreboard.ratio,smsp__average_warp_latency_issue_stalled_barrier.ratio,smsp__average_warp_latency_issue_stalled_lg_throttle.ratio,smsp__average_warp_latency_issue_stalled_membar.ratio,smsp__average_warp_latency_issue_stalled_wait.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum python tools/device/s18t.py $V 4096 3 49 64 > $OUT/ncu_$V.txt 2>&1
grep -E "wgmma|gpu__|dram__|lts__|smsp__|l1tex__|sm__" $OUT/ncu_$V.txt | head -30
done
