// Torch-free interface of the fp16/bf16 tensor-core window-attention kernels.
//
// Computes, for window b, head h (see csrc/README.md for the full contract):
//   S = f(q kᵀ) + bm[b % nW][h],  P = softmax(S),  out = P v,  lse = log Σ exp(S)
// where f is `scale *` (Swin V1) or `exp(min(logit_scale[h], ln 100)) * cos` (Swin V2), and
// bm is the bias+mask tensor prepared by the op layer: fp32, already multiplied by log2(e),
// padded to an (Npad, Npad) tile with Npad = round_up(N, 64): columns >= N hold -inf (so padded
// keys get probability 0), rows >= N hold 0. (The wgmma forward at Npad >= 128 computes those
// values itself from the bias and mask: FwdParams::bias / mask, window_attn_fwd_reads_bias_mask.)
//
// All pointers are raw; all strides are in elements; q/k/v/out/dout/dq/dk/dv have unit stride in
// the last dimension and 16-byte aligned rows (the op layer copies anything that is not).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cuda_runtime.h>

#include "dropout.h"

namespace fwa {

constexpr int kTileM = 64;   // query rows per CTA tile (4 warps x 16 rows)
constexpr int kTileN = 64;   // keys per tile
constexpr int kNumThreads = 128;

inline int round_up_tile(int n) { return (n + 63) / 64 * 64; }

struct TensorRef {
    void* ptr = nullptr;
    int64_t batch_stride = 0, head_stride = 0, row_stride = 0;
};

struct FwdParams {
    TensorRef q, k, v, out;
    float* lse = nullptr;              // (B, H, N) fp32 contiguous
    // V2 inverse norms 1 / max(||x||, eps), (B, H, N) fp32 each: the forward writes those of q's rows
    // and k's rows it normalised with where these are set (the op's qk_inv_norm result); the tiled
    // backward's kernels read them (its preprocess writes them, unless BwdParams::inv_norms_given).
    float* q_inv_norm = nullptr;
    float* k_inv_norm = nullptr;

    const float* bm = nullptr;         // see above; nullptr when there is neither bias nor mask
    int64_t bm_win_stride = 0, bm_head_stride = 0;   // row stride is Npad, column stride 1
    // The bias and mask themselves: fp32 (H, N, N) bias and (nW, N, N) mask, strides in elements,
    // either null when absent. Read only where bm is null (the forwards that build their
    // bias+mask rows themselves, window_attn_fwd_reads_bias_mask: the wgmma forward) and by the bm
    // build (window_attn_build_bm, BwdParams::bm_build).
    const float* bias = nullptr;
    int64_t bias_s0 = 0, bias_s1 = 0, bias_s2 = 0;
    const float* mask = nullptr;
    int64_t mask_s0 = 0, mask_s1 = 0, mask_s2 = 0;
    // True when the last launch on the stream before the forward kernel is the bm build
    // (window_attn_build_bm, which triggers its dependents early): the wgmma forward is then
    // launched as a programmatic dependent (Hopper PDL) and reads bm only after griddepcontrol.wait,
    // everything else it reads (q, k, v, logit_scale) having been written before the build began.
    // (The backward builds bm in its first kernel instead: BwdParams::bm_build.)
    bool bm_pdl = false;

    const float* logit_scale = nullptr;  // (H) fp32; nullptr for V1
    float scale = 1.f;                   // V1 only

