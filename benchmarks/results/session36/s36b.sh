#!/usr/bin/env bash
# Session 36 run B: ncu of window_attn_bwd_kv_tail_kernel (s36a) at bench config 3, bf16, no PDL:
# stall reasons, and the per-instruction warp-state samples (source page, SASS) for the hot spots.
set -u
export PYTHONPATH=$PWD
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
python tools/device/unxz.py tools/device/s36a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
FWA_WINDOW_PDL=0 timeout 200 $NCU --clock-control none --kernel-name regex:kv_tail --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats --section SourceCounters \
  --metrics smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio \
  -o /tmp/tail python benchmarks/results/session33/one_step.py 3 > $OUT/runB-ncu-log.txt 2>&1
echo "rc $?"
$NCU -i /tmp/tail.ncu-rep --print-details all > $OUT/runB-ncu-tail.txt 2>&1
$NCU -i /tmp/tail.ncu-rep --page source --csv --print-source sass > $OUT/runB-ncu-source.csv 2>&1
ls -la $OUT
grep -E "Duration|Executed Instructions |Achieved Occupancy|Theoretical Occupancy|Issued Warp Per|L2 Hit Rate|DRAM Throughput|Memory Throughput|Block Limit|Registers Per|Grid Size|Waves" $OUT/runB-ncu-tail.txt | head -20
grep -E "issue_stalled" $OUT/runB-ncu-tail.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k3 -n -r | head -10
