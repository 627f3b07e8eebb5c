// Small device helpers shared by the window-attention kernels: cp.async, ldmatrix, mma.sync
// (m16n8k16, fp32 accumulate) for fp16 and bf16, packing, fast exp2, warp reductions.
// Fragment layouts follow the PTX ISA for mma.m16n8k16 (g = lane / 4, t = lane % 4):
//   A (16x16): a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..)
//   B (16x8):  b0 = (k 2t..2t+1, n g), b1 = (k 2t+8..2t+9, n g)
//   C (16x8):  c0,c1 = (g, 2t..2t+1), c2,c3 = (g+8, 2t..2t+1)
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cstdint>
#include <type_traits>

namespace fwa {

#define FWA_DEVICE __device__ __forceinline__
#define FWA_HOST_DEVICE __host__ __device__ __forceinline__

template <typename T> struct ElementTraits;
template <> struct ElementTraits<__half> {
    using Pair = __half2;
    static FWA_DEVICE uint32_t pack(float a, float b) {
        __half2 h = __floats2half2_rn(a, b);
        return *reinterpret_cast<uint32_t*>(&h);
    }
    static FWA_DEVICE float2 unpack(uint32_t u) {
        return __half22float2(*reinterpret_cast<__half2*>(&u));
    }
};
template <> struct ElementTraits<__nv_bfloat16> {
    using Pair = __nv_bfloat162;
    static FWA_DEVICE uint32_t pack(float a, float b) {
        __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
        return *reinterpret_cast<uint32_t*>(&h);
    }
    // bf16 -> fp32 is the 16 bits moved up: one shift and one mask (the intrinsic compiled to
    // three instructions for the pair).
    static FWA_DEVICE float2 unpack(uint32_t u) { return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u)); }
};

FWA_DEVICE uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy global -> shared; src_bytes = 0 zero-fills the destination.
FWA_DEVICE void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes));
}
// The same, all 16 bytes copied (no source size operand).
FWA_DEVICE void cp_async_16_full(uint32_t dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src));
}
// Byte offset of 16-byte chunk j of row r in a 64-byte-swizzled tile (rows of 64 bytes: head dim 32
// at 16 bits; the wgmma kernels' operand layout, swizzle mode 2): chunk j sits at position
// j ^ ((r >> 1) & 3), a pattern of 8 rows (512 bytes), so such tiles start 512-byte aligned.
FWA_DEVICE uint32_t sw64_offset(int r, int j) { return uint32_t(r * 64 + ((j ^ ((r >> 1) & 3)) << 4)); }
// The same for 128-byte rows (head dim 64 at 16 bits; swizzle mode 1): chunk j (0..7) of row r at
// position j ^ (r & 7), a pattern of 8 rows (1024 bytes).
FWA_DEVICE uint32_t sw128_offset(int r, int j) { return uint32_t(r * 128 + ((j ^ (r & 7)) << 4)); }
// 4-byte async copy (for fp32 row statistics, whose rows need not be 16-byte aligned).
FWA_DEVICE void cp_async_4(uint32_t dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
                 "r"(src_bytes));
}
// Barrier of warpgroup `group`'s 128 threads (named barrier 1 + group; 0 is __syncthreads): the
// groups of 4 warps of the window forwards, the consumer warpgroups of the warp-specialised
// sliding-window forward.
FWA_DEVICE void group_sync(int group) { asm volatile("bar.sync %0, 128;" ::"r"(group + 1) : "memory"); }

// Hopper programmatic dependent launch (PDL). pdl_wait: returns once the grids this one was
// launched as the programmatic dependent of are complete and their memory is visible.
// pdl_launch_dependents: this CTA lets the next grid on the stream launch (it launches once every
// CTA has done so or exited). Both are no-ops in a grid launched without the attribute, and
// compiled out below sm_90 (a launcher sets the attribute only where the device runs this
// kernel's sm_90 code: FWA_SM90A_BUILT on a 9.0 device).
FWA_DEVICE void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
FWA_DEVICE void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
FWA_DEVICE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> FWA_DEVICE void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

FWA_DEVICE void ldmatrix_x4(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                            uint32_t& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}
FWA_DEVICE void ldmatrix_x4_trans(uint32_t addr, uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                  uint32_t& r3) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

template <typename Element>
FWA_DEVICE void mma_16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
FWA_DEVICE void mma_16816<__half>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                  uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
FWA_DEVICE void mma_16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// 2^x on the SFU (ex2.approx.ftz: max rel. error 2^-22, exact 0 for -inf).
// Position of element j of a small array stored in groups of 4 consecutive floats, kGroupPitch
// floats apart (kGroupPitch = 0: stored contiguously, position j): the small-window backward keeps
// its key inverse norms in the padding of the bias+mask tile's rows this way.
template <int kGroupPitch> FWA_DEVICE int grouped4_index(int j) {
    return kGroupPitch > 0 ? (j >> 2) * kGroupPitch + (j & 3) : j;
}

