#!/usr/bin/env bash
# Session 34 run H: ncu of the backward's key side and query side on s34e (main's kernels) at bench
# configs 3 (N = 144) and 1 (N = 256), bf16, no PDL: where the time goes now (for the checklist).
set -u
export PYTHONPATH=$PWD
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
python tools/device/unxz.py tools/device/s34e_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for c in 3 1; do
  for k in bwd_kv_kernel bwd_q_wg; do
    FWA_WINDOW_PDL=0 timeout 120 $NCU --clock-control none --kernel-name regex:$k --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats \
      --metrics smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio \
      python benchmarks/results/session33/one_step.py $c > $OUT/runH-ncu-$k-c$c.txt 2>&1
    echo "== $k c$c rc $?"
    grep -E "Duration|Executed Instructions |Achieved Occupancy|Warp Cycles Per Issued|Issued Warp Per|No Eligible|Compute \(SM\) Throughput|Memory Throughput" $OUT/runH-ncu-$k-c$c.txt | head -12
    grep -E "issue_stalled" $OUT/runH-ncu-$k-c$c.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k3 -n -r | head -8
  done
done
