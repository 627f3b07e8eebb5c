#!/usr/bin/env bash
# Session 34 run C: ncu of the query-side kernel (bwd_q_wg) at bench config 3 (N = 144), bf16, no
# PDL: build s33n (main), s34b with FWA_WINDOW_BWD_Q_DSUM=0 (dsum kernel), s34b default (the query
# side sums D from the partials): why run B's folded form is slower.
set -u
export PYTHONPATH=$PWD
NCU=$(which ncu || ls /usr/local/cuda/bin/ncu)
run() {  # label build env...
  local label=$1 b=$2; shift 2
  python tools/device/unxz.py tools/device/${b}_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
  env FWA_WINDOW_PDL=0 "$@" timeout 150 $NCU --clock-control none --kernel-name regex:bwd_q_wg --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section InstructionStats --section LaunchStats --section MemoryWorkloadAnalysis \
      python benchmarks/results/session33/one_step.py 3 > $OUT/runC-ncu-$label.txt 2>&1
  echo "$label rc $?"
  grep -E "Duration|Executed Instructions |Achieved Occupancy|Block Limit Shared|Warp Cycles Per Issued|Issued Warp|Registers Per|Dynamic Shared|Shared Memory Configuration Size|L1/TEX Hit|Driver Shared" $OUT/runC-ncu-$label.txt | head -20
}
run s33n s33n
run s34b-none s34b FWA_WINDOW_BWD_Q_DSUM=0
run s34b-fold s34b FWA_WINDOW_BWD_Q_DSUM=1
