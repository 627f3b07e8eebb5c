#!/usr/bin/env bash
# Session 47 run B (H200): run A's build (carried, .devbuild/s47a.so.xz). The window16 training step
# as one CUDA graph (tools/graph_step_timeline.py, new): span, busy and idle time per replay, the idle
# time by the kernel that ends each gap; swapped and ceiling, then swapped with FWA_WINDOW_PDL=0.
export PYTHONPATH=$PWD
t0=$(date +%s)
python -c "import lzma; open('flash_window_attn/_C.abi3.so','wb').write(lzma.open('.devbuild/s47a.so.xz').read())"
timeout 200 python tools/graph_step_timeline.py --variants swap,ceiling --top 30 2>&1 | grep -v -i warn > $OUT/runB-timeline.txt
echo "timeline rc $? $(( $(date +%s) - t0 )) s"
FWA_WINDOW_PDL=0 timeout 120 python tools/graph_step_timeline.py --variants swap --top 30 2>&1 | grep -v -i warn > $OUT/runB-timeline-nopdl.txt
echo "nopdl rc $? $(( $(date +%s) - t0 )) s"
grep "==" $OUT/runB-timeline*.txt