FWA_DEVICE float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Hardware approximations for a forward's per-row epilogue (1 / l and log2 l of the softmax sum l >= 1):
// relative error ~2^-22 against ~60 instructions per row for the correctly rounded forms.
FWA_DEVICE float fast_rcp(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
FWA_DEVICE float fast_log2(float x) {
    float y;
    asm("lg2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// Reductions over the 4 lanes of a quad (the lanes that share a C-fragment row).
FWA_DEVICE float quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    x += __shfl_xor_sync(0xffffffffu, x, 2);
    return x;
}
FWA_DEVICE float quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
    return x;
}
FWA_DEVICE float warp_sum(float x) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

// f(std::bool_constant<a>{}, std::bool_constant<b>{}) for the runtime pair (a, b): the body is
// instantiated for each of the four pairs and one of them is picked per call (the element loops of
// the window kernels, per (cosine, bias+mask): with the flags tested per element the compiler kept
// a branch per element pair in the loop).
template <typename F>
FWA_DEVICE void dispatch_flag_pair(bool a, bool b, F&& f) {
    if (a) {
        if (b) f(std::true_type{}, std::true_type{});
        else f(std::true_type{}, std::false_type{});
    } else {
        if (b) f(std::false_type{}, std::true_type{});
        else f(std::false_type{}, std::false_type{});
    }
}

constexpr float kLog2e = 1.4426950408889634f;

// One float4 (q: four consecutive columns; Npad is a multiple of 64) of the padded, log2(e)-scaled
// bias+mask tensor [nWb][Hb][Npad][Npad] from fp32 bias (Hb, N, N) and mask (nWb, N, N) with
// element strides (either null): padded keys -inf (probability 0), padded query rows 0 (finite,
// never stored). The index arithmetic in Index (32 bits where the tensor allows: 64-bit divisions
// were most of the build's work). window_attn_build_bm's kernel and the backward's preprocess
// (BwdParams::bm_build) both build with it.
template <typename Index>
FWA_DEVICE void build_bm_quad(float* bm, const float* bias, int64_t b0, int64_t b1, int64_t b2, const float* mask,
                              int64_t m0, int64_t m1, int64_t m2, int Hb, int N, int Npad, Index q) {
    const int npad4 = Npad / 4;
    const int j0 = static_cast<int>(q % npad4) * 4;
    Index rest = q / npad4;
    const int i = static_cast<int>(rest % Npad);
    rest /= Npad;
    const int h = static_cast<int>(rest % Hb);
    const int64_t w = static_cast<int64_t>(rest / Hb);
    float v[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const int j = j0 + e;
        if (j >= N) {
            v[e] = -INFINITY;       // padded key: probability 0
        } else if (i >= N) {
            v[e] = 0.f;             // padded query row: finite, never stored
        } else {
            float x = 0.f;
            if (bias) x += bias[h * b0 + i * b1 + j * b2];
            if (mask) x += mask[w * m0 + i * m1 + j * m2];
            v[e] = x * kLog2e;
        }
    }
    reinterpret_cast<float4*>(bm)[q] = make_float4(v[0], v[1], v[2], v[3]);
}
constexpr float kLn2 = 0.6931471805599453f;
constexpr float kNormEps = 1e-12f;
// One online-softmax step for row r (0 or 1) of a thread's C fragments: s holds the tile's logits in
// log2 units, mx their row max over the quad. Updates row_max / row_sum, replaces s by
// exp2(s - max) and returns the factor exp2(old max - new max) by which the output accumulator's
// row must be rescaled. A row with no finite logit so far keeps max -inf and uses 0, so that
// exp2(-inf - 0) = 0 instead of NaN. In two parts, which a caller may run for both of a thread's
// rows in turn (local_softmax_step):
//  - online_softmax_max: the new running max, the max the exponents use (m_use) and the factor;
//    keep_max: the row keeps its running max (the caller's rule bounds P; row_max is finite) and
//    the factor is 1;
//  - online_softmax_exp_row: s <- exp2(s - m_use) and row_sum updated; kScaled: s holds the logits
//    times 1 / in_scale (mx was scaled), and P = exp2(fma(s, in_scale, -m_use)); `pair(nt, e0, e1)`
//    sees each pair of P as it is computed (the sliding forwards' sums of the 16-bit P).
FWA_DEVICE float online_softmax_max(float mx, float& row_max, float& m_use, bool keep_max = false) {
    if (keep_max) {
        m_use = row_max;
        return 1.f;
    }
    const float m_new = fmaxf(row_max, mx);
    m_use = m_new == -INFINITY ? 0.f : m_new;
    const float corr = fast_exp2(row_max - m_use);
    row_max = m_new;
    return corr;
}
struct NoSoftmaxPairHook {
    FWA_DEVICE void operator()(int, float, float) const {}
};
template <bool kScaled = false, int kNT, typename PairHook = NoSoftmaxPairHook>
FWA_DEVICE void online_softmax_exp_row(float (&s)[kNT][4], int r, float m_use, float corr, float& row_sum,
                                       float in_scale = 1.f, bool keep_max = false, PairHook pair = {}) {
    float sum_even = 0.f, sum_odd = 0.f;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
        const float e0 = fast_exp2(kScaled ? fmaf(s[nt][2 * r], in_scale, -m_use) : s[nt][2 * r] - m_use);
        const float e1 = fast_exp2(kScaled ? fmaf(s[nt][2 * r + 1], in_scale, -m_use) : s[nt][2 * r + 1] - m_use);
        s[nt][2 * r] = e0;
        s[nt][2 * r + 1] = e1;
        if (nt % 2 == 0) sum_even += e0 + e1;
        else sum_odd += e0 + e1;
        pair(nt, e0, e1);
    }
    row_sum = (keep_max ? row_sum : row_sum * corr) + (sum_even + sum_odd);
}
template <int kNT>
FWA_DEVICE float online_softmax_row_p(float (&s)[kNT][4], int r, float mx, float& row_max, float& row_sum) {
    float m_use;
    const float corr = online_softmax_max(mx, row_max, m_use);
    online_softmax_exp_row(s, r, m_use, corr, row_sum);
    return corr;
}

