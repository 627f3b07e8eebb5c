#!/usr/bin/env bash
# Session 35 run B: build s35b = main + the tiled backward's D for the query side summed by the key
# side's last CTA of each (window, head) (BwdParams::dsum_count, counters zeroed by the preprocess)
# in place of the dsum kernel; FWA_WINDOW_KV_DSUM=0 keeps the kernel. Bitwise KV_DSUM=0 vs default
# (same build); fwd+bwd step (graph) A/B at bench configs 3, 1, 2, 4; tiled-backward tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runB-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runB-build.txt
grep -iE "error|warning.*C75" $OUT/runB-build.txt | head
strip --strip-all -o /tmp/s35b.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s35b.so > $OUT/s35b_C.abi3.so.xz
FWA_WINDOW_KV_DSUM=0 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runB-bitwise.txt 2>&1
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runB-bitwise.txt 2>&1; echo "KV_DSUM default vs 0: cmp rc $?" >> $OUT/runB-bitwise.txt
tail -2 $OUT/runB-bitwise.txt
for round in 1 2; do
  for e in FWA_WINDOW_KV_DSUM=0 FWA_WINDOW_KV_DSUM=1; do
    env $e python -c "
import sys, torch; sys.path.insert(0, 'benchmarks'); sys.path.insert(0, 'benchmarks/results/session33')
import bench_window_attention as bw; from step_graph_ab import graph_step_us
for c, dts in ((bw.CONFIGS[3], (torch.float16, torch.bfloat16)), (bw.CONFIGS[1], (torch.bfloat16,)),
               (bw.CONFIGS[2], (torch.bfloat16,)), (bw.CONFIGS[4], (torch.bfloat16,))):
    for dt in dts:
        print(f'[$e] {c.name:28s} {str(dt)[6:]:9s} fwd+bwd step (graph) {graph_step_us(c, dt):8.1f} us', flush=True)
" 2>&1 | grep -v Warn
  done
done | tee $OUT/runB-graph.txt
timeout 240 python -m pytest -q -m cuda tests/test_window_attention.py -k "tiled or dropout or determin or graph or stream or backward or narrow" -x > $OUT/runB-pytest.txt 2>&1; echo "rc $?" >> $OUT/runB-pytest.txt
tail -3 $OUT/runB-pytest.txt
