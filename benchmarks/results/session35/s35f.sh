#!/usr/bin/env bash
# Session 35 run F: build s35f = s35e with the tail role's CTAs after all the others in the key
# side's grid (run E: interleaved, the two code paths stalled every CTA on instruction fetch).
# Bitwise s35d vs s35f (default: the same results); graph step A/B (FWA_WINDOW_KV_TAIL=0 / default)
# at bench config 3; kernel times; the tail-role tests.
export PYTHONPATH=$PWD
t0=$(date +%s)
MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a python setup.py build_ext --inplace > $OUT/runF-build.txt 2>&1
echo "build rc $? $(( $(date +%s) - t0 )) s" | tee -a $OUT/runF-build.txt
cp flash_window_attn/_C.abi3.so /tmp/s35f.so
strip --strip-all -o /tmp/s35f_s.so /tmp/s35f.so && xz -T8 -3 -c /tmp/s35f_s.so > $OUT/s35f_C.abi3.so.xz
python tools/device/unxz.py tools/device/s35d_so/_C.abi3.so.xz flash_window_attn/_C.abi3.so
python tools/window_bitwise.py save /tmp/ref.pt > $OUT/runF-bitwise.txt 2>&1
cp /tmp/s35f.so flash_window_attn/_C.abi3.so
python tools/window_bitwise.py cmp /tmp/ref.pt >> $OUT/runF-bitwise.txt 2>&1; echo "s35d vs s35f cmp rc $?" >> $OUT/runF-bitwise.txt
tail -2 $OUT/runF-bitwise.txt
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
done | tee $OUT/runF-graph.txt
for e in FWA_WINDOW_KV_TAIL=0 FWA_WINDOW_KV_TAIL=1; do
  env $e python benchmarks/results/session33/prof_kernels.py "$e" 3 2>&1 | grep -v -i warn | grep -E "kv_kernel|q_wg|sum of"
done | tee $OUT/runF-prof.txt
timeout 200 python -m pytest -q -m cuda tests/test_window_attention.py -k "kv_tail" > $OUT/runF-pytest.txt 2>&1; echo "rc $?" >> $OUT/runF-pytest.txt
tail -3 $OUT/runF-pytest.txt
