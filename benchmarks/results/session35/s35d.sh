#!/usr/bin/env bash
# Session 35 run D: build s35d = main + the key side's last key block on mma.sync where it holds at
# most 16 keys below Npad 256 (bwd_kv_tail_cta; FWA_WINDOW_KV_TAIL=0 keeps the warpgroup tile).
# Bitwise KV_TAIL=0 vs default (the same build; only the last key block's dk, dv may differ);
# kernel times and fwd+bwd step (graph) A/B at bench config 3; tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runD-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runD-build.txt
strip --strip-all -o /tmp/s35d.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s35d.so > $OUT/s35d_C.abi3.so.xz
FWA_WINDOW_KV_TAIL=0 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runD-bitwise.txt 2>&1
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runD-bitwise.txt 2>&1; echo "KV_TAIL default vs 0: cmp rc $?" >> $OUT/runD-bitwise.txt
grep -v "^ *equal" $OUT/runD-bitwise.txt | tail -25
for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
  env $e python benchmarks/results/session33/prof_kernels.py "$e" 3 2>&1 | grep -v -i warn | grep -E "kv_kernel|q_wg|sum of"
done | tee $OUT/runD-prof.txt
for round in 1 2; do
  for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
    env $e python -c "
import sys, torch; sys.path.insert(0, 'benchmarks'); sys.path.insert(0, 'benchmarks/results/session33')
import bench_window_attention as bw; from step_graph_ab import graph_step_us
c = bw.CONFIGS[3]
for dt in (torch.float16, torch.bfloat16):
    print(f'[$e] {c.name:28s} {str(dt)[6:]:9s} fwd+bwd step (graph) {graph_step_us(c, dt):8.1f} us', flush=True)
" 2>&1 | grep -v -i warn
  done
done | tee $OUT/runD-graph.txt
timeout 280 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_tail or narrow_last or wgmma_forward_in or row_tail or tiled_backward or d32_forms" > $OUT/runD-pytest.txt 2>&1; echo "rc $?" >> $OUT/runD-pytest.txt
tail -15 $OUT/runD-pytest.txt
