#!/usr/bin/env bash
# Session 43 run D: ncu of the backward's preprocess (D rows and the bm build in one grid) at bench
# configs 3 and 1 and of the key side at config 3, on s43b (= main's kernels), bf16, no PDL: the
# preprocess moves ~31 MB (config 3) / ~55 MB (config 1) in 25 / 45 us (~1.2 TB/s): DRAM bytes,
# L2 traffic, occupancy, issue rate and stall reasons say what limits it.
set -u
export PYTHONPATH=$PWD
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
python tools/device/unxz.py tools/device/s43b_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
M=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,sm__cycles_active.avg,smsp__inst_executed.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio
run_ncu() {   # tag config kernel-regex
  FWA_WINDOW_PDL=0 timeout 150 $NCU --clock-control none --kernel-name regex:"$3" --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
    --metrics $M -o /tmp/$1 python benchmarks/results/session33/one_step.py $2 > $OUT/runD-ncu-log-$1.txt 2>&1
  echo "$1 rc $?"
  $NCU -i /tmp/$1.ncu-rep --print-details all > $OUT/runD-ncu-$1.txt 2>&1
  grep -E "window_attn|Duration|DRAM Throughput|Memory Throughput|L2 Hit Rate|Issued Warp Per|Achieved Occupancy|Theoretical Occupancy|Grid Size|Waves Per|Block Limit|dram__bytes|lts__t_bytes|inst_executed|cycles_active" $OUT/runD-ncu-$1.txt | head -30
  grep -E "issue_stalled" $OUT/runD-ncu-$1.txt | sed 's/smsp__average_warps_issue_stalled_//; s/_per_issue_active.ratio//' | sort -k3 -n -r | head -8
}
run_ncu pre3 3 "bwd_preprocess"
run_ncu pre1 1 "bwd_preprocess"
run_ncu kv3 3 "bwd_kv_kernel"
