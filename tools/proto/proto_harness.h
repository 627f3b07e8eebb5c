// Host side shared by the N = 256, d = 32 forward prototypes (wgmma_fwd_n256_d32.cu,
// ws_fwd_n256_d32.cu): the same random problem (W windows of q / k / v, one bias+mask strip), its
// device copies with the output poisoned, the float64 CPU reference on 4 windows, and the CUDA-event
// timing, so that the prototypes' errors and times compare like for like.
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace proto {

constexpr int kN = 256, kD = 32;
constexpr double kLog2e = 1.4426950408889634;

inline void check(cudaError_t e, const char* what) {
    if (e != cudaSuccess) {
        std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        std::exit(1);
    }
}

// Uniform in [-1, 1) from a 64-bit LCG state (the prototypes' random data).
inline float lcg_uniform(uint64_t& st) {
    st = st * 6364136223846793005ull + 1442695040888963407ull;
    return float((st >> 40) & 0xFFFFFF) / 16777216.f * 2.f - 1.f;
}

// Allows `kernel` `smem` bytes of dynamic shared memory; returns its resident CTAs per SM at
// `threads` threads per CTA.
template <typename Kernel>
int fit_kernel(Kernel kernel, int threads, size_t smem) {
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)), "attr");
    int ctas = 0;
    check(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&ctas, kernel, threads, smem), "occupancy");
    return ctas;
}

inline int sm_count() {
    int sms = 0;
    check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "sms");
    return sms;
}

// n fp32 of device memory filled with NaN (0xFF bytes): outputs a kernel does not write show.
inline float* alloc_poisoned_f32(size_t n) {
    float* ptr = nullptr;
    check(cudaMalloc(&ptr, n * sizeof(float)), "malloc");
    check(cudaMemset(ptr, 0xFF, n * sizeof(float)), "poison");
    return ptr;
}

inline size_t count_nan(const std::vector<float>& v) {
    size_t n = 0;
    for (float x : v) n += std::isnan(x) ? 1 : 0;
    return n;
}

// W windows of (N, D) bf16 q, k, v (contiguous) and an (N, N) fp32 bias+mask already in log2 units;
// host copies for the reference, device copies for the kernels (out poisoned with NaNs).
struct Problem {
    int W = 0;
    float scale = 0.f;   // d^-0.5
    std::vector<__nv_bfloat16> hq, hk, hv;
    std::vector<float> hbm;
    __nv_bfloat16 *dq = nullptr, *dk = nullptr, *dv = nullptr, *dout = nullptr;
    float* dbm = nullptr;
    size_t bytes = 0;   // of each of q, k, v, out
};

inline Problem make_problem(int W) {
    Problem p;
    p.W = W;
    p.scale = 1.f / std::sqrt(float(kD));
    p.hq.resize(size_t(W) * kN * kD);
    p.hk.resize(p.hq.size());
    p.hv.resize(p.hq.size());
    p.hbm.resize(size_t(kN) * kN);
    uint64_t st = 12345;
    auto rnd = [&]() { return lcg_uniform(st); };
    for (auto& x : p.hq) x = __float2bfloat16(2.f * rnd());
    for (auto& x : p.hk) x = __float2bfloat16(2.f * rnd());
    for (auto& x : p.hv) x = __float2bfloat16(rnd());
    for (int i = 0; i < kN; ++i)
        for (int j = 0; j < kN; ++j)
            p.hbm[i * kN + j] = (4.f * rnd() + ((i / 64 + j / 64) % 3 == 0 ? -100.f : 0.f)) * 1.4426950408889634f;

    p.bytes = p.hq.size() * sizeof(__nv_bfloat16);
    check(cudaMalloc(&p.dq, p.bytes), "malloc");
    check(cudaMalloc(&p.dk, p.bytes), "malloc");
    check(cudaMalloc(&p.dv, p.bytes), "malloc");
    check(cudaMalloc(&p.dout, p.bytes), "malloc");
    check(cudaMalloc(&p.dbm, p.hbm.size() * sizeof(float)), "malloc");
    check(cudaMemcpy(p.dq, p.hq.data(), p.bytes, cudaMemcpyHostToDevice), "copy");
    check(cudaMemcpy(p.dk, p.hk.data(), p.bytes, cudaMemcpyHostToDevice), "copy");
    check(cudaMemcpy(p.dv, p.hv.data(), p.bytes, cudaMemcpyHostToDevice), "copy");
    check(cudaMemcpy(p.dbm, p.hbm.data(), p.hbm.size() * sizeof(float), cudaMemcpyHostToDevice), "copy");
    check(cudaMemset(p.dout, 0xFF, p.bytes), "poison");   // NaN pattern: unwritten outputs show
    return p;
}

inline std::vector<__nv_bfloat16> copy_out(const Problem& p) {
    std::vector<__nv_bfloat16> ho(p.hq.size());
    check(cudaMemcpy(ho.data(), p.dout, p.bytes, cudaMemcpyDeviceToHost), "copy back");
    return ho;
}

// max |out - float64 reference| over windows 0, 1, W / 2 and W - 1 (NaN counts as 1e30).
inline double max_error_vs_ref64(const Problem& p, const std::vector<__nv_bfloat16>& ho) {
    double max_err = 0.0;
    const int check_w[4] = {0, 1, p.W / 2, p.W - 1};
    for (int wi : check_w) {
        for (int i = 0; i < kN; ++i) {
            std::vector<double> srow(kN);
            double mx = -1e300;
            for (int j = 0; j < kN; ++j) {
                double acc = 0.0;
                for (int c = 0; c < kD; ++c)
                    acc += double(__bfloat162float(p.hq[(size_t(wi) * kN + i) * kD + c])) *
                           double(__bfloat162float(p.hk[(size_t(wi) * kN + j) * kD + c]));
                srow[j] = acc * p.scale + double(p.hbm[i * kN + j]) / kLog2e;
                mx = std::max(mx, srow[j]);
            }
            double l = 0.0;
            for (int j = 0; j < kN; ++j) l += (srow[j] = std::exp(srow[j] - mx));
            for (int c = 0; c < kD; ++c) {
                double o = 0.0;
                for (int j = 0; j < kN; ++j) o += srow[j] / l * double(__bfloat162float(p.hv[(size_t(wi) * kN + j) * kD + c]));
                const double got = double(__bfloat162float(ho[(size_t(wi) * kN + i) * kD + c]));
                const double err = std::isnan(got) ? 1e30 : std::fabs(got - o);
                max_err = std::max(max_err, err);
            }
        }
    }
    return max_err;
}

// Median (and min) of 25 CUDA-event timings of launch() after 5 warm-up calls, printed.
template <typename Launch>
void time_and_print(int W, Launch launch) {
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    std::vector<float> ms;
    for (int it = 0; it < 30; ++it) {
        cudaEventRecord(a);
        launch();
        cudaEventRecord(b);
        cudaEventSynchronize(b);
        float t = 0.f;
        cudaEventElapsedTime(&t, a, b);
        if (it >= 5) ms.push_back(t);
    }
    check(cudaGetLastError(), "timed launches");
    std::sort(ms.begin(), ms.end());
    std::printf("W = %d windows: median %.4f ms (min %.4f)\n", W, ms[ms.size() / 2], ms.front());
}

}  // namespace proto