    int B = 0, H = 0, N = 0, d = 0;
    int Npad = 0;                      // round_up(N, 64)
    int nW = 1;                        // windows of distinct bm (mask) entries; 1 without a mask
    int num_m_blocks = 1;              // ceil(N / kTileM)
    // Windows b = w + nW * t that share the same bm slice are processed by one CTA in chunks of
    // `chunk` consecutive t; there are n_chunks chunks per (h, w, m-block).
    int chunk = 1, n_chunks = 1;
    // Backward, query side at Npad > 256 on the warpgroup kernel (bwd_q_wg_kernel.cuh): each
    // (query block, head, bm window, chunk) is n_key_ranges CTAs, one per 256 keys, whose dq
    // partials are summed by a second kernel (1 everywhere else; set by window_attn_plan_bwd).
    int n_key_ranges = 1;
    int stages = 2;                    // forward pipeline depth (set by its launcher)
    int bm_mode = 0;                   // forward bias+mask placement (set by its launcher)
    int groups = 1;                    // forward groups of 4 warps per CTA (set by its launcher)
    // The wgmma forward's main grid also computes the rows past its query blocks (at most 16:
    // fwd_wgmma_fold_form, set by its launcher) instead of the row-tail kernel.
    bool fold_row_tail = false;
    // Forward copy-cursor steps in elements (set by its launcher from the strides, N and groups):
    // one key tile of k / v, and from a window's last key tile (k, v) or its q rows to the same rows
    // of the group's next window (nW * groups windows on). Kernel parameters, so the per-item
    // advance is an add of a constant-bank operand (computed in the kernel, they were re-derived
    // per item: the registers are full).
    int64_t k_tile_step = 0, v_tile_step = 0, k_wrap = 0, v_wrap = 0, q_wrap = 0;
    DropoutArgs dropout;               // threshold 0: no attention dropout
};

#ifdef __CUDACC__
// The work of a CTA of the kernels whose grid is (64-row query block, head, bm window, chunk of
// windows), blockIdx.x in that order, fastest first (the forward, the tiled backward's query
// side): the chunk's windows are w + nW * t for t in [t_begin, t_end), empty past the last one.
struct WindowCtaWork {
    int m_block, h, w, chunk_id, t_begin, t_end;
};
// The (head, bm window, chunk) part: bid indexes a grid of (head h, bm window w, chunk), h fastest
// (window_cta_work's after its query block; the small-window backward's whole grid, m_block 0).
__device__ __forceinline__ WindowCtaWork window_chunk_work(const FwdParams& p, int64_t bid, int m_block) {
    const int h = static_cast<int>(bid % p.H); bid /= p.H;
    const int w = static_cast<int>(bid % p.nW); bid /= p.nW;
    const int chunk_id = static_cast<int>(bid);
    const int nB = p.B / p.nW;
    const int t_begin = chunk_id * p.chunk;
    const int t_end = min(t_begin + p.chunk, nB);
    return WindowCtaWork{m_block, h, w, chunk_id, t_begin, t_end};
}
__device__ __forceinline__ WindowCtaWork window_cta_work(const FwdParams& p) {
    const int64_t bid = blockIdx.x;
    return window_chunk_work(p, bid / p.num_m_blocks, static_cast<int>(bid % p.num_m_blocks));
}
#endif

struct BwdParams : FwdParams {
    TensorRef dout, dq, dk, dv;
    // Per-CTA partial reductions, summed in a fixed order by window_attn_reduce_partials:
    //   dbias_partial: [H][nW * n_chunks][Npad][Npad] fp32 (each CTA writes its rows only)
    //   dalpha_partial: [H][nW * n_chunks * num_m_blocks] fp32 (sum of dS * cos, V2 only)
    float* dbias_partial = nullptr;
    float* dalpha_partial = nullptr;
    // Tiled-path workspace, (B, H, N) fp32 each: D, and (V2, where the caller did not give the
    // forward's) the inverse norms q_inv_norm / k_inv_norm. D starts as rowsum(dout * out) (the key-side kernel's dS, where
    // its rounding averages out over the queries) and is then replaced, for the query-side kernel,
    // by D_i = sum_j P_ij dP_ij / sum_j P_ij summed in a fixed order from dsum_partial: out is
    // rounded to 16 bits, and the error of rowsum(dout * out) is common to every dS_ij of row i, so
    // it adds up coherently in dq_i = sum_j dS_ij k_j (5-10x PyTorch's own fp16 error on Swin V2
    // inputs whose values are close to their mean); dividing by the recomputed sum of P keeps
    // sum_j dS_ij = 0 where the stored lse normalises P only to ~2e-6 (logits ~50).
    float* dsum = nullptr;
    // [ceil(N / 64)][B * H * N][2] fp32: (sum of P_ij dP_ij, sum of P_ij) over one key block's 64
    // keys, written by the key-side kernel (each CTA its own block), summed in block order.
    float* dsum_partial = nullptr;
    // q_inv_norm / k_inv_norm (FwdParams) hold the forward's norms: the preprocess reads no q, k
    bool inv_norms_given = false;
    // n_key_ranges > 1: each key range's dq (projected and scaled as dq itself) in fp32, summed in
    // range order into dq by window_attn_bwd_dq_reduce_kernel. At most kDqPartialBudget bytes: the
    // query side then runs in launches over batches of chunks (window_bwd_dq_batch_chunks), each
    // with its windows' parts, [n_key_ranges][its windows][H][N][d] (range stride below).
    float* dq_partial = nullptr;
    int chunk_offset = 0;                  // the launch's first chunk
    // The key blocks per (window, head) the key side's grid covers (0: all; the last one left to
    // window_attn_bwd_kv_tail_kernel where it holds at most 16 keys: set by the launcher)
    int kv_grid_key_blocks = 0;
    int64_t dq_partial_range_stride = 0;   // elements
    // The query side's CTAs of the first num_m_blocks query blocks also compute the rows past them
    // (at most 16: Npad 192 with N = 129..144, window_bwd_q_fold_tail_on; set by
    // window_attn_plan_bwd, whose num_m_blocks then leaves that block out): 0, or the first such row
    // (128). Their dbias rows go to rows q_tail_fold .. + 15 of the partial from the query block 0
    // CTAs' windows and 16 rows further from block 1's (window_attn_reduce_partials adds both).
    int q_tail_fold = 0;
    // Non-null (the op's backward on the tiled path, with bias or mask): bm (this buffer) is not
    // built yet; the preprocess's first CTAs build it from bias and mask (FwdParams::bias / mask,
    // build_bm_quad) beside its own rows, in one grid: the build and the rows it would otherwise
    // have waited for (a programmatic dependent launches only once every CTA of the build has
    // started) run side by side from the start.
    float* bm_build = nullptr;
};

constexpr int64_t kDqPartialBudget = int64_t(256) << 20;
// kDqPartialBudget, or FWA_BWD_DQ_PARTIAL_BYTES (tests: a small budget forces a launch per chunk).
inline int64_t window_bwd_dq_partial_budget() {
    static const int64_t budget = [] {
        const char* e = std::getenv("FWA_BWD_DQ_PARTIAL_BYTES");
        return e != nullptr && e[0] != '\0' ? std::max<int64_t>(0, std::atoll(e)) : kDqPartialBudget;
    }();
    return budget;
}
// Chunks per query-side launch with key ranges: the most whose dq parts fit the budget (>= 1).
inline int window_bwd_dq_batch_chunks(const FwdParams& p) {
    const int64_t per_chunk = int64_t(p.n_key_ranges) * p.nW * p.chunk * p.H * p.N * p.d * 4;
    const int64_t n = per_chunk > 0 ? window_bwd_dq_partial_budget() / per_chunk : 1;
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(n, std::max(p.n_chunks, 1))));
}
// The query-side launch (key ranges) whose first chunk is c0: its chunks and its windows
// [b0, b1) (the dq parts of the launch are indexed from b0).
struct DqLaunchBatch {
    int chunks;
    int64_t b0, b1;
};
inline DqLaunchBatch window_bwd_dq_batch(const FwdParams& p, int c0) {
    const int cb = std::min(window_bwd_dq_batch_chunks(p), p.n_chunks - c0);
    const int64_t nB = p.B / p.nW;
    return {cb, int64_t(p.nW) * p.chunk * c0, int64_t(p.nW) * std::min<int64_t>(nB, int64_t(p.chunk) * (c0 + cb))};
}
// fp32 elements of the dq-part workspace: the first (largest) launch's parts; 0 without key ranges.
inline int64_t window_bwd_dq_partial_elems(const FwdParams& p) {
    if (p.n_key_ranges <= 1) return 0;
    const DqLaunchBatch first = window_bwd_dq_batch(p, 0);
    return int64_t(p.n_key_ranges) * (first.b1 - first.b0) * p.H * p.N * p.d;
}

