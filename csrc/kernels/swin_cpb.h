// Swin V2's continuous position bias on the GPU, float32 (torch-free; the ATen glue is
// csrc/ops/swin_cpb_cuda.cpp):
//
//   h   = relu(coords w1ᵀ + b1)            (T, hidden)
//   sig = sigmoid(h w2ᵀ)                   (T, H)
//   bias[hh, e] = 16 * sig[index[e], hh]   (H, N * N), e = i * N + j
//
// and the gradients of w1, b1, w2 from dbias. The ATen formulation of the same math is ~6 kernel
// launches forward and ~29 backward (profiled on an H100: cuBLAS matmuls, a sorting index_put_,
// the elementwise steps); here it is 2 + 2. The backward's gather-reduction
//   dtable[t, hh] = sum of dbias[hh, e] over the e with index[e] = t
// is deterministic: it walks each row t's entries through a CSR inverse of index (`order`: the
// positions e sorted stably by index[e]; `offsets[t] .. offsets[t + 1]`: row t's slice of order),
// one warp per row, in a fixed order; or, where index is Swin's relative position index of its
// window (CpbParams::win_h), along the window's diagonals of dbias, also in a fixed order. The
// kernels verify the CSR (or the window's formula) against index as they read it and write NaN
// where it does not match (an index changed behind the glue's cache) or where an index value is
// outside [0, T).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace fwa {

struct CpbParams {
    const float* coords = nullptr;   // (T, 2) contiguous
    const float* w1 = nullptr;       // (hidden, 2) contiguous
    const float* b1 = nullptr;       // (hidden) or nullptr
    const float* w2 = nullptr;       // (H, hidden) contiguous
    const int64_t* index = nullptr;  // (N * N) contiguous, values in [0, T)
    int T = 0, hidden = 0, H = 0, N = 0;
    // > 0 where index is Swin's relative position index of a win_h x win_w window (N = win_h
    // win_w, T = (2 win_h - 1)(2 win_w - 1); the glue checks it once per cached index): the
    // backward then reads dbias along the window's diagonals instead of through the CSR (order and
    // offsets unused).
    int win_h = 0, win_w = 0;
};

// The largest head count the backward's register tiles take (the glue uses ATen above it).
constexpr int kCpbMaxHeads = 64;

// h (T, hidden), sig (T, H), bias (H, N * N): all contiguous outputs.
cudaError_t cpb_forward(const CpbParams& p, float* h, float* sig, float* bias, cudaStream_t s);

// Whether the backward's window form (CpbParams::win_h) takes a win_h x win_w window (its shared memory).
bool cpb_window_dtable_fits(int win_h, int win_w);

// offsets[t] = the first k with sorted_keys[k] >= t, for t = 0 .. T (T + 1 values).
cudaError_t cpb_csr_offsets(const int64_t* sorted_keys, int64_t n, int T, int64_t* offsets, cudaStream_t s);

// grad: dbias (H, N, N) with strides gs0, gs1, gs2; order (N * N), offsets (T + 1): the CSR above
// (unused, may be null, where p.win_h > 0);
// h, sig: the forward's; dpre: a (T, H) workspace; dw1 (hidden, 2), db1 (hidden) or nullptr,
// dw2 (H, hidden): contiguous outputs.
cudaError_t cpb_backward(const CpbParams& p, const float* grad, int64_t gs0, int64_t gs1, int64_t gs2,
                         const int64_t* order, const int64_t* offsets, const float* h, const float* sig,
                         float* dpre, float* dw1, float* db1, float* dw2, cudaStream_t s);

// ---- several layers per launch ------------------------------------------------------------------
// A Swin V2 model's layers each have their own table MLP; the bias depends on the parameters only,
// so a training step's biases can all be computed in one launch per kernel (and their gradients,
// once every layer's dbias exists, in a few: cpb_backward_batch) instead of per layer: the kernels are
// latency-bound, a few microseconds each. Each layer is computed exactly as by cpb_forward /
// cpb_backward (the same per-layer code, the same bits).
constexpr int kCpbBatchMax = 16;   // layers per launch (the launchers split longer lists)

// One layer's outputs and gradient (as cpb_forward's / cpb_backward's arguments).
struct CpbLayerIO {
    float* h = nullptr;        // forward outputs
    float* sig = nullptr;
    float* bias = nullptr;
    const float* grad = nullptr;   // backward: dbias (H, N, N) with strides gs0, gs1, gs2
    int64_t gs0 = 0, gs1 = 0, gs2 = 0;
    float* dpre = nullptr;     // backward workspace (T, H) and outputs
    float* dw1 = nullptr;
    float* db1 = nullptr;      // nullptr where the layer has no b1
    float* dw2 = nullptr;
};

// Whether cpb_forward_batch / cpb_backward_batch take this layer: T, hidden, H and N > 0, H <=
// kCpbMaxHeads; the backward also needs the window form (win_h > 0, cpb_window_dtable_fits).
bool cpb_batch_forward_takes(const CpbParams& p);
bool cpb_batch_backward_takes(const CpbParams& p);

// n layers' forwards (h, sig, bias of io[l]), as n calls of cpb_forward.
cudaError_t cpb_forward_batch(const CpbParams* p, const CpbLayerIO* io, int n, cudaStream_t s);
// n layers' backwards (grad, dpre, dw1, db1, dw2 of io[l]; h and sig read from io[l]), as n calls
// of cpb_backward in the window form: every layer's dtable launches first, then the MLP backward
// with the layers grouped by cpb_backward's MaxH instance (8, 16, 32, 64 heads), the 8- and
// 16-head groups' kernels compiled for 3 and 2 CTAs per SM (session 50: the one MaxH-32 launch of
// window16's 12 layers ran 1 CTA per SM, 91.5 us; grouped, 59.9 us).
cudaError_t cpb_backward_batch(const CpbParams* p, const CpbLayerIO* io, int n, cudaStream_t s);

}  // namespace fwa
