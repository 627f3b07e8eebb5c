// Swin V2 continuous position bias, float32: forward (MLP table, gather) and backward (the
// gather-reduction, through the CSR or along a Swin window's diagonals; MLP gradients). See
// swin_cpb.h.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/kernel_utils.cuh"   // warp_sum, cp_async_*
#include "kernels/launch_utils.h"    // prepare_kernel
#include "kernels/swin_cpb.h"

namespace fwa {
namespace {

constexpr unsigned kFull = 0xffffffffu;

// One warp per (table row t, group of kHeadsPerWarp heads): h[t, :] = relu(coords[t] w1ᵀ + b1)
// (written by the first group's warp), then sig[t, hh] = sigmoid(h[t] · w2[hh]) for the group's
// heads. Lane l takes the hidden units c = l, l + 32, ...: with hidden <= 32 kHidPerLane (timm's 512)
// its h values stay in registers, otherwise they are recomputed per head. Both forms sum in the
// same order.
// (With one warp per row for all heads, the heads ran one after another: H = 24 took 3.5x H = 3.)
constexpr int kHidPerLane = 16;
constexpr int kHeadsPerWarp = 4;
constexpr int kCpbMlpWarps = 8;   // warps per CTA

__device__ __forceinline__ float cpb_hidden(const CpbParams& p, float x0, float x1, int c) {
    float v = fmaf(x1, p.w1[2 * c + 1], x0 * p.w1[2 * c]);
    if (p.b1 != nullptr) v += p.b1[c];
    return v < 0.f ? 0.f : v;   // relu (NaN stays NaN, as torch.relu)
}

// (The kernels below are bodies taking their CTA index `block`, run by a one-layer kernel with
// blockIdx.x and by a batched one (CpbBatch) with the index within its layer.)
__device__ __forceinline__ void cpb_mlp_body(const CpbParams& p, float* __restrict__ h, float* __restrict__ sig,
                                             unsigned block) {
    const int n_groups = (p.H + kHeadsPerWarp - 1) / kHeadsPerWarp;
    const int64_t wi = int64_t(block) * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (wi >= int64_t(p.T) * n_groups) return;
    const int t = static_cast<int>(wi / n_groups), hg = static_cast<int>(wi % n_groups);
    const int h_begin = hg * kHeadsPerWarp, h_end = min(h_begin + kHeadsPerWarp, p.H);
    const float x0 = p.coords[2 * int64_t(t)], x1 = p.coords[2 * int64_t(t) + 1];
    float* hrow = h + int64_t(t) * p.hidden;
    if (p.hidden <= 32 * kHidPerLane) {
        float hv[kHidPerLane];
#pragma unroll
        for (int k = 0; k < kHidPerLane; ++k) {
            const int c = lane + 32 * k;
            hv[k] = c < p.hidden ? cpb_hidden(p, x0, x1, c) : 0.f;
            if (hg == 0 && c < p.hidden) hrow[c] = hv[k];
        }
        for (int hh = h_begin; hh < h_end; ++hh) {
            const float* w2row = p.w2 + int64_t(hh) * p.hidden;
            float acc = 0.f;
#pragma unroll
            for (int k = 0; k < kHidPerLane; ++k) {
                const int c = lane + 32 * k;
                if (c < p.hidden) acc = fmaf(hv[k], w2row[c], acc);
            }
            acc = warp_sum(acc);
            if (lane == 0) sig[int64_t(t) * p.H + hh] = 1.f / (1.f + expf(-acc));
        }
        return;
    }
    // hidden > 512: the first group's warp writes the row of h; every warp recomputes the h values
    // it multiplies (the same function of the same inputs: the same bits as the stored row).
    if (hg == 0)
        for (int c = lane; c < p.hidden; c += 32) hrow[c] = cpb_hidden(p, x0, x1, c);
    for (int hh = h_begin; hh < h_end; ++hh) {
        const float* w2row = p.w2 + int64_t(hh) * p.hidden;
        float acc = 0.f;
        for (int c = lane; c < p.hidden; c += 32) acc = fmaf(cpb_hidden(p, x0, x1, c), w2row[c], acc);
        acc = warp_sum(acc);
        if (lane == 0) sig[int64_t(t) * p.H + hh] = 1.f / (1.f + expf(-acc));
    }
}

__global__ void cpb_mlp_kernel(CpbParams p, float* __restrict__ h, float* __restrict__ sig) {
    cpb_mlp_body(p, h, sig, blockIdx.x);
}

// One thread per position e of the N x N index: bias[hh, e] = 16 * sig[index[e], hh]. (One thread
// per (head, position), session 29, was slower: 4.3 -> 7.0 us at N = 256, H = 24.)
__device__ __forceinline__ void cpb_gather_body(const CpbParams& p, const float* __restrict__ sig,
                                                float* __restrict__ bias, unsigned block) {
    const int64_t nn = int64_t(p.N) * p.N;
    const int64_t e = int64_t(block) * blockDim.x + threadIdx.x;
    if (e >= nn) return;
    const int64_t t = p.index[e];
    const bool ok = t >= 0 && t < p.T;
    for (int hh = 0; hh < p.H; ++hh)
        bias[int64_t(hh) * nn + e] = ok ? 16.f * sig[t * p.H + hh] : NAN;
}

__global__ void cpb_gather_kernel(CpbParams p, const float* __restrict__ sig, float* __restrict__ bias) {
    cpb_gather_body(p, sig, bias, blockIdx.x);
}

__global__ void cpb_csr_offsets_kernel(const int64_t* __restrict__ keys, int64_t n, int T, int64_t* offsets) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t > T) return;
    int64_t lo = 0, hi = n;   // the first k with keys[k] >= t
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < t) lo = mid + 1; else hi = mid;
    }
    offsets[t] = lo;
}