// The warpgroup query-side kernel addresses a window's rows with 32-bit offsets: Npad rows of q,
// k, v and dout must span less than 2^31 elements.
inline bool bwd_q_wg_shape_ok(const BwdParams& p) {
    const int64_t lim = int64_t(1) << 31;
    auto fits = [&](const TensorRef& t) { return int64_t(p.Npad) * t.row_stride < lim; };
    return fits(p.q) && fits(p.k) && fits(p.v) && fits(p.dout);
}

enum class Dtype { kFloat16, kBFloat16 };

// Launchers (one instantiation per dtype x head-dim bucket lives in its own .cu file).
// Return cudaSuccess or the launch error.
template <typename Element, int kHeadDim> cudaError_t run_fwd(const FwdParams& p, cudaStream_t s);
// The forward on Hopper warpgroup MMA for head dim <= 32 and Npad = kKeys of 64, 128, 192 or 256 without
// attention dropout (fwd_wgmma_kernel.cuh); run_fwd<Element, 32> calls it where
// window_fwd_wgmma_enabled().
// kTail: the keys (16, 32, 48 or 64) its last 64-key block computes, fwd_wgmma_tail_keys.
template <typename Element, int kKeys, int kTail> cudaError_t run_fwd_wgmma(const FwdParams& p, cudaStream_t s);
// The same forward at head dim 33..64 and Npad = kKeys of 64 or 128 (128-byte rows; run_fwd<Element,
// 64> calls it where window_fwd_wgmma_shape_ok and window_fwd_wgmma_enabled hold).
template <typename Element, int kKeys, int kTail> cudaError_t run_fwd_wgmma_hd64(const FwdParams& p, cudaStream_t s);
// The width of the wgmma forward's last key block for N keys padded to Npad (and of the backward
// query side's at Npad 192, bwd_q_wg_kernel.cuh): the keys N leaves in it rounded up to 16 (N = 144,
// Npad 192: 16, where a 64-key block spent 3/4 of its products and exponentials on padded keys), or
// 64 where FWA_WINDOW_WGMMA_TAIL=0 (A/B timing, tests).
int fwd_wgmma_tail_keys(int N, int Npad);
// True when the current device runs the wgmma forward: an sm_90a build (setup.py defines
// FWA_SM90A_BUILT), a compute capability 9.0 device, and FWA_WINDOW_WGMMA (testing, A/B timing) not
// "0" (the mma.sync forward for every N).
bool window_fwd_wgmma_enabled();
// True unless FWA_WINDOW_WGMMA_SMALL=0: the wgmma forward also takes N <= 64 (Npad 64).
bool window_fwd_wgmma_small_enabled();
// True unless FWA_WINDOW_WGMMA_HD64=0: the wgmma forward also takes head dims 33..64 at N <= 128.
bool window_fwd_wgmma_hd64_enabled();
// The shapes the wgmma forward takes: N <= 256 at d <= 32, N <= 128 at d <= 64
// (window_fwd_wgmma_hd64_enabled()), Npad 64 only where window_fwd_wgmma_small_enabled(), and rows
// whose offsets within a window fit 32 bits (its copies address them so: fewer live registers).
inline bool window_fwd_wgmma_shape_ok(const FwdParams& p) {
    const int64_t lim = int64_t(1) << 31;
    auto fits = [&](const TensorRef& t) { return int64_t(p.Npad) * t.row_stride < lim; };
    const int max_npad = p.d <= 32 ? 256 : (p.d <= 64 && window_fwd_wgmma_hd64_enabled() ? 2 * kTileN : 0);
    return (p.Npad > kTileN || window_fwd_wgmma_small_enabled()) && p.Npad <= max_npad && fits(p.q) &&
           fits(p.k) && fits(p.v);
}
// True when window_attn_fwd runs a forward that reads FwdParams::bias / mask instead of bm (the
// wgmma forward at Npad >= 128 and head dim <= 32, or at head dim 33..64:
// window_fwd_wgmma_shape_ok, window_fwd_wgmma_enabled, no dropout),
// so that the op layer launches no bm build for it; FWA_WINDOW_FWD_DIRECT_BM=0 (A/B timing, tests)
// keeps the build. p needs N, Npad, d and the q, k, v strides.
bool window_attn_fwd_reads_bias_mask(const FwdParams& p, bool dropout);
// True when the tiled backward (N > 64) at head dim 32 takes its products from wgmma
// (bwd_tiled_kernels.cuh, kWgmma): an sm_90a build, a compute capability 9.0 device, and
// FWA_WINDOW_BWD_WGMMA (testing, A/B timing) not "0".
bool window_bwd_wgmma_enabled();
// Whether that backward's query side at this Npad runs bwd_q_wg_kernel.cuh's kernel (up to 256 keys
// of a window per CTA, dbias in registers over the chunk): by default at every Npad >= 128 (H100,
// V2, bf16: (1024, 6, 256) 0.681 -> 0.502 ms, session 23 run D; (1024, 4, 100) 0.134 -> 0.109,
// session 24 run A; a 3-warpgroup form at Npad 192 was slower, 0.149 -> 0.153 at (512, 4, 144), the
// 256-key form with a sub-block skipped faster, 0.141 -> 0.126, session 25 run E; above 256 in key
// ranges, (128, 6, 576) 0.65 -> 0.42 + 0.08 for the sum of the parts, session 25 runs F-H);
// FWA_WINDOW_BWD_Q_WG (testing, A/B timing) "0": never, "256": Npad 256 only, "128": 128 and 256,
// "192": 128 to 256.
bool window_bwd_q_wg_enabled(int Npad);
// Key ranges of the query side (BwdParams::n_key_ranges) for this problem: ceil(Npad / 256) where
// the warpgroup kernel takes Npad > 256 (head dim <= 32 on sm_90a, FWA_WINDOW_BWD_Q_WG), else 1.
// Needs p's N, d, Npad and tensor strides.
int window_bwd_q_key_ranges(const BwdParams& p);
// Whether the query side folds the rows past its 64-row blocks into them (BwdParams::q_tail_fold):
// the warpgroup kernel at Npad 192 whose last key block is 16 wide (N = 129..144: Swin window 12),
// head dim <= 32, no dropout, on the tiled path (not N <= 64's), and FWA_WINDOW_BWD_Q_FOLD (A/B
// timing, tests) not "0". Needs p's N, d, Npad, tensor strides, n_key_ranges and dropout.
bool window_bwd_q_fold_tail_on(const BwdParams& p);
template <typename Element, int kHeadDim> cudaError_t run_bwd_small(const BwdParams& p, cudaStream_t s);
template <typename Element, int kHeadDim> cudaError_t run_bwd_tiled(const BwdParams& p, cudaStream_t s);