template <int kDT>
FWA_DEVICE void rescale_acc_row(float (&o_acc)[kDT][4], int r, float corr) {
#pragma unroll
    for (int i = 0; i < kDT; ++i) {
        o_acc[i][2 * r] *= corr;
        o_acc[i][2 * r + 1] *= corr;
    }
}

// online_softmax_row_p, then the output accumulator's row rescaled.
template <int kNT, int kDT>
FWA_DEVICE void online_softmax_row(float (&s)[kNT][4], float (&o_acc)[kDT][4], int r, float mx,
                                   float& row_max, float& row_sum) {
    rescale_acc_row(o_acc, r, online_softmax_row_p(s, r, mx, row_max, row_sum));
}

// float32(ln 100): the clamp bound of Swin V2's logit scale.
constexpr float kLogitScaleMax = 4.605170185988092f;

// exp(min(logit_scale[h], ln 100)), NaN-propagating like torch.clamp.
FWA_DEVICE float logit_scale_alpha(const float* logit_scale, int h) {
    const float ls = logit_scale[h];
    return expf(ls > kLogitScaleMax ? kLogitScaleMax : ls);
}

// Inverse norm as F.normalize uses it: 1 / max(||x||, eps).
FWA_DEVICE float inv_norm_from_sumsq(float ss) { return 1.f / fmaxf(sqrtf(ss), kNormEps); }
// The same through the hardware reciprocal square root (relative error < 2^-22, against the two
// correctly rounded steps above: ~25 instructions with their range checks), for the forward, whose
// norms are not differentiated: max(||x||, eps) = sqrt(max(ss, eps^2)); NaN and +inf sums give
// 1 / eps and 0, as above.
FWA_DEVICE float inv_norm_from_sumsq_fast(float ss) {
    constexpr float kEps2 = kNormEps * kNormEps;
    float r;
    asm("rsqrt.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(ss));
    return ss > kEps2 ? r : 1.f / kNormEps;
}
// Backward of x̂ = x * inv: dx = inv * (dx̂ - x̂ <x̂, dx̂>) while ||x|| >= eps; below eps the clamped
// norm is a constant and dx = inv * dx̂. Returns the factor (1 or 0) of the projection term.
FWA_DEVICE float norm_projection(float inv) { return inv < 1.f / kNormEps ? 1.f : 0.f; }

// A thread's two rows of an m16 fragment (row and row + 8) into dst[row], where below n: the
// forward's inverse norms of q for the op's qk_inv_norm result.
FWA_DEVICE void fwd_store_row_pair(float* dst, int row, int n, const float (&v)[2]) {
    if (row < n) dst[row] = v[0];
    if (row + 8 < n) dst[row + 8] = v[1];
}

}  // namespace fwa
