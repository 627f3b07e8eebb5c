// Torch-free interface of the fp16/bf16 tensor-core kernels of local attention
// (flash_window_attn::local_attention_fwd / _bwd; sliding-window and block-sliding-window).
//
//   S = scale * q kᵀ over the allowed band only (local_band.h), P = softmax(S) (fp32),
//   out = P v, lse = log Σ_allowed exp S (natural log, fp32);
//   backward: dS = P * (dout vᵀ - D), dq = scale dS k,
//   dk = scale Σ_heads dSᵀ q, dv = Σ_heads Pᵀ dout (the H / Hkv query heads of a kv head summed in
//   ascending order inside one CTA: deterministic, no atomics).
//
// Layouts: q, dout, out (B, H, L, d); k, v (B, Hkv, L, d); any batch / head / row strides in
// elements, unit last stride, 16-byte aligned rows and base pointers (the op layer copies
// anything else). lse and the D workspace are (B, H, L) fp32 contiguous. out, dq, dk, dv are
// written with their own strides (the op passes contiguous tensors).
// Sizes: 1 <= L < 2^31 - 128, d a multiple of 8 up to the head-dim bucket (32, 64 or 128; columns
// beyond d are zero-filled on load and never stored); float32 (SIMT path) d <= 256. The launchers return
// cudaErrorInvalidConfiguration for a grid of more than 2^31 - 1 CTAs.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

#include "../window_attn.h"   // TensorRef, Dtype, kTileM / kTileN / kNumThreads
#include "local_band.h"

namespace fwa {

static_assert(kLocalTile == kTileM && kLocalTile == kTileN, "local kernels use the 64-row tiles of tile_io.cuh");

struct LocalFwdParams {
    TensorRef q, k, v, out;
    float* lse = nullptr;   // (B, H, L) fp32 contiguous; written by the forward, read by the backward
    // bf16 (B, H, L, d), optional (ptr null: none): the forward's fp32 output minus out (its 16-bit
    // rounding), written by the fp16 / bf16 forwards where given; the backward's D = dout · (out +
    // out_lo) where given (LocalBwdParams::residual_d).
    TensorRef out_lo;

    int B = 0, H = 0, Hkv = 0, L = 0, d = 0;
    int group = 1;          // H / Hkv: query head h reads kv head h / group
    // Normalised band (normalize_local_band): left / right -1 = unbounded, 1 <= block <= L.
    int left = -1, right = -1, block = 1;
    float scale = 1.f;      // multiplies q · k
    // CTA order (local_cta_tile) of the query-side kernels (forward, backward query side) over the
    // (b, h) slices and of the key-side kernel over the (b, hk) slices: 0, slice-major; G > 0,
    // tile-major, heaviest tile first, within groups of G slices (local_tile_group).
    int tile_group = 0, kv_tile_group = 0;
    // The item shift of the warp-specialised query-side kernels (local_ws_items in local_band.h:
    // item m holds the 64-query tiles from m kCons - ws_shift), set by their launchers for their own
    // copy of the parameters (local_ws_item_shift_for); 0 elsewhere.
    int ws_shift = 0;
    // Whether out is normalised by the row sums of the 16-bit P (which the residual-D backward's D
    // needs) or by the fp32 ones: the ops layer sets it to whether the residual-D backward runs on
    // this grid (local_out_lo_wanted over local_bwd_ws_grid / local_bwd_ws_items; 0 lets the
    // 64-key-step wgmma forward skip the 16-bit sums; the other forwards always take them).
    int norm16 = 1;

