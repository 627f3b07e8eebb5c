// Host-side dispatch over the (dtype, head-dim bucket) instantiations, window chunk planning,
// and the two small auxiliary kernels: the padded bias+mask builder and the fixed-order reduction
// of the per-CTA dbias / dalpha partials (which is what keeps the backward deterministic).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "bwd_small_kernel.cuh"   // BwdSmallSmem: the small-path backward's shared memory
#include "kernel_utils.cuh"
#include "launch_utils.h"
#include "window_attn.h"

namespace fwa {

int window_attn_head_dim_bucket(int d) { return d <= 32 ? 32 : (d <= 64 ? 64 : 128); }

#define FWA_HEADDIM_SWITCH(D, ...)                                  \
    [&] {                                                           \
        switch (window_attn_head_dim_bucket(D)) {                   \
            case 32: { constexpr int kHeadDim = 32; return __VA_ARGS__(); } \
            case 64: { constexpr int kHeadDim = 64; return __VA_ARGS__(); } \
            default: { constexpr int kHeadDim = 128; return __VA_ARGS__(); } \
        }                                                           \
    }()

namespace {
// FWA_BWD_FORCE_TILED=1 (testing): the tiled backward for every N, so that its use at N <= 64 (the
// fallback below) can be tested on a GPU where the small path fits.
bool force_tiled_bwd() {
    static const bool force = [] {
        const char* e = std::getenv("FWA_BWD_FORCE_TILED");
        return e != nullptr && e[0] == '1';
    }();
    return force;
}
size_t bwd_small_smem_bytes(int d) {
    return FWA_HEADDIM_SWITCH(d, [&] { return BwdSmallSmem<kHeadDim>::kBytes; });
}
}  // namespace

// The one-CTA-per-window backward for N <= 64 where its shared memory fits the device (at d > 64 it
// needs 173 KB: more than sm_80's 163 KB), the tiled one otherwise.
bool window_attn_bwd_uses_small_path(const FwdParams& p) {
    return p.N <= kTileN && !force_tiled_bwd() && bwd_small_smem_bytes(p.d) <= max_smem_per_block();
}

namespace {

// Sets num_m_blocks (less fold_blocks) and returns the windows per bm window (B / nW); with none,
// an empty plan.
int64_t chunk_plan_start(FwdParams& p, int fold_blocks = 0) {
    p.num_m_blocks = (p.N + kTileM - 1) / kTileM - fold_blocks;
    const int64_t nB = p.nW > 0 ? p.B / p.nW : 0;
    if (nB == 0) {
        p.chunk = 1;
        p.n_chunks = 0;
    }
    return nB;
}

// chunk = ceil(nB / n), and the chunk count that leaves no chunk empty.
void chunk_plan_set(FwdParams& p, int64_t nB, int64_t n) {
    const int64_t chunk = (nB + n - 1) / n;
    p.chunk = static_cast<int>(chunk);
    p.n_chunks = static_cast<int>((nB + chunk - 1) / chunk);   // every chunk is non-empty
}

}  // namespace

void window_attn_plan_chunks(FwdParams& p, int num_sms, int ctas_per_sm, int waves, int fold_blocks) {
    const int64_t nB = chunk_plan_start(p, fold_blocks);
    if (nB == 0) return;
    const int64_t base = int64_t(p.num_m_blocks) * p.H * p.nW * std::max(p.n_key_ranges, 1);
    const int64_t cap = int64_t(std::max(num_sms, 1)) * std::max(ctas_per_sm, 1);
    // Fewest chunks (most windows per CTA: bias/mask and partial writes amortised best) whose
    // grid fills the waves it occupies to >= 85%; otherwise the best-filling count.
    const int64_t max_chunks = std::min<int64_t>(nB, std::max<int64_t>(cap * std::max(waves, 1) * 4 / base, 1));
    int64_t n_chunks = 1;
    double best_fill = -1.0;
    for (int64_t n = 1; n <= max_chunks; ++n) {
        const int64_t chunk_n = (nB + n - 1) / n;
        const int64_t ctas = base * ((nB + chunk_n - 1) / chunk_n);
        const double fill = double(ctas) / double(((ctas + cap - 1) / cap) * cap);
        if (fill > best_fill + 1e-9) {
            best_fill = fill;
            n_chunks = n;
        }
        if (fill >= 0.85 && ctas >= std::min<int64_t>(cap, base * nB)) break;
    }
    chunk_plan_set(p, nB, n_chunks);
}

void window_attn_plan_chunks_balanced(FwdParams& p, int num_sms, int ctas_per_sm, int groups) {
    const int64_t nB = chunk_plan_start(p);
    if (nB == 0) return;
    const int64_t base = int64_t(p.num_m_blocks) * p.H * p.nW;
    const int64_t cap = int64_t(std::max(num_sms, 1)) * std::max(ctas_per_sm, 1);
    // A CTA of `groups` independent groups takes as long as its busiest group: ceil(chunk / groups)
    // windows. Fewest chunks with the least (waves x windows per group): the busiest CTA slot's
    // windows. (For one group the fill rule of window_attn_plan_chunks let 960 CTAs of 13 windows
    // take 2 rounds of the 528 slots at (4096, 3, 64): 26 windows per slot where 8-window chunks
    // need 24.)
    const int64_t max_chunks = std::min<int64_t>(nB, std::max<int64_t>(cap * 4 / base, 1));
    int64_t best_n = 1, best_cost = -1;
    for (int64_t n = 1; n <= max_chunks; ++n) {
        const int64_t chunk_n = (nB + n - 1) / n;
        const int64_t ctas = base * ((nB + chunk_n - 1) / chunk_n);
        const int64_t cost = ((ctas + cap - 1) / cap) * ((chunk_n + groups - 1) / groups);
        if (best_cost < 0 || cost < best_cost) {
            best_cost = cost;
            best_n = n;
        }
    }
    chunk_plan_set(p, nB, best_n);
}

namespace {
// The wgmma kernels exist (an sm_90a build) and the current device runs them (compute capability 9.0).
bool sm90a_device() {
#ifdef FWA_SM90A_BUILT
    return current_device_is_sm90();
#else
    return false;
#endif
}
}  // namespace

bool window_fwd_wgmma_enabled() {
    static const bool allowed = env_switch_on("FWA_WINDOW_WGMMA");
    return allowed && sm90a_device();
}

bool window_attn_fwd_reads_bias_mask(const FwdParams& p, bool dropout) {
    static const bool direct = env_switch_on("FWA_WINDOW_FWD_DIRECT_BM");
    // (launch_fwd_impl's condition for the wgmma forward) At Npad 64 the bm build is small and the
    // forward, its programmatic dependent, issues its first copies while the build runs: there the
    // rows from bias and mask cost more at each CTA's start than the build (session 33 run F:
    // (4096, 3, 49) 73.1 -> 77.5 us, against -1.3 us at N = 144 and -5 us at (512, 4, 256)).
    // At head dims 33..64 (Npad 64 and 128) a CTA is 4 warpgroups: 512 threads load its strip once for
    // ~8 windows per warpgroup at (1024, 4, 64, 64), where reading bias and mask beat the build
    // (session 38 run F: 61.7-62.1 -> 60.3-60.7 us, V1 and V2; (256, 4, 49, 64) 19.5-19.7 -> 19.1-19.8).
    const int bucket = window_attn_head_dim_bucket(p.d);
    const bool form = (p.Npad >= 128 && bucket == 32) || bucket == 64;
    return direct && !dropout && form && window_fwd_wgmma_shape_ok(p) && window_fwd_wgmma_enabled();
}

bool window_bwd_wgmma_enabled() {
    static const bool allowed = env_switch_on("FWA_WINDOW_BWD_WGMMA");
    return allowed && sm90a_device();
}

bool window_bwd_q_wg_enabled(int Npad) {
    // FWA_WINDOW_BWD_Q_WG: "0" never, "256" Npad 256 only, "128" Npad 128 and 256 (session 24's
    // default), "192" Npad 128 to 256 (192 on the 256-key form), unset / anything else ("1",
    // "all"): also Npad > 256 (key ranges of 256, BwdParams::n_key_ranges)
    static const int mode = [] {
        const char* e = std::getenv("FWA_WINDOW_BWD_Q_WG");
        if (e == nullptr || e[0] == '\0') return 4;
        if (std::strcmp(e, "0") == 0) return 0;
        if (std::strcmp(e, "256") == 0) return 1;
        if (std::strcmp(e, "128") == 0) return 2;
        return std::strcmp(e, "192") == 0 ? 3 : 4;
    }();
    if (Npad == 256) return mode >= 1;
    if (Npad == 128) return mode >= 2;
    if (Npad == 192) return mode >= 3;
    return Npad > 256 && mode >= 4;
}

int window_bwd_q_key_ranges(const BwdParams& p) {
    if (p.Npad <= 256 || window_attn_bwd_uses_small_path(p) || window_attn_head_dim_bucket(p.d) != 32 ||
        !window_bwd_wgmma_enabled() || !window_bwd_q_wg_enabled(p.Npad) || !bwd_q_wg_shape_ok(p))
        return 1;
    return (p.Npad + 255) / 256;
}

bool window_bwd_q_fold_tail_on(const BwdParams& p) {
    static const bool on = env_switch_on("FWA_WINDOW_BWD_Q_FOLD");
    return on && p.Npad == 192 && window_attn_head_dim_bucket(p.d) == 32 && p.dropout.rng_state == nullptr &&
           p.n_key_ranges == 1 && !window_attn_bwd_uses_small_path(p) && window_bwd_wgmma_enabled() &&
           window_bwd_q_wg_enabled(p.Npad) && bwd_q_wg_shape_ok(p) && fwd_wgmma_tail_keys(p.N, p.Npad) == 16;
}

int fwd_wgmma_tail_keys(int N, int Npad) {
    static const bool on = env_switch_on("FWA_WINDOW_WGMMA_TAIL");
    const int left = N - (Npad - kTileN);   // 1 .. 64 keys in the last block
    return on && left > 0 ? std::min((left + 15) / 16 * 16, kTileN) : kTileN;
}

bool window_fwd_wgmma_small_enabled() {
    static const bool allowed = env_switch_on("FWA_WINDOW_WGMMA_SMALL");
    return allowed;
}

bool window_fwd_wgmma_hd64_enabled() {
    static const bool allowed = env_switch_on("FWA_WINDOW_WGMMA_HD64");
    return allowed;
}

cudaError_t window_attn_fwd(Dtype dt, const FwdParams& p, cudaStream_t s) {
    return FWA_HEADDIM_SWITCH(p.d, [&] {
        return dt == Dtype::kFloat16 ? run_fwd<__half, kHeadDim>(p, s)
                                     : run_fwd<__nv_bfloat16, kHeadDim>(p, s);
    });
}

void window_attn_plan_bwd(Dtype dt, BwdParams& p) {
    const bool small = window_attn_bwd_uses_small_path(p);
    p.n_key_ranges = window_bwd_q_key_ranges(p);
    p.q_tail_fold = window_bwd_q_fold_tail_on(p) ? kTileM * ((p.N - 1) / kTileM) : 0;
    const int ctas = FWA_HEADDIM_SWITCH(p.d, [&] {
        if (dt == Dtype::kFloat16)
            return small ? bwd_small_ctas_per_sm<__half, kHeadDim>() : bwd_q_ctas_per_sm<__half, kHeadDim>(p);
        return small ? bwd_small_ctas_per_sm<__nv_bfloat16, kHeadDim>()
                     : bwd_q_ctas_per_sm<__nv_bfloat16, kHeadDim>(p);
    });
    window_attn_plan_chunks(p, num_sms(), ctas, /*waves=*/1, p.q_tail_fold > 0 ? 1 : 0);
    if (p.n_key_ranges > 1 && p.n_chunks > 0) {
        // one chunk's dq parts within the budget too (the launches go by whole chunks)
        const int64_t per_t = int64_t(p.n_key_ranges) * p.nW * p.H * p.N * p.d * 4;
        const int64_t max_chunk = std::max<int64_t>(1, window_bwd_dq_partial_budget() / per_t);
        if (p.chunk > max_chunk) {
            const int64_t nB = p.B / p.nW;
            chunk_plan_set(p, nB, (nB + max_chunk - 1) / max_chunk);
        }
    }
}

cudaError_t window_attn_bwd(Dtype dt, const BwdParams& p, cudaStream_t s) {
    const bool small = window_attn_bwd_uses_small_path(p);
    return FWA_HEADDIM_SWITCH(p.d, [&] {
        if (dt == Dtype::kFloat16)
            return small ? run_bwd_small<__half, kHeadDim>(p, s) : run_bwd_tiled<__half, kHeadDim>(p, s);
        return small ? run_bwd_small<__nv_bfloat16, kHeadDim>(p, s)
                     : run_bwd_tiled<__nv_bfloat16, kHeadDim>(p, s);
    });
}

// ---------------------------------------------------------------------------------------------

// One float4 per thread (build_bm_quad).
template <typename Index>
__global__ void build_bm_kernel(float* bm, const float* bias, int64_t b0, int64_t b1, int64_t b2,
                                const float* mask, int64_t m0, int64_t m1, int64_t m2, int Hb,
                                int N, int Npad, Index total4) {
    // A forward kernel launched as a programmatic dependent (FwdParams::bm_pdl) may start its
    // prologue now; it reads bm only after griddepcontrol.wait (this grid complete and flushed).
    pdl_launch_dependents();
    const Index q = Index(blockIdx.x) * blockDim.x + threadIdx.x;
    if (q >= total4) return;
    build_bm_quad<Index>(bm, bias, b0, b1, b2, mask, m0, m1, m2, Hb, N, Npad, q);
}

cudaError_t window_attn_build_bm(const BwdParams& p, cudaStream_t s) {
    const int64_t total4 = window_bm_build_quads(p);   // 0 where bm_build is null
    if (total4 == 0) return cudaSuccess;
    const int Hb = p.bias ? p.H : 1;
    const int threads = 256;
    const unsigned blocks = static_cast<unsigned>((total4 + threads - 1) / threads);
    if (total4 <= INT32_MAX)
        build_bm_kernel<int><<<blocks, threads, 0, s>>>(p.bm_build, p.bias, p.bias_s0, p.bias_s1, p.bias_s2, p.mask,
                                                        p.mask_s0, p.mask_s1, p.mask_s2, Hb, p.N, p.Npad,
                                                        static_cast<int>(total4));
    else
        build_bm_kernel<int64_t><<<blocks, threads, 0, s>>>(p.bm_build, p.bias, p.bias_s0, p.bias_s1, p.bias_s2,
                                                            p.mask, p.mask_s0, p.mask_s1, p.mask_s2, Hb, p.N,
                                                            p.Npad, total4);
    return cudaGetLastError();
}

// dbias[h, i, j] = sum over the P window-chunk partials; dlogit[h] = sum over its partials times
// d exp(clamp(ls, max = ln 100)) / d ls. One launch for both (the blocks past the dbias range take
// dlogit): the backward runs once per layer and training step, where every launch costs host time.
// Each output is one thread's fixed-order sum: bitwise deterministic.
// Rows i >= tail_row0 > 0 (BwdParams::q_tail_fold) have a second part 16 rows on in each partial.
__global__ void reduce_partials_kernel(const float* dbias_partial, int P_bias, int Npad, int N, int H,
                                       float* dbias, unsigned dbias_blocks, const float* dalpha_partial,
                                       int P_alpha, const float* logit_scale, float* dlogit, int tail_row0) {
    if (blockIdx.x < dbias_blocks) {
        const int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
        const int64_t total = int64_t(H) * N * N;
        if (idx >= total) return;
        float acc = 0.f;
        if (P_bias > 0) {
            const int j = static_cast<int>(idx % N);
            const int i = static_cast<int>((idx / N) % N);
            const int h = static_cast<int>(idx / (int64_t(N) * N));
            const float* src = dbias_partial + int64_t(h) * P_bias * Npad * Npad + int64_t(i) * Npad + j;
            if (tail_row0 > 0 && i >= tail_row0) {
                for (int k = 0; k < P_bias; ++k) {
                    acc += src[int64_t(k) * Npad * Npad];
                    acc += src[int64_t(k) * Npad * Npad + 16 * Npad];
                }
            } else {
                for (int k = 0; k < P_bias; ++k) acc += src[int64_t(k) * Npad * Npad];
            }
        }
        dbias[idx] = acc;   // no windows: 0
        return;
    }
    const int h = static_cast<int>(blockIdx.x - dbias_blocks) * blockDim.x + threadIdx.x;
    if (h >= H) return;
    float acc = 0.f;
    for (int k = 0; k < P_alpha; ++k) acc += dalpha_partial[int64_t(h) * P_alpha + k];
    const float ls = logit_scale[h];
    // d/dls exp(clamp(ls, max=ln 100)): flows where ls <= ln 100 (torch.clamp semantics).
    dlogit[h] = ls <= kLogitScaleMax ? acc * expf(ls) : 0.f;
}

cudaError_t window_attn_reduce_partials(const BwdParams& p, int num_dbias_partials,
                                        int num_dalpha_partials, float* dbias, float* dlogit,
                                        cudaStream_t s) {
    constexpr int kThreads = 256;
    const int64_t dbias_total = dbias != nullptr ? int64_t(p.H) * p.N * p.N : 0;
    const unsigned dbias_blocks = static_cast<unsigned>((dbias_total + kThreads - 1) / kThreads);
    const unsigned dlogit_blocks = dlogit != nullptr ? static_cast<unsigned>((p.H + kThreads - 1) / kThreads) : 0;
    if (dbias_blocks + dlogit_blocks == 0) return cudaSuccess;
    reduce_partials_kernel<<<dbias_blocks + dlogit_blocks, kThreads, 0, s>>>(
        p.dbias_partial, num_dbias_partials, p.Npad, p.N, p.H, dbias, dbias_blocks, p.dalpha_partial,
        num_dalpha_partials, p.logit_scale, dlogit, num_dbias_partials > 0 ? p.q_tail_fold : 0);
    return cudaGetLastError();
}

}  // namespace fwa

namespace fwa {

__global__ void write_rng_state_kernel(int64_t* rng_state, PhiloxSeedArgs a) {
    if (a.captured) {
        rng_state[0] = *a.seed_ptr;
        rng_state[1] = static_cast<int64_t>(static_cast<uint64_t>(*a.offset_ptr) + a.offset_intragraph);
    } else {
        rng_state[0] = static_cast<int64_t>(a.seed);
        rng_state[1] = static_cast<int64_t>(a.offset);
    }
}

cudaError_t window_attn_write_rng_state(int64_t* rng_state, const PhiloxSeedArgs& args, cudaStream_t s) {
    write_rng_state_kernel<<<1, 1, 0, s>>>(rng_state, args);
    return cudaGetLastError();
}

}  // namespace fwa
