#!/usr/bin/env bash
# Session 47 run G (H200): run C's build (carried; main's kernels). ncu of the CPB op's kernels at
# window16's shapes (ncu_cpb.py; H = 3, then 12; the second call of each, with the cached CSR).
export PYTHONPATH=$PWD
t0=$(date +%s)
python -c "import lzma; open('flash_window_attn/_C.abi3.so','wb').write(lzma.open('.devbuild/s47c.so.xz').read())"
R=smsp__average_warps_issue_stalled
M=""
for r in barrier long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle lg_throttle not_selected selected no_instruction membar; do
  M="$M,${R}_${r}_per_issue_active.ratio"
done
timeout 200 ncu -k "regex:cpb_(mlp|gather|dtable)" --launch-skip 4 -c 8 --section SpeedOfLight --section Occupancy \
  --section LaunchStats --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  --metrics "${M#,},smsp__inst_executed.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum" \
  python benchmarks/results/session47/ncu_cpb.py > $OUT/runG-ncu.txt 2>&1
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -E "cpb_|Duration|Elapsed Cycles|SM Frequency|Registers Per|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued|stalled|inst_executed|sectors|requests|Grid Size|Waves Per SM|Memory Throughput" $OUT/runG-ncu.txt | grep -v "^==" | head -150
