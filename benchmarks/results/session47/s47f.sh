#!/usr/bin/env bash
# Session 47 run F (H200): run C's build (carried; main's kernels). The window16 swapped training step
# as a CUDA graph (tools/graph_step_timeline.py) under the window op's A/B switches, 2 rounds:
# default, FWA_WINDOW_BWD_Q_WG=0 (mma.sync query side at Npad 256), FWA_FWD_WG=2 / 3 (warpgroups per
# forward CTA; the plan's 4 otherwise).
export PYTHONPATH=$PWD
t0=$(date +%s)
python -c "import lzma; open('flash_window_attn/_C.abi3.so','wb').write(lzma.open('.devbuild/s47c.so.xz').read())"
for r in 1 2; do
  for e in DEFAULT=1 FWA_WINDOW_BWD_Q_WG=0 FWA_FWD_WG=2 FWA_FWD_WG=3; do
    echo "round $r $e: $(env $e timeout 60 python tools/graph_step_timeline.py --variants swap --top 3 2>&1 | grep '==' | sed 's/.*replays)://')"
  done
done | tee $OUT/runF-switches.txt
echo "end $(( $(date +%s) - t0 )) s"