// One warp per table row t: dpre[t, hh] = 16 * sig (1 - sig) * sum of grad[hh, e] over row t's
// positions e (its CSR slice). Lane l takes the slice's entries l, l + 32, ... and sums every head
// for each (MaxH accumulators), then one reduction tree per head: a fixed order, deterministic.
// The entries are taken kUnroll at a time (their order, index and grad loads issued together: one
// at a time, each entry cost three dependent round trips), added in the same order.
// NaN where the CSR does not describe index (see swin_cpb.h).
template <int MaxH>
__global__ void cpb_dtable_kernel(CpbParams p, const float* __restrict__ grad, int64_t gs0, int64_t gs1,
                                  int64_t gs2, const int64_t* __restrict__ order,
                                  const int64_t* __restrict__ offsets, const float* __restrict__ sig,
                                  float* __restrict__ dpre) {
    constexpr int kUnroll = MaxH <= 16 ? 4 : MaxH <= 32 ? 2 : 1;   // MaxH 64 at 2: spills
    const int t = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    const int lane = threadIdx.x & 31;
    if (t >= p.T) return;
    const int64_t nn = int64_t(p.N) * p.N;
    const int64_t beg = offsets[t], end = offsets[t + 1];
    bool bad = offsets[0] != 0 || offsets[p.T] != nn || beg > end;
    float acc[MaxH];
#pragma unroll
    for (int hh = 0; hh < MaxH; ++hh) acc[hh] = 0.f;
    for (int64_t k0 = beg + lane; k0 < end && !bad; k0 += 32 * kUnroll) {
        int64_t e[kUnroll];
        bool in[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            const int64_t k = k0 + 32 * u;
            e[u] = k < end ? order[k] : -1;
            in[u] = e[u] >= 0 && e[u] < nn;
            bad = bad || (k < end && !in[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) bad = bad || (in[u] && p.index[e[u]] != t);
        if (bad) break;
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            if (!in[u]) continue;   // past the slice's end
            const int64_t i = e[u] / p.N, j = e[u] - i * p.N;
            const float* g = grad + i * gs1 + j * gs2;
#pragma unroll
            for (int hh = 0; hh < MaxH; ++hh)
                if (hh < p.H) acc[hh] += g[int64_t(hh) * gs0];
        }
    }
    bad = __any_sync(kFull, bad);
#pragma unroll
    for (int hh = 0; hh < MaxH; ++hh) {
        if (hh < p.H) {
            const float a = warp_sum(acc[hh]);
            if (lane == 0) {
                const float s = sig[int64_t(t) * p.H + hh];
                dpre[int64_t(t) * p.H + hh] = bad ? NAN : a * (1.f - s) * s * 16.f;
            }
        }
    }
}

// dtable where index is Swin's relative position index of a win_h x win_w window (CpbParams::win_h
// > 0, established by the glue): position e = i N + j of query i = (yi, xi) and key j = (yj, xj)
// holds t = (dy + win_h - 1)(2 win_w - 1) + (dx + win_w - 1), dy = yi - yj, dx = xi - xj. So row t's
// entries are, for each query row yi (and key row yi - dy), one diagonal of the win_w x win_w block
// of dbias there, and the blocks' rows are contiguous: one CTA per (dy, kWinHeads heads) reads them
// in rows (lanes on adjacent dx read adjacent keys: a few sectors per request, where the CSR walk's
// gathers touched 32), each task (yi, dx) summing its diagonal over xi in order, then one thread
// per (head, dx) adding the tasks over yi in order: deterministic. Each entry's index is checked
// against t as it is read (NaN for a row t where one differs, as the CSR walk's check).
constexpr int kWinHeads = 4;
constexpr int kWinThreads = 512;
// kStep: entries whose loads are issued before their sums (registers: ~kStep (kWinHeads + 2); the
// sums are in xi order at any kStep: the same bits).
template <int kStep>
__device__ __forceinline__ void cpb_dtable_window_body(const CpbParams& p, const float* __restrict__ grad, int64_t gs0,
                                                       int64_t gs1, int64_t gs2, const float* __restrict__ sig,
                                                       float* __restrict__ dpre, unsigned block,
                                                       float* part /* [kWinHeads][ny][ndx]: the tasks' sums */) {
    const int wh = p.win_h, ww = p.win_w, ndy = 2 * wh - 1, ndx = 2 * ww - 1;
    const int dyi = static_cast<int>(block % ndy), h0 = static_cast<int>(block / ndy) * kWinHeads;
    const int dy = dyi - (wh - 1);
    const int y0 = max(0, dy), ny = wh - abs(dy);
    const int nh = min(kWinHeads, p.H - h0);
    const int64_t nn = int64_t(p.N);
    for (int task = threadIdx.x; task < ny * ndx; task += kWinThreads) {
        const int yo = task / ndx, dxi = task - yo * ndx, dx = dxi - (ww - 1);
        const int yi = y0 + yo, yj = yi - dy;
        const int x0 = max(0, dx), x1 = ww + min(0, dx);
        const int64_t t = int64_t(dyi) * ndx + dxi;
        float acc[kWinHeads] = {};
        bool bad = false;
        // every lane walks xi = 0 .. ww - 1 (its own range predicated): at each step the lanes of
        // one yi read adjacent keys of the same query row. kStep steps' loads are issued before
        // their sums (one round trip per kStep entries, not per entry), added in xi order.
        for (int xb = 0; xb < ww; xb += kStep) {
            float v[kStep][kWinHeads];
            int64_t ix[kStep];
#pragma unroll
            for (int u = 0; u < kStep; ++u) {
                const int xi = xb + u;
                const bool in = xi >= x0 && xi < x1;
                const int64_t i = int64_t(yi) * ww + xi, j = int64_t(yj) * ww + (xi - dx);
                ix[u] = in ? p.index[i * nn + j] : t;
                const float* g = grad + i * gs1 + j * gs2;
#pragma unroll
                for (int hh = 0; hh < kWinHeads; ++hh) v[u][hh] = in && hh < nh ? g[int64_t(h0 + hh) * gs0] : 0.f;
            }
#pragma unroll
            for (int u = 0; u < kStep; ++u) {
                bad = bad || ix[u] != t;
                if (xb + u >= x0 && xb + u < x1) {
#pragma unroll
                    for (int hh = 0; hh < kWinHeads; ++hh) acc[hh] += v[u][hh];
                }
            }
        }
#pragma unroll
        for (int hh = 0; hh < kWinHeads; ++hh) part[(hh * ny + yo) * ndx + dxi] = bad ? NAN : acc[hh];
    }
    __syncthreads();
    for (int x = threadIdx.x; x < nh * ndx; x += kWinThreads) {
        const int hh = x / ndx, dxi = x - hh * ndx;
        float a = 0.f;
        for (int yo = 0; yo < ny; ++yo) a += part[(hh * ny + yo) * ndx + dxi];
        const int64_t t = int64_t(dyi) * ndx + dxi;
        const float sv = sig[t * p.H + h0 + hh];
        dpre[t * p.H + h0 + hh] = a * (1.f - sv) * sv * 16.f;
    }
}

__global__ void __launch_bounds__(kWinThreads)
cpb_dtable_window_kernel(CpbParams p, const float* __restrict__ grad, int64_t gs0, int64_t gs1, int64_t gs2,
                         const float* __restrict__ sig, float* __restrict__ dpre) {
    extern __shared__ float part[];
    cpb_dtable_window_body<8>(p, grad, gs0, gs1, gs2, sig, dpre, blockIdx.x, part);
}

// The MLP's gradients from dpre = d(h w2ᵀ) (T, H):
//   dw2[hh, c] = sum_t dpre[t, hh] h[t, c]
//   dh[t, c]   = (h[t, c] > 0) * sum_hh dpre[t, hh] w2[hh, c]
//   dw1[c, :]  = sum_t dh[t, c] coords[t, :],  db1[c] = sum_t dh[t, c]
// A block takes kCols = 4 columns c and all t: lane l works on column l % 4 and the rows of phase
// l / 4, warp w on rows 8 w + phase, 8 w + phase + 8 kWarps, ... (hidden / 4 blocks: 128 for timm's
// 512. The latency of each thread's serial walk over its rows bounds the kernel: with 8 columns per
// block (64 blocks, half the SMs, twice the rows per thread) and a barrier pair per combined sum it
// took 11.4 / 19.3 / 26.3 us at H = 3 / 12 / 24, session 29 run E).
// The rows come through shared memory `stage_rows` at a time (a multiple of kWarps * 8; all T
// where they fit cpb_mlp_bwd_stage_rows' budget, one stage for timm's tables): dpre (rows padded to
// H + 1 floats, so that the 8 rows a warp reads at once sit in different banks for even H), the
// block's 4 columns of h and the coords, all as async copies in flight together, then one barrier
// and the thread's rows from shared memory. (Until session 48 the rows came in 128-row chunks, each
// loaded into registers while the previous one was computed, then stored to shared memory between
// two barriers: a chain of one L2 round trip per chunk, 8 at T = 961; 8.2 / 12.5 -> 5.1 / 8.0 us
// per call at window 16, H = 3 / 12, H200.) The thread's rows and the
// operations on each are as before, in the same order: bitwise the same sums. Per-column sums in
// registers (MaxH of them for dw2), combined over the 8 phases by xor-shuffles and across the warps
// in smem in warp order: deterministic.
template <int MaxH, int kWarps>
__device__ __forceinline__ void cpb_mlp_bwd_body(const CpbParams& p, const float* __restrict__ h,
                                                 const float* __restrict__ dpre, float* __restrict__ dw1,
                                                 float* __restrict__ db1, float* __restrict__ dw2, int stage_rows,
                                                 unsigned block, float* dsm) {
    // dsm: [stage_rows][H + 1] dpre, [stage_rows][4] h, [stage_rows][2] coords (16-byte aligned)
    constexpr int kCols = 4, kPhases = 32 / kCols;
    constexpr int kRows = kWarps * kPhases;        // rows per pass of the block's threads: one each
    constexpr int kQuantities = MaxH + 3;          // dw2's MaxH rows, dw1's 2 columns, db1
    __shared__ float red[kQuantities][kWarps][kCols];
    const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
    const int cl = lane % kCols, phase = lane / kCols;
    const int c0 = static_cast<int>(block) * kCols, c = c0 + cl;
    const bool col = c < p.hidden;
    const int pitch = p.H + 1;
    float* const hsm = dsm + stage_rows * pitch;
    float* const csm = hsm + stage_rows * kCols;
    float w2c[MaxH], acc2[MaxH];
#pragma unroll
    for (int hh = 0; hh < MaxH; ++hh) {
        w2c[hh] = (col && hh < p.H) ? p.w2[int64_t(hh) * p.hidden + c] : 0.f;
        acc2[hh] = 0.f;
    }
    float a_w0 = 0.f, a_w1 = 0.f, a_b = 0.f;
    const int r_mine = warp * kPhases + phase;   // this thread's first row of every stage
    // h rows copied 16 bytes (the block's 4 columns) at a time where they are 16-byte aligned
    const bool h_vec = p.hidden % kCols == 0 && (reinterpret_cast<uintptr_t>(h) & 15) == 0;
    for (int t0 = 0; t0 < p.T; t0 += stage_rows) {
        const int rows = min(stage_rows, p.T - t0);
        if (t0 > 0) __syncthreads();   // the previous stage's readers are done
        for (int x = threadIdx.x; x < rows * p.H; x += kWarps * 32) {
            const int r = x / p.H;
            cp_async_4(smem_u32(dsm + r * pitch + (x - r * p.H)), dpre + int64_t(t0) * p.H + x, 4);
        }
        if (h_vec) {
            for (int r = threadIdx.x; r < rows; r += kWarps * 32)
                cp_async_16(smem_u32(hsm + r * kCols), h + int64_t(t0 + r) * p.hidden + c0, 16);
        } else {
            for (int x = threadIdx.x; x < rows * kCols; x += kWarps * 32) {
                const int r = x / kCols, cc = c0 + x % kCols;
                cp_async_4(smem_u32(hsm + x), h + int64_t(t0 + r) * p.hidden + (cc < p.hidden ? cc : 0),
                           cc < p.hidden ? 4 : 0);
            }
        }
        for (int x = threadIdx.x; x < rows * 2; x += kWarps * 32)
            cp_async_4(smem_u32(csm + x), p.coords + 2 * int64_t(t0) + x, 4);
        cp_async_commit();
        cp_async_wait<0>();
        __syncthreads();
        if (col) {
            for (int r = r_mine; r < rows; r += kRows) {
                const float hv = hsm[r * kCols + cl];
                const float* d = dsm + r * pitch;
                float s = 0.f;
#pragma unroll
                for (int hh = 0; hh < MaxH; ++hh) {
                    if (hh < p.H) {
                        const float dv = d[hh];
                        acc2[hh] = fmaf(dv, hv, acc2[hh]);
                        s = fmaf(dv, w2c[hh], s);
                    }
                }
                const float dh = hv > 0.f ? s : 0.f;
                a_w0 = fmaf(dh, csm[2 * r], a_w0);
                a_w1 = fmaf(dh, csm[2 * r + 1], a_w1);
                a_b += dh;
            }
        }
    }
    // Every quantity combined at once (a barrier pair per quantity cost ~2 (H + 3) barriers):
    // over the phases (lanes l, l ^ 4, ..., l ^ 28) by xor-shuffles, each warp's column sums into
    // red (one barrier), then the thread of (quantity, column) adds the warps in warp order.
    auto phase_sum = [&](float v) -> float {
#pragma unroll
        for (int o = kCols; o < 32; o <<= 1) v += __shfl_xor_sync(kFull, v, o);
        return v;
    };
#pragma unroll
    for (int hh = 0; hh < MaxH; ++hh) {
        if (hh < p.H) {   // uniform across the block
            const float v = phase_sum(acc2[hh]);
            if (phase == 0) red[hh][warp][cl] = v;
        }
    }
    {
        const float v0 = phase_sum(a_w0), v1 = phase_sum(a_w1), vb = phase_sum(a_b);
        if (phase == 0) {
            red[MaxH][warp][cl] = v0;
            red[MaxH + 1][warp][cl] = v1;
            red[MaxH + 2][warp][cl] = vb;
        }
    }
    __syncthreads();
    for (int x = threadIdx.x; x < kQuantities * kCols; x += kWarps * 32) {
        const int q = x / kCols, cc = x - q * kCols;
        const int cq = static_cast<int>(block) * kCols + cc;
        if ((q >= p.H && q < MaxH) || cq >= p.hidden) continue;
        float r = 0.f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) r += red[q][w][cc];
        if (q < MaxH) dw2[int64_t(q) * p.hidden + cq] = r;
        else if (q == MaxH) dw1[2 * int64_t(cq)] = r;
        else if (q == MaxH + 1) dw1[2 * int64_t(cq) + 1] = r;
        else if (db1 != nullptr) db1[cq] = r;
    }
}