    FWA_BAND_HD LocalBand band() const {
        LocalBand b;
        b.L = L;
        b.left = left;
        b.right = right;
        b.block = block;
        return b;
    }
};

struct LocalBwdParams : LocalFwdParams {
    TensorRef dout, dq, dk, dv;
    float* dsum = nullptr;  // workspace (B, H, L) fp32: rowsum(dout * out), the key side's D
    // The query side's D = sum_j P_ij dP_ij (fp16 / bf16 kernels; see
    // local_bwd_kernels.cuh), accumulated by the key side in fixed point with integer atomics
    // (order-free: bitwise deterministic). All three zeroed by the caller.
    //   d_acc  [B * H * L]: sum of P dP in units of dp_bound(b, h) * 2^-61
    //   d_bad  [B * H * L]: nonzero where a partial sum was not finite (D is then NaN)
    //   absmax [B * H] max |dout| of each (b, h), then [B * Hkv] max |v| of each (b, hk) (float
    //          bits compared as integers; NaN wins), so dp_bound(b, h) = d * max|dout| * max|v|
    //          bounds every |dP_ij| of the slice
    unsigned long long* d_acc = nullptr;
    int* d_bad = nullptr;
    float* absmax = nullptr;
    // The bytes from d_acc that the launcher zeroes (cudaMemsetAsync on the stream) before the
    // preprocess when it uses the exact-D sums (d_acc, dsum, d_bad, absmax are one workspace).
    size_t sums_bytes = 0;
    // Set by launch_local_bwd_impl for the kernels: the residual-D backward (out_lo given, both
    // sides warp-specialised): the preprocess writes D = dout · (out + out_lo) into dsum, the only
    // D of both sides; no exact-D sums, no max |dout|, |v|, no memset, and the query side does not
    // wait for the key side.
    bool residual_d = false;
};

// One instantiation per (dtype, head-dim bucket), each in its own .cu under instantiations/.
template <typename Element, int kHeadDim> cudaError_t run_local_fwd(const LocalFwdParams& p, cudaStream_t s);
template <typename Element, int kHeadDim> cudaError_t run_local_bwd(const LocalBwdParams& p, cudaStream_t s);
// The forward on Hopper warpgroup MMA (local_fwd_wgmma_kernel.cuh), head-dim buckets 64 and 128
// (run_local_bwd picks its wgmma kernels itself).
template <typename Element, int kHeadDim> cudaError_t run_local_fwd_wgmma(const LocalFwdParams& p, cudaStream_t s);
// True when the current device runs the wgmma kernels (head-dim buckets 64 and 128) of the forward
// (backward = false) or the backward: an sm_90a build (setup.py defines FWA_SM90A_BUILT), a
// compute capability 9.0 device, and FWA_LOCAL_WGMMA (testing, A/B timing) not "0" (all mma.sync)
// nor, for the backward, "fwd" (wgmma forward, mma.sync backward).
bool local_wgmma_enabled(bool backward);
// Warpgroups per CTA of the wgmma forward (1, 2 or 3 consecutive 64-query tiles sharing each
// streamed k / v tile): FWA_LOCAL_WG (A/B timing, tests) or, when it is not set, `fallback`.
int local_wgmma_warpgroups(int fallback);
// Keys per step of the one-warpgroup wgmma forward at d = 64 (64 or 128): FWA_LOCAL_FWD_KEYS or
// `fallback`.
int local_fwd_keys_per_step(int fallback);
constexpr int kLocalFwdKeysD64 = 128;
// The warp-specialised TMA forward (local_fwd_ws_kernel.cuh: a producer warpgroup and
// kLocalFwdWsConsumers consumer warpgroups on consecutive 64-query tiles, one persistent CTA per
// SM), head-dim buckets 64 and 128; measured on the H100 (session 26, bf16 kernel time) against the
// wgmma kernel: causal B8 H16 L2048 d64 0.244 -> 0.215 ms, block256x16 B1 H12 L4096 d64 0.091 ->
// 0.076, win(1024,0) B2 H16 L16384 d128 0.826 -> 0.623, win(4096,0) B1 H32/8 L32768 d128 5.30 ->
// 4.13. Used where its grid (`ctas` items of kLocalFwdWsConsumers tiles) fills the `sms` SMs at
// least once (smaller grids keep more, smaller CTAs: win(256,256) B1 H4 L4096 has 88 items), unless
// FWA_LOCAL_WG or FWA_LOCAL_FWD_KEYS picks another forward; FWA_LOCAL_FWD_WS=0 never, =1 on every
// grid (tests).
constexpr int kLocalFwdWsConsumers = 3;
bool local_fwd_use_ws(int64_t ctas, int sms);
// The warp-specialised TMA query side of the backward (local_bwd_q_ws_kernel.cuh: a producer
// warpgroup and kLocalBwdQWsConsumers consumer warpgroups on consecutive 64-query tiles, one
// persistent CTA per SM), head-dim buckets 64 and 128 on the wgmma backward path. Used where its
// grid (`items` items) fills the `sms` SMs at least once; FWA_LOCAL_BWD_Q_WS=0 never, =1 on every
// grid (tests, A/B timing).
constexpr int kLocalBwdQWsConsumers = 3;
bool local_bwd_q_use_ws(int64_t items, int sms);
// The same for the key side (local_bwd_kv_ws_kernel.cuh: consumer warpgroups on consecutive
// 64-key tiles, each holding dk and dv: 2 at d = 128, 3 at d = 64); FWA_LOCAL_BWD_KV_WS=0 / 1.
constexpr int local_bwd_kv_ws_consumers(int head_dim) { return head_dim == 128 ? 2 : 3; }
bool local_bwd_kv_use_ws(int64_t items, int sms);
// The two grid rules above, for the layer that decides before the backward whether the forward
// writes out_lo (local_attention_autograd.cpp): on the current device, for head dim d, whether the
// backward takes the wgmma path, the 64-key tiles or 64-query tiles per item of each side, and the
// least number of items on which each side is warp-specialised (0: every grid, INT64_MAX: none).
// local_bwd_*_use_ws(items, sms) is items >= the side's min_items.
struct LocalBwdWsGrid {
    bool wgmma;
    int64_t kv_tiles_per_item, q_tiles_per_item;
    int64_t kv_min_items, q_min_items;
};
LocalBwdWsGrid local_bwd_ws_grid(int d);
// A warp-specialised backward side's items over (B, heads, L): ceil(L / (64 tiles_per_item)) B
// heads (heads: Hkv at the key side, H at the query side). Generic over the integer type so that
// the ops layer evaluates the same formula in symbolic sizes (c10::SymInt).
template <typename Int>
Int local_bwd_ws_items(const Int& B, const Int& heads, const Int& L, int64_t tiles_per_item) {
    const int64_t rows = tiles_per_item * kLocalTile;
    return (L + (rows - 1)) / rows * B * heads;
}
// Whether the backward may run its residual-D form (LocalBwdParams::residual_d) where out_lo is
// given and both sides are warp-specialised: true unless FWA_LOCAL_BWD_RESIDUAL=0 (A/B timing,
// tests; read per call).
bool local_bwd_residual_d_enabled();
// The item shift of a warp-specialised query-side kernel with `cons` consumers and steps of kT key
// tiles over `band`: local_ws_item_shift (local_band.h), or FWA_LOCAL_WS_SHIFT=s (a digit; s mod
// cons) for tests and A/B timing, read per call.
int local_ws_item_shift_for(const LocalBand& band, int cons, int kT);
// The default warpgroups per CTA (H100, session 10): 3 at d = 128 (168 registers and 80 KB of
// shared memory per warpgroup: 3 per SM instead of 2 one-warpgroup CTAs; bf16 win(1024, 0)
// 0.908 -> 0.853-0.862 ms, win(4096, 0) 6.17-6.23 -> 5.54-5.62 ms) when the grid still gives at
// least 4 CTAs per SM, 1 otherwise (win(256, 256) at B H = 4: 88 CTAs of 3, 0.020 -> 0.026 ms) and
// at d = 64 (3 one-warpgroup CTAs per SM; 2 or 3 per CTA were slower). (The backward keeps one
// warpgroup per CTA: 2 per CTA ran 1-5 % slower, the warpgroups in lock step at the CTA's barriers
// overlapping each other's softmax less than separate CTAs do.)
inline int local_fwd_default_warpgroups(int head_dim, int64_t L, int64_t batch_heads, int sms) {
    if (head_dim < 128) return 1;
    const int64_t ctas = (L + 3 * kLocalTile - 1) / (3 * kLocalTile) * batch_heads;
    return ctas >= 4 * int64_t(sms) ? 3 : 1;
}

// CTA order of the fp16 / bf16 kernels (LocalFwdParams::tile_group, kv_tile_group) for a
// normalised band, over `slices` slices whose k / v (query side) or q / dout (key side) take
// `slice_bytes` each. Where exactly one side is unbounded (causal-like: left = -1, as plain causal
// or a block-causal window spanning the sequence; or right = -1) a tile's work grows (shrinks)
// linearly along the sequence, to up to n_tiles times the lightest tile's. In slice-major order the
// heaviest tiles of the last slices start in the grid's last wave and run on alone (a
// list-scheduling model of 3 CTAs per SM gives 1.11x the balanced time for causal B8 H16 L2048,
// 1.57x for block256x16 B1 H12 L4096 with its 1.9 waves); tile-major, heaviest first (the
// longest-first rule), gives 1.00-1.03x. But tile-major over every slice has every resident CTA
// of a tile rank read its own slice's k / v: at causal B8 H16 L2048 that is 64 MB, more than the
// L2 (ncu, session 21 run 5: 50 % L2 hits, 1.5 TB/s from DRAM). So the slices go in groups of G
// whose k / v fit in kLocalTileGroupBytes (G >= 1; the model: 1.02x at causal with G = 32).
// Measured (H100, bf16, kernel times, session 21): with one group, block256x16 forward 0.122 ->
// 0.092 ms, key side 0.200 -> 0.168, query side 0.135 -> 0.103; causal forward 0.253 -> 0.246.
// Groups of G (session 22, same call, 2 rounds): causal fwd+bwd 1.018-1.021 ms with one group ->
// 0.995-1.000 with the default G = 32 (key side 0.448-0.450 -> 0.433-0.435, query side 0.279-0.281
// -> 0.273-0.275, forward 0.245 -> 0.244); G = 16 1.004, G = 64 1.001-1.005; block256x16 (one
// group of 12 either way) 0.376-0.383 ms.
// Other bands stay slice-major (0): their tiles carry equal work except at the ends, and
// consecutive CTAs share k / v in L2. FWA_LOCAL_TILE_MAJOR=0 forces slice-major, =1 one group of
// every slice, and FWA_LOCAL_TILE_GROUP=G groups of G (A/B timing, tests); read per call.
constexpr int64_t kLocalTileGroupBytes = int64_t(16) << 20;
int local_tile_group(const LocalBand& band, int64_t slices, int64_t slice_bytes);

// float32 inputs: full-precision SIMT kernels (local_simt_fp32.cu), one warp per row, d <= 256.
constexpr int kLocalSimtMaxHeadDim = 256;
cudaError_t local_attn_fwd_fp32(const LocalFwdParams& p, cudaStream_t s);
cudaError_t local_attn_bwd_fp32(const LocalBwdParams& p, cudaStream_t s);

// Head-dim bucket of d (32, 64 or 128) for the fp16 / bf16 kernels, or 0 when d > 128.
int local_attn_head_dim_bucket(int d);
// Dtype / head-dim dispatch (local_attn_dispatch.cu). Return cudaSuccess or the launch error.
cudaError_t local_attn_fwd(Dtype dt, const LocalFwdParams& p, cudaStream_t s);
cudaError_t local_attn_bwd(Dtype dt, const LocalBwdParams& p, cudaStream_t s);

}  // namespace fwa
