#!/usr/bin/env bash
# Session 35 run I: build s35i = main + the key side's last key block (at most 16 keys, Npad 128 /
# 192) on a kernel of its own, each warp on its own (window, head) items, 16-query units with its
# copies 3 units ahead (window_attn_bwd_kv_tail_kernel; FWA_WINDOW_KV_TAIL=0: the warpgroup tile).
# Bitwise KV_TAIL=0 vs default (the same build; out and the other key blocks' dk, dv must not differ);
# kernel times and fwd+bwd step (graph) A/B at bench config 3; tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runI-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runI-build.txt
strip --strip-all -o /tmp/s35i.so flash_window_attn/_C.abi3.so && xz -T8 -3 -c /tmp/s35i.so > $OUT/s35i_C.abi3.so.xz
FWA_WINDOW_KV_TAIL=0 python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runI-bitwise.txt 2>&1
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runI-bitwise.txt 2>&1; echo "KV_TAIL default vs 0: cmp rc $?" >> $OUT/runI-bitwise.txt
grep -v "^ *equal" $OUT/runI-bitwise.txt | tail -25
for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
  env $e python benchmarks/results/session33/prof_kernels.py "$e" 3 2>&1 | grep -v -i warn | grep -E "kv_|q_wg|dsum|sum of"
done | tee $OUT/runI-prof.txt
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
done | tee $OUT/runI-graph.txt
timeout 280 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_tail or narrow_last or wgmma_forward_in or row_tail or tiled_backward or d32_forms" -x > $OUT/runI-pytest.txt 2>&1; echo "rc $?" >> $OUT/runI-pytest.txt
tail -15 $OUT/runI-pytest.txt