template <int MaxH, int kWarps>
__global__ void __launch_bounds__(kWarps * 32)
cpb_mlp_bwd_kernel(CpbParams p, const float* __restrict__ h, const float* __restrict__ dpre,
                   float* __restrict__ dw1, float* __restrict__ db1, float* __restrict__ dw2, int stage_rows) {
    extern __shared__ __align__(16) float dsm[];
    cpb_mlp_bwd_body<MaxH, kWarps>(p, h, dpre, dw1, db1, dw2, stage_rows, blockIdx.x, dsm);
}

size_t cpb_dtable_window_smem(int win_h, int win_w) { return size_t(kWinHeads) * win_h * (2 * win_w - 1) * sizeof(float); }

// The MLP backward's rows per shared-memory stage: all T (rounded up to a multiple of `unit`, the
// block's rows per pass) where that fits kCpbMlpBwdSmem, else the most multiples of `unit` that do.
constexpr size_t kCpbMlpBwdSmem = 96 * 1024;
size_t cpb_mlp_bwd_smem_bytes(int stage_rows, int H) { return size_t(stage_rows) * (H + 1 + 4 + 2) * sizeof(float); }
int cpb_mlp_bwd_stage_rows(int T, int H, int unit) {
    const int64_t all = (int64_t(T) + unit - 1) / unit * unit;
    const int64_t fit = int64_t(kCpbMlpBwdSmem / cpb_mlp_bwd_smem_bytes(unit, H)) * unit;
    return static_cast<int>(std::max<int64_t>(unit, std::min(all, fit)));
}