// Dtype/head-dim dispatch over the instantiations above (window_attn_dispatch.cu).
cudaError_t window_attn_fwd(Dtype dt, const FwdParams& p, cudaStream_t s);
cudaError_t window_attn_bwd(Dtype dt, const BwdParams& p, cudaStream_t s);
bool window_attn_bwd_uses_small_path(const FwdParams& p);
int window_attn_head_dim_bucket(int d);

// Sets num_m_blocks, chunk and n_chunks: the fewest chunks per (m-block, head, bm window) whose
// grid fills the waves of num_sms * ctas_per_sm CTAs it occupies to >= 85 % (at most about
// 4 * `waves` waves), every chunk non-empty (the backward: its chunks size the partial buffers).
// `fold_blocks`: the last query blocks left out of num_m_blocks (BwdParams::q_tail_fold).
void window_attn_plan_chunks(FwdParams& p, int num_sms, int ctas_per_sm, int waves, int fold_blocks = 0);
// The same for the forward, whose CTAs are `groups` groups of warps splitting a chunk's windows:
// the fewest chunks with the least waves x ceil(chunk / groups), the windows of the busiest CTA
// slot.
void window_attn_plan_chunks_balanced(FwdParams& p, int num_sms, int ctas_per_sm, int groups);
// Plans the backward's chunking (which sizes the dbias / dalpha partial buffers) from the
// occupancy of the kernel that writes the partials.
void window_attn_plan_bwd(Dtype dt, BwdParams& p);
// CTAs per SM of the kernel that writes the partials: the small-path kernel, or the tiled path's
// query-side kernel (whose shared memory depends on Npad).
template <typename Element, int kHeadDim> int bwd_small_ctas_per_sm();
template <typename Element, int kHeadDim> int bwd_q_ctas_per_sm(const FwdParams& p);

