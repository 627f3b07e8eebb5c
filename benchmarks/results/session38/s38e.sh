#!/usr/bin/env bash
# Session 38 run E: ncu of the wgmma forward (s38a) at bench config 8 (d = 64, N = 64: 2.14 TB/s)
# and config 0 (d = 32, N = 64: 2.34 TB/s), bf16, no PDL: memory side and stall reasons.
set -u
export PYTHONPATH=$PWD
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
python tools/device/unxz.py tools/device/s38a_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
for c in 8 0; do
  FWA_WINDOW_PDL=0 timeout 200 $NCU --clock-control none --kernel-name regex:fwd_wgmma --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio \
    -o /tmp/fwd$c python benchmarks/results/session33/one_step.py $c > $OUT/runE-ncu-log$c.txt 2>&1
  echo "config $c rc $?"
  $NCU -i /tmp/fwd$c.ncu-rep --print-details all > $OUT/runE-ncu-fwd$c.txt 2>&1
  grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|L1/TEX Hit|Issued Warp Per|Achieved Occupancy|Registers Per|Grid Size|Dynamic Shared|dram__bytes|lts__t_sectors" $OUT/runE-ncu-fwd$c.txt | head -20
  grep -E "issue_stalled" $OUT/runE-ncu-fwd$c.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k3 -n -r | head -8
done