// The MLP backward's warps per CTA at MaxH (registers: 2 MaxH per thread). Its row assignment, hence
// its sums, depends on this only: the one-layer and batched kernels must agree.
template <int MaxH> constexpr int cpb_mlp_bwd_warps() { return MaxH <= 32 ? 16 : 8; }

// The MaxH instance of the backward for H heads (H <= kCpbMaxHeads), and f(MaxH) called with it
// as a std::integral_constant.
int cpb_max_h(int H) { return H <= 8 ? 8 : H <= 16 ? 16 : H <= 32 ? 32 : 64; }
template <typename F>
cudaError_t with_max_h(int max_h, F&& f) {
    switch (max_h) {
        case 8: return f(std::integral_constant<int, 8>{});
        case 16: return f(std::integral_constant<int, 16>{});
        case 32: return f(std::integral_constant<int, 32>{});
        default: return f(std::integral_constant<int, 64>{});
    }
}

template <int MaxH>
cudaError_t launch_bwd(const CpbParams& p, const float* grad, int64_t gs0, int64_t gs1, int64_t gs2,
                       const int64_t* order, const int64_t* offsets, const float* h, const float* sig,
                       float* dpre, float* dw1, float* db1, float* dw2, cudaStream_t s) {
    if (p.T > 0 && p.H > 0 && p.win_h > 0) {
        const unsigned ctas = static_cast<unsigned>((2 * p.win_h - 1) * ((p.H + kWinHeads - 1) / kWinHeads));
        cpb_dtable_window_kernel<<<ctas, kWinThreads, cpb_dtable_window_smem(p.win_h, p.win_w), s>>>(
            p, grad, gs0, gs1, gs2, sig, dpre);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) return err;
    } else if (p.T > 0 && p.H > 0) {
        constexpr int kWarpsT = 8;
        cpb_dtable_kernel<MaxH><<<static_cast<unsigned>((p.T + kWarpsT - 1) / kWarpsT), kWarpsT * 32, 0, s>>>(
            p, grad, gs0, gs1, gs2, order, offsets, sig, dpre);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) return err;
    }
    constexpr int kWarps = cpb_mlp_bwd_warps<MaxH>();
    constexpr auto kKernel = cpb_mlp_bwd_kernel<MaxH, kWarps>;
    const int stage_rows = cpb_mlp_bwd_stage_rows(p.T, p.H, kWarps * 8);
    const size_t smem = cpb_mlp_bwd_smem_bytes(stage_rows, p.H);
    int ctas = 0;
    cudaError_t err = prepare_kernel<kKernel>(smem, kWarps * 32, &ctas);
    if (err != cudaSuccess) return err;
    const unsigned blocks = static_cast<unsigned>((p.hidden + 3) / 4);   // kCols columns each
    kKernel<<<blocks, kWarps * 32, smem, s>>>(p, h, dpre, dw1, db1, dw2, stage_rows);
    return cudaGetLastError();
}