// The float4 count of p's bm ([nWb][Hb][Npad][Npad]; nWb = nW with a mask else 1, Hb = H with a
// bias else 1) where BwdParams::bm_build asks the backward to build it from p.bias and p.mask.
#ifdef __CUDACC__
__host__ __device__
#endif
inline int64_t window_bm_build_quads(const BwdParams& p) {
    if (p.bm_build == nullptr) return 0;
    return int64_t(p.mask != nullptr ? p.nW : 1) * (p.bias != nullptr ? p.H : 1) * p.Npad * (p.Npad / 4);
}
// Builds BwdParams::bm_build, the padded, log2(e)-scaled bm tensor written densely as
// [nWb][Hb][Npad][Npad] (nWb = mask ? nW : 1, Hb = bias ? H : 1; layout as described above), from
// p.bias (H, N, N strided) and p.mask (nW, N, N strided), fp32, either may be null; nothing where
// bm_build is null. The op layer's forward builds its bm this way (the launch before the forward
// kernel: FwdParams::bm_pdl), as do the backward paths without the tiled preprocess (whose first
// CTAs build it themselves).
cudaError_t window_attn_build_bm(const BwdParams& p, cudaStream_t s);

// Resolves the generator state (captured or not) into rng_state[0..1] = (seed, offset) on the device.
cudaError_t window_attn_write_rng_state(int64_t* rng_state, const PhiloxSeedArgs& args, cudaStream_t s);

// dbias[h][i][j] = sum_p partial[h][p][i][j] (i, j < N), dalpha[h] = sum_p dalpha_partial[h][p];
// dlogit[h] = dalpha[h] * alpha[h] where logit_scale[h] <= ln 100, else 0.
cudaError_t window_attn_reduce_partials(const BwdParams& p, int num_dbias_partials,
                                        int num_dalpha_partials, float* dbias, float* dlogit,
                                        cudaStream_t s);

}  // namespace fwa
