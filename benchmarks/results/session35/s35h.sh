#!/usr/bin/env bash
# Session 35 run H: ncu of window_attn_bwd_kv_tail_kernel (s35g) at bench config 3, bf16, no PDL.
set -u
export PYTHONPATH=$PWD
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
python tools/device/unxz.py tools/device/s35g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_WINDOW_PDL=0 timeout 150 $NCU --clock-control none --kernel-name regex:kv_tail --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
  --metrics smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio \
  python benchmarks/results/session33/one_step.py 3 > $OUT/runH-ncu-kvtail.txt 2>&1
echo "rc $?"
grep -E "Duration|Executed Instructions |Achieved Occupancy|Theoretical Occupancy|Issued Warp Per|L2 Hit Rate|DRAM Throughput|Memory Throughput|Block Limit|Registers Per|Grid Size|Waves" $OUT/runH-ncu-kvtail.txt | head -20
grep -E "issue_stalled" $OUT/runH-ncu-kvtail.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k3 -n -r | head -10