// ---- several layers per launch (CpbBatch) --------------------------------------------------------
// Each CTA finds its layer from `begin` (the layers' first CTAs, in order) and runs that layer's
// body with its index within the layer: per layer the same threads, rows and order as the
// one-layer kernels (bitwise their outputs; the MLP backward's row assignment depends on kWarps
// only, cpb_mlp_bwd_warps<MaxH>: cpb_backward_batch groups the layers by MaxH).
struct CpbBatch {
    int n = 0;
    unsigned begin[kCpbBatchMax + 1] = {};
    int stage_rows[kCpbBatchMax] = {};   // the MLP backward's, per layer
    CpbParams p[kCpbBatchMax];
    CpbLayerIO io[kCpbBatchMax];
};

// (a kernel parameter: within the 4 KB every CUDA version and architecture takes)
static_assert(sizeof(CpbBatch) <= 4096, "CpbBatch exceeds the kernel parameter space");

__device__ __forceinline__ int batch_layer(const CpbBatch& b, unsigned* block) {
    int l = 0;
    while (l + 1 < b.n && blockIdx.x >= b.begin[l + 1]) ++l;
    *block = blockIdx.x - b.begin[l];
    return l;
}

// (Not bounded for more CTAs per SM: at 5 (48 registers, no spill) window16's 12 layers took 55.6
// -> 75.9 us, session 50 run D.)
__global__ void cpb_mlp_batch_kernel(const __grid_constant__ CpbBatch b) {
    unsigned block;
    const int l = batch_layer(b, &block);
    const CpbParams p = b.p[l];
    cpb_mlp_body(p, b.io[l].h, b.io[l].sig, block);
}

