#!/usr/bin/env bash
# Session 47 run E (H200): run C's build (carried; its kernels are main's). ncu of the window op's
# three big kernels at swinv2_tiny_window16_256's stage-1 shape (ncu_window.py): speed of light,
# occupancy, scheduler and warp-state sections, and the stall reasons per issued instruction.
export PYTHONPATH=$PWD
t0=$(date +%s)
python -c "import lzma; open('flash_window_attn/_C.abi3.so','wb').write(lzma.open('.devbuild/s47c.so.xz').read())"
R=smsp__average_warps_issue_stalled
M=""
for r in barrier long_scoreboard short_scoreboard wait math_pipe_throttle mio_throttle lg_throttle not_selected selected dispatch_stall no_instruction membar sleeping branch_resolving misc tex_throttle drain imc_miss; do
  M="$M,${R}_${r}_per_issue_active.ratio"
done
timeout 240 ncu -k "regex:window_attn_(fwd_wgmma|bwd_kv_kernel|bwd_q_wg)" -c 3 --section SpeedOfLight --section Occupancy \
  --section SchedulerStats --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis \
  --metrics "${M#,},smsp__inst_executed.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active" \
  python benchmarks/results/session47/ncu_window.py > $OUT/runE-ncu.txt 2>&1
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
grep -E "window_attn|Duration|Registers Per|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|stalled|inst_executed|gmma|pipe_xu|Block Limit (Reg|Sha)" $OUT/runE-ncu.txt | grep -v "^==" | head -120
