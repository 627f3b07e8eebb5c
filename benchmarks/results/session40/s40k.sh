#!/usr/bin/env bash
# Session 40 run K: ncu of the wgmma forward on s40g at bench config 1 (N = 256) and config 3
# (N = 144: the main grid and the row tail), bf16, no PDL: DRAM bytes against the HBM floor's
# (each query block's CTA reads the window's k and v: 4x at N = 256, 2x + the row tail at N = 144;
# does L2 serve the repeats?), L2 hit rate, stall reasons.
set -u
export PYTHONPATH=$PWD
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
python tools/device/unxz.py tools/device/s40g_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_bytes.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio
for spec in "1 1" "3 2"; do
  set -- $spec; c=$1; n=$2
  FWA_WINDOW_PDL=0 timeout 240 $NCU --clock-control none --kernel-name regex:"fwd_wgmma_kernel|row_tail" --launch-skip 2 --launch-count $n \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
    --metrics $M -o /tmp/fwd$c python benchmarks/results/session33/one_step.py $c > $OUT/runK-ncu-log$c.txt 2>&1
  echo "config $c rc $?"
  $NCU -i /tmp/fwd$c.ncu-rep --print-details all > $OUT/runK-ncu-fwd$c.txt 2>&1
  grep -E "window_attn|Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|Issued Warp Per|Achieved Occupancy|Grid Size|dram__bytes|lts__t_sectors|lts__t_bytes" $OUT/runK-ncu-fwd$c.txt | head -40
  grep -E "issue_stalled" $OUT/runK-ncu-fwd$c.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | head -20
done