__global__ void cpb_gather_batch_kernel(const __grid_constant__ CpbBatch b) {
    unsigned block;
    const int l = batch_layer(b, &block);
    const CpbParams p = b.p[l];
    cpb_gather_body(p, b.io[l].sig, b.io[l].bias, block);
}

// (2 CTAs per SM: a batch's layers fill many waves; the one-layer kernel's CTAs are one wave or less.)
__global__ void __launch_bounds__(kWinThreads, 2) cpb_dtable_window_batch_kernel(const __grid_constant__ CpbBatch b) {
    extern __shared__ float part[];
    unsigned block;
    const int l = batch_layer(b, &block);
    const CpbParams p = b.p[l];
    const CpbLayerIO& io = b.io[l];
    cpb_dtable_window_body<4>(p, io.grad, io.gs0, io.gs1, io.gs2, io.sig, io.dpre, block, part);
}

// CTAs per SM the batched MLP backward is compiled for (registers; the one-layer kernel's 128 CTAs
// of a layer fill one wave at any count, a batch's layers many): MaxH 8 at 40 registers (8 B
// spilled), 16 at 64, 32 and 64 at their one-layer counts (124, 194). (Only the register allocation differs: the same
// operations in the same order, hence the same sums.)
template <int MaxH> constexpr int cpb_mlp_bwd_batch_min_ctas() { return MaxH <= 8 ? 3 : MaxH <= 16 ? 2 : 1; }

