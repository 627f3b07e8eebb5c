// Host-side dispatch of the local-attention kernels over their (dtype, head-dim bucket)
// instantiations (csrc/kernels/local/instantiations/). Torch-free.
#include "local_attn.h"

#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "../launch_utils.h"

namespace fwa {

int local_attn_head_dim_bucket(int d) {
    if (d <= 0) return 0;
    return d <= 32 ? 32 : (d <= 64 ? 64 : (d <= 128 ? 128 : 0));
}

#define FWA_LOCAL_HEADDIM_SWITCH(D, ...)                                       \
    [&]() -> cudaError_t {                                                     \
        switch (local_attn_head_dim_bucket(D)) {                               \
            case 32: { constexpr int kHeadDim = 32; return __VA_ARGS__(); }    \
            case 64: { constexpr int kHeadDim = 64; return __VA_ARGS__(); }    \
            case 128: { constexpr int kHeadDim = 128; return __VA_ARGS__(); }  \
            default: return cudaErrorInvalidValue;                             \
        }                                                                      \
    }()

bool local_wgmma_enabled(bool backward) {
#ifdef FWA_SM90A_BUILT
    // 0 = off, 1 = forward only, 2 = forward and backward
    static const int allowed = [] {
        const char* e = std::getenv("FWA_LOCAL_WGMMA");
        if (e == nullptr || e[0] == '\0') return 2;
        if (e[0] == '0') return 0;
        return e[0] == 'f' ? 1 : 2;
    }();
    if (allowed == 0 || (backward && allowed == 1)) return false;
    return current_device_is_sm90();
#else
    (void)backward;
    return false;
#endif
}

// The value of environment variable `name` when it spells one of `choices` exactly, else 0.
static int env_choice(const char* name, std::initializer_list<int> choices) {
    const char* e = std::getenv(name);
    if (e == nullptr) return 0;
    for (int c : choices)
        if (std::to_string(c) == e) return c;
    return 0;
}

int local_wgmma_warpgroups(int fallback) {
    static const int forced = env_choice("FWA_LOCAL_WG", {1, 2, 3});
    return forced != 0 ? forced : fallback;
}

int local_fwd_keys_per_step(int fallback) {
    static const int forced = env_choice("FWA_LOCAL_FWD_KEYS", {64, 128});
    return forced != 0 ? forced : fallback;
}

// A warp-specialised kernel's switch: -1 where environment variable `name` is unset or empty, 0
// where it starts with '0', else 1.
static int env_ws_switch(const char* name) {
    const char* e = std::getenv(name);
    if (e == nullptr || e[0] == '\0') return -1;
    return e[0] == '0' ? 0 : 1;
}

bool local_fwd_use_ws(int64_t ctas, int sms) {
    static const int forced = env_ws_switch("FWA_LOCAL_FWD_WS");
    if (forced >= 0) return forced == 1;
    if (local_wgmma_warpgroups(0) != 0 || local_fwd_keys_per_step(0) != 0) return false;
    return ctas >= sms;
}

// The least grid (items) a switch's kernel runs on: `sms` where unset, 0 (every grid) where 1,
// INT64_MAX (none) where 0.
static int64_t ws_min_items(int forced, int sms) {
    return forced < 0 ? int64_t(sms) : (forced == 1 ? int64_t(0) : INT64_MAX);
}
static int64_t local_bwd_q_ws_min_items(int sms) {
    static const int forced = env_ws_switch("FWA_LOCAL_BWD_Q_WS");
    return ws_min_items(forced, sms);
}
static int64_t local_bwd_kv_ws_min_items(int sms) {
    static const int forced = env_ws_switch("FWA_LOCAL_BWD_KV_WS");
    return ws_min_items(forced, sms);
}

bool local_bwd_q_use_ws(int64_t items, int sms) { return items >= local_bwd_q_ws_min_items(sms); }

bool local_bwd_kv_use_ws(int64_t items, int sms) { return items >= local_bwd_kv_ws_min_items(sms); }

LocalBwdWsGrid local_bwd_ws_grid(int d) {
    // launch_local_bwd (local_bwd_kernels.cuh): the wgmma path at head-dim buckets 64 and 128, whose
    // launch_local_bwd_impl counts each side's items by local_bwd_ws_items with these tiles per item
    LocalBwdWsGrid g;
    const int bucket = local_attn_head_dim_bucket(d);
    g.wgmma = bucket >= 64 && local_wgmma_enabled(true);
    g.kv_tiles_per_item = bucket > 0 ? local_bwd_kv_ws_consumers(bucket) : 1;
    g.q_tiles_per_item = kLocalBwdQWsConsumers;
    const int sms = num_sms();
    g.kv_min_items = local_bwd_kv_ws_min_items(sms);
    g.q_min_items = local_bwd_q_ws_min_items(sms);
    return g;
}

bool local_bwd_residual_d_enabled() {
    const char* e = std::getenv("FWA_LOCAL_BWD_RESIDUAL");
    return e == nullptr || e[0] != '0';
}

int local_ws_item_shift_for(const LocalBand& band, int cons, int kT) {
    const char* e = std::getenv("FWA_LOCAL_WS_SHIFT");
    if (e != nullptr && e[0] >= '0' && e[0] <= '9' && e[1] == '\0') return (e[0] - '0') % cons;
    return local_ws_item_shift(band, cons, kT);
}

int local_tile_group(const LocalBand& band, int64_t slices, int64_t slice_bytes) {
    // Read per call (not cached like the switches above) so that a test can compare the orders in
    // one process.
    const int64_t cap = slices < INT32_MAX ? slices : INT32_MAX;
    const char* e = std::getenv("FWA_LOCAL_TILE_MAJOR");
    if (e != nullptr && (e[0] == '0' || e[0] == '1') && e[1] == '\0') return e[0] == '1' ? static_cast<int>(cap) : 0;
    if (const char* g = std::getenv("FWA_LOCAL_TILE_GROUP")) {
        const long long v = std::atoll(g);
        if (v > 0) return static_cast<int>(v < cap ? v : cap);
    }
    if ((band.left < 0) == (band.right < 0)) return 0;
    const int64_t g = slice_bytes > 0 ? kLocalTileGroupBytes / slice_bytes : cap;
    return static_cast<int>(g < 1 ? 1 : (g < cap ? g : cap));
}

cudaError_t local_attn_fwd(Dtype dt, const LocalFwdParams& p, cudaStream_t s) {
    // The wgmma forwards fold the scale into the exponent (local_softmax_step's kFold), which needs
    // scale > 0; a zero or negative scale runs the mma.sync kernel.
    const bool wgmma = local_wgmma_enabled(false) && p.scale > 0.f;
    return FWA_LOCAL_HEADDIM_SWITCH(p.d, [&] {
        if constexpr (kHeadDim >= 64) {   // d <= 32: the mma.sync kernel
            if (wgmma)
                return dt == Dtype::kFloat16 ? run_local_fwd_wgmma<__half, kHeadDim>(p, s)
                                             : run_local_fwd_wgmma<__nv_bfloat16, kHeadDim>(p, s);
        }
        return dt == Dtype::kFloat16 ? run_local_fwd<__half, kHeadDim>(p, s)
                                     : run_local_fwd<__nv_bfloat16, kHeadDim>(p, s);
    });
}

cudaError_t local_attn_bwd(Dtype dt, const LocalBwdParams& p, cudaStream_t s) {
    return FWA_LOCAL_HEADDIM_SWITCH(p.d, [&] {
        return dt == Dtype::kFloat16 ? run_local_bwd<__half, kHeadDim>(p, s)
                                     : run_local_bwd<__nv_bfloat16, kHeadDim>(p, s);
    });
}

#undef FWA_LOCAL_HEADDIM_SWITCH

}  // namespace fwa