template <int MaxH, int kWarps>
__global__ void __launch_bounds__(kWarps * 32, cpb_mlp_bwd_batch_min_ctas<MaxH>())
    cpb_mlp_bwd_batch_kernel(const __grid_constant__ CpbBatch b) {
    extern __shared__ __align__(16) float dsm[];
    unsigned block;
    const int l = batch_layer(b, &block);
    const CpbParams& p = b.p[l];   // (read from the parameter space: a register copy spilled at MaxH 32)
    const CpbLayerIO& io = b.io[l];
    cpb_mlp_bwd_body<MaxH, kWarps>(p, io.h, io.dpre, io.dw1, io.db1, io.dw2, b.stage_rows[l], block, dsm);
}

// The batch of layers [l0, l0 + n) of p / io.
CpbBatch make_batch(const CpbParams* p, const CpbLayerIO* io, int l0, int n) {
    CpbBatch b;
    b.n = n;
    for (int i = 0; i < n; ++i) {
        b.p[i] = p[l0 + i];
        b.io[i] = io[l0 + i];
    }
    return b;
}

// b.begin from each layer's CTA count; returns the grid (0 past the unsigned range: not launched).
template <typename CtasOf>
unsigned set_begin(CpbBatch& b, CtasOf ctas_of) {
    uint64_t total = 0;
    for (int i = 0; i < b.n; ++i) {
        b.begin[i] = static_cast<unsigned>(total);
        total += ctas_of(b.p[i]);
    }
    if (total > 0x7fffffffu) return 0;
    b.begin[b.n] = static_cast<unsigned>(total);
    return static_cast<unsigned>(total);
}

cudaError_t launch_dtable_batch(CpbBatch& b, cudaStream_t s) {
    size_t smem = 0;
    for (int i = 0; i < b.n; ++i) smem = std::max(smem, cpb_dtable_window_smem(b.p[i].win_h, b.p[i].win_w));
    const unsigned grid = set_begin(b, [](const CpbParams& q) {
        return uint64_t(2 * q.win_h - 1) * ((q.H + kWinHeads - 1) / kWinHeads);
    });
    if (grid == 0) return cudaErrorInvalidValue;
    cpb_dtable_window_batch_kernel<<<grid, kWinThreads, smem, s>>>(b);   // (<= 48 KB: cpb_window_dtable_fits)
    return cudaGetLastError();
}

template <int MaxH>
cudaError_t launch_mlp_bwd_batch(CpbBatch& b, cudaStream_t s) {
    constexpr int kWarps = cpb_mlp_bwd_warps<MaxH>();
    constexpr auto kKernel = cpb_mlp_bwd_batch_kernel<MaxH, kWarps>;
    size_t smem = 0;
    for (int i = 0; i < b.n; ++i) {
        b.stage_rows[i] = cpb_mlp_bwd_stage_rows(b.p[i].T, b.p[i].H, kWarps * 8);
        smem = std::max(smem, cpb_mlp_bwd_smem_bytes(b.stage_rows[i], b.p[i].H));
    }
    int ctas = 0;
    cudaError_t err = prepare_kernel<kKernel>(smem, kWarps * 32, &ctas);
    if (err != cudaSuccess) return err;
    const unsigned grid = set_begin(b, [](const CpbParams& q) { return uint64_t(q.hidden + 3) / 4; });
    if (grid == 0) return cudaErrorInvalidValue;
    kKernel<<<grid, kWarps * 32, smem, s>>>(b);
    return cudaGetLastError();
}

}  // namespace

cudaError_t cpb_forward(const CpbParams& p, float* h, float* sig, float* bias, cudaStream_t s) {
    if (p.T > 0) {
        constexpr int kWarps = kCpbMlpWarps;
        const int64_t warps = int64_t(p.T) * ((p.H + kHeadsPerWarp - 1) / kHeadsPerWarp);
        cpb_mlp_kernel<<<static_cast<unsigned>((warps + kWarps - 1) / kWarps), kWarps * 32, 0, s>>>(p, h, sig);
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) return err;
    }
    const int64_t nn = int64_t(p.N) * p.N;
    if (nn == 0 || p.H == 0) return cudaSuccess;
    cpb_gather_kernel<<<static_cast<unsigned>((nn + 255) / 256), 256, 0, s>>>(p, sig, bias);
    return cudaGetLastError();
}

bool cpb_window_dtable_fits(int win_h, int win_w) { return cpb_dtable_window_smem(win_h, win_w) <= 48 * 1024; }

cudaError_t cpb_csr_offsets(const int64_t* sorted_keys, int64_t n, int T, int64_t* offsets, cudaStream_t s) {
    cpb_csr_offsets_kernel<<<static_cast<unsigned>((T + 1 + 255) / 256), 256, 0, s>>>(sorted_keys, n, T, offsets);
    return cudaGetLastError();
}

cudaError_t cpb_backward(const CpbParams& p, const float* grad, int64_t gs0, int64_t gs1, int64_t gs2,
                         const int64_t* order, const int64_t* offsets, const float* h, const float* sig,
                         float* dpre, float* dw1, float* db1, float* dw2, cudaStream_t s) {
    if (p.H > kCpbMaxHeads) return cudaErrorInvalidValue;   // the glue falls back before this
    if (p.hidden == 0) return cudaSuccess;
    return with_max_h(cpb_max_h(p.H), [&](auto max_h) {
        return launch_bwd<decltype(max_h)::value>(p, grad, gs0, gs1, gs2, order, offsets, h, sig, dpre, dw1, db1,
                                                   dw2, s);
    });
}

bool cpb_batch_forward_takes(const CpbParams& p) {
    return p.T > 0 && p.hidden > 0 && p.H > 0 && p.N > 0 && p.H <= kCpbMaxHeads;
}

bool cpb_batch_backward_takes(const CpbParams& p) {
    return cpb_batch_forward_takes(p) && p.win_h > 0 && cpb_window_dtable_fits(p.win_h, p.win_w);
}

cudaError_t cpb_forward_batch(const CpbParams* p, const CpbLayerIO* io, int n, cudaStream_t s) {
    for (int i = 0; i < n; ++i)
        if (!cpb_batch_forward_takes(p[i])) return cudaErrorInvalidValue;
    for (int l0 = 0; l0 < n; l0 += kCpbBatchMax) {
        CpbBatch b = make_batch(p, io, l0, std::min(kCpbBatchMax, n - l0));
        constexpr int kWarps = kCpbMlpWarps;
        unsigned grid = set_begin(b, [](const CpbParams& q) {
            return (uint64_t(q.T) * ((q.H + kHeadsPerWarp - 1) / kHeadsPerWarp) + kWarps - 1) / kWarps;
        });
        if (grid == 0) return cudaErrorInvalidValue;
        cpb_mlp_batch_kernel<<<grid, kWarps * 32, 0, s>>>(b);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) return err;
        grid = set_begin(b, [](const CpbParams& q) { return (uint64_t(q.N) * q.N + 255) / 256; });
        if (grid == 0) return cudaErrorInvalidValue;
        cpb_gather_batch_kernel<<<grid, 256, 0, s>>>(b);
        err = cudaGetLastError();
        if (err != cudaSuccess) return err;
    }
    return cudaSuccess;
}

cudaError_t cpb_backward_batch(const CpbParams* p, const CpbLayerIO* io, int n, cudaStream_t s) {
    for (int i = 0; i < n; ++i)
        if (!cpb_batch_backward_takes(p[i])) return cudaErrorInvalidValue;
    // dpre of every layer first (the window dtable kernel, kCpbBatchMax layers per launch), then the
    // MLP backward, its layers grouped by MaxH (8, 16, 32, 64: each group at its own registers, hence
    // CTAs per SM; kWarps follows MaxH, so each layer's rows are the one-layer kernel's).
    for (int l0 = 0; l0 < n; l0 += kCpbBatchMax) {
        CpbBatch b = make_batch(p, io, l0, std::min(kCpbBatchMax, n - l0));
        const cudaError_t err = launch_dtable_batch(b, s);
        if (err != cudaSuccess) return err;
    }
    for (const int max_h : {8, 16, 32, 64}) {
        std::vector<int> ids;
        for (int i = 0; i < n; ++i)
            if (cpb_max_h(p[i].H) == max_h) ids.push_back(i);
        for (size_t k0 = 0; k0 < ids.size(); k0 += kCpbBatchMax) {
            CpbBatch b;
            b.n = static_cast<int>(std::min<size_t>(kCpbBatchMax, ids.size() - k0));
            for (int i = 0; i < b.n; ++i) {
                b.p[i] = p[ids[k0 + i]];
                b.io[i] = io[ids[k0 + i]];
            }
            const cudaError_t err =
                with_max_h(max_h, [&](auto m) { return launch_mlp_bwd_batch<decltype(m)::value>(b, s); });
            if (err != cudaSuccess) return err;
        }
    }
    return cudaSuccess;
}

}  // namespace fwa
