// probe.cu -- Hopper (sm_90a) GEMM probe: wgmma.mma_async main loop, operands staged by cp.async.
//
// C[M,N] (f32, row-major) = A[M,K] (f16 row-major = K-major) x B, f32 accumulation, where B is
//   "B:MN"  B[K][N] row-major (N contiguous, ONNX MatMul weights)  -> wgmma imm-trans-b = 1
//   "B:K"   B^T stored [N][K] (K contiguous)                         -> wgmma imm-trans-b = 0
// plus a tf32 variant (fp32 inputs rounded with cvt.rna.tf32.f32, both operands K-major).
//
// Layout / descriptor facts used (PTX ISA 9.7.15.5.1.2, "Shared Memory Matrix Layout"):
//  * core matrix = 8 rows x 16 bytes, 128 contiguous bytes; "row" runs along MN for K-major
//    operands and along K for MN-major operands.
//  * descriptor: bits 0-13 addr>>4, 16-29 LBO>>4, 32-45 SBO>>4, 49-51 base offset, 62-63 swizzle
//    (0 none, 1 = 128B, 2 = 64B, 3 = 32B).
//  * canonical layouts (CuTe notation, T = 8 f16 per 16 bytes):
//      K-major  none : ((8,m),(T,2k)):((1T,SBO),(1,LBO))   LBO = K-dir core stride, SBO = MN-dir
//      K-major  SW128: ((8,m),(T,2k)):((8T,SBO),(1,T))     LBO unused ("assumed 1"), SBO = 8-row stride
//      MN-major none : ((T,1,m),(8,k)):((1,T,SBO),(1T,LBO)) LBO = K-dir core stride, SBO = MN-dir
//      MN-major SW128: ((T,8,m),(8,k)):((1,T,LBO),(8T,SBO)) LBO = MN-dir atom stride, SBO = K 8-row stride
//    "STD" below is exactly this reading; "SWAP" exchanges the two fields. Every layout is run with
//    all four (A conv, B conv) combinations, so the run tells which reading the hardware uses.
//
// Robustness: every job (self-test, each variant) runs in a forked worker process. If a kernel
// traps / loses the context, the worker reports the variant and exits; the parent starts a new
// worker at the next job, so one bad variant never stops the run.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <signal.h>

// ------------------------------------------------------------------------------------------------
// Device helpers (inline PTX)
// ------------------------------------------------------------------------------------------------
constexpr int BM = 128, BK = 64, NTHREADS = 256;  // f16 block tile: BM x BN x BK, 2 consumer warpgroups
constexpr int SMEM_SLACK = 32768;                  // extra smem so wrong-descriptor reads stay in range
constexpr int SMEM_MAX = 232448;                   // 227 KiB opt-in limit on sm_90

struct DescCfg { uint32_t a_lbo, a_sbo, b_lbo, b_sbo; };  // byte values, encoded >> 4 in the kernel

// CUDA 13's -arch=sm_90a also embeds a generic compute_90 PTX, where wgmma does not exist. That
// path (never chosen on an H100/H200, which loads the sm_90a cubin) gets a trap instead.
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define WG_ASM(...) __trap()
#else
#define WG_ASM(...) asm volatile(__VA_ARGS__)
#endif

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void cp_async16(uint32_t dst, const void* src, bool valid) {
  // src-size 0 => the 16 destination bytes are zero-filled (rows past M / columns past N)
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
// generic-proxy smem writes (cp.async, st.shared) -> visible to the async proxy (wgmma operand reads)
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_fence() { WG_ASM("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { WG_ASM("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wgmma_wait() {
  WG_ASM("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// keep the compiler from moving accumulator reads/writes across wgmma issue/wait
template <int N> __device__ __forceinline__ void fence_regs(float* d) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
__device__ __forceinline__ uint64_t make_desc(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t swz) {
  return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
         ((uint64_t)((sbo >> 4) & 0x3FFF) << 32) | ((uint64_t)swz << 62);
}

#define WG_ACC64 "{" \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
  "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
  "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63" \
  "}"
#define WG_ACC128 "{" \
  "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
  "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
  "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63," \
  "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79," \
  "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95," \
  "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111," \
  "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127" \
  "}"
#define ACC4(d, i) "+f"(d[(i)]), "+f"(d[(i) + 1]), "+f"(d[(i) + 2]), "+f"(d[(i) + 3])
#define ACC16(d, i) ACC4(d, i), ACC4(d, (i) + 4), ACC4(d, (i) + 8), ACC4(d, (i) + 12)
#define ACC64(d, i) ACC16(d, i), ACC16(d, (i) + 16), ACC16(d, (i) + 32), ACC16(d, (i) + 48)

// D(64xN, f32) += A(64x16, smem desc) * B(16xN, smem desc); TB = imm-trans-b (1: B is N-major)
template <int TB> __device__ __forceinline__ void wgmma_n128(float* d, uint64_t da, uint64_t db) {
  WG_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " WG_ACC64 ", %64, %65, p, 1, 1, 0, %67;\n}\n"
               : ACC64(d, 0) : "l"(da), "l"(db), "r"(1), "n"(TB) : "memory");
}
template <int TB> __device__ __forceinline__ void wgmma_n256(float* d, uint64_t da, uint64_t db) {
  WG_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " WG_ACC128 ", %128, %129, p, 1, 1, 0, %131;\n}\n"
               : ACC64(d, 0), ACC64(d, 64) : "l"(da), "l"(db), "r"(1), "n"(TB) : "memory");
}
__device__ __forceinline__ void wgmma_tf32_n128(float* d, uint64_t da, uint64_t db) {  // k8, both K-major
  WG_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " WG_ACC64 ", %64, %65, p, 1, 1;\n}\n"
               : ACC64(d, 0) : "l"(da), "l"(db), "r"(1) : "memory");
}
__device__ __forceinline__ void wgmma_n8(float* d, uint64_t da, uint64_t db) {  // self-test, B K-major
  WG_ASM("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
               : ACC4(d, 0) : "l"(da), "l"(db), "r"(1) : "memory");
}

// ------------------------------------------------------------------------------------------------
// Shared-memory layouts. Chunk i (16 bytes) of an operand tile is always written at byte 16*i of the
// tile (contiguous cp.async writes); these functions give which global chunk lands there.
//  K-major tile (rows = M or N, 64 k = 8 chunks per row):
//    SW128: row r at r*128, chunk kc at physical chunk kc ^ (r%8)      (SBO = 1024 between 8-row groups)
//    none : core matrix (r/8, kc) at ((r/8)*8 + kc)*128, row r%8 at +16*(r%8)  (K-dir 128, MN-dir 1024)
//  MN-major B tile (rows = 64 k, BN/8 n-chunks):
//    SW128: 64-column atoms a at a*8192; inside, k row at k*128, n-chunk c at physical c ^ (k%8)
//           (MN-dir atom stride 8192, K-dir 8-row stride 1024)
//    none : core matrix (k/8, nc) at ((k/8)*(BN/8) + nc)*128, row k%8 at +16*(k%8)  (K-dir BN*16, MN-dir 128)
// ------------------------------------------------------------------------------------------------
template <bool SW> __device__ __forceinline__ void kmajor_chunk(int i, int& row, int& kc) {
  if (SW) { row = i >> 3; kc = (i & 7) ^ (row & 7); }
  else    { int cm = i >> 3; row = (cm >> 3) * 8 + (i & 7); kc = cm & 7; }
}
template <int BN, bool SW> __device__ __forceinline__ void mnmajor_chunk(int i, int& krow, int& nch) {
  if (SW) { int atom = i / (BK * 8), j = i % (BK * 8); krow = j >> 3; nch = atom * 8 + ((j & 7) ^ (krow & 7)); }
  else    { int cm = i >> 3, kb = cm / (BN / 8); krow = kb * 8 + (i & 7); nch = cm % (BN / 8); }
}

// Per-thread cp.async state: source pointers of this thread's chunks (computed once, advanced by one
// k-tile after each issue) and a bit mask of chunks that are in range. Out-of-range chunks point at a
// clamped, valid row/column and are issued with src-size 0 (zero fill).
template <int BN, bool SW, bool BMN>
struct TileLoader {
  static constexpr int NA = BM * BK / 8 / NTHREADS, NB = BN * BK / 8 / NTHREADS;
  const __half* pa[NA];
  const __half* pb[NB];
  uint32_t valid = 0;
  size_t b_step;
  __device__ __forceinline__ TileLoader(const __half* A, const __half* B, int M, int N, int K, int m0, int n0, int tid) {
#pragma unroll
    for (int it = 0; it < NA; ++it) {
      int row, kc;
      kmajor_chunk<SW>(tid + it * NTHREADS, row, kc);
      if (m0 + row < M) valid |= 1u << it;
      pa[it] = A + (size_t)min(m0 + row, M - 1) * K + kc * 8;
    }
#pragma unroll
    for (int it = 0; it < NB; ++it) {
      int r, c;  // B:MN -> (k row, n chunk); B:K -> (n row, k chunk)
      if (BMN) mnmajor_chunk<BN, SW>(tid + it * NTHREADS, r, c);
      else kmajor_chunk<SW>(tid + it * NTHREADS, r, c);
      if (BMN) {
        if (n0 + c * 8 < N) valid |= 1u << (NA + it);
        pb[it] = B + (size_t)r * N + min(n0 + c * 8, N - 8);
      } else {
        if (n0 + r < N) valid |= 1u << (NA + it);
        pb[it] = B + (size_t)min(n0 + r, N - 1) * K + c * 8;
      }
    }
    b_step = BMN ? (size_t)BK * N : (size_t)BK;
  }
  // chunk i of a tile goes to byte 16*i; this thread's chunks are i = tid + it*NTHREADS
  __device__ __forceinline__ void issue(uint32_t sA, uint32_t sB, int tid) {
#pragma unroll
    for (int it = 0; it < NA; ++it) {
      cp_async16(sA + 16 * (tid + it * NTHREADS), pa[it], (valid >> it) & 1);
      pa[it] += BK;
    }
#pragma unroll
    for (int it = 0; it < NB; ++it) {
      cp_async16(sB + 16 * (tid + it * NTHREADS), pb[it], (valid >> (NA + it)) & 1);
      pb[it] += b_step;
    }
  }
};

// Block -> output tile, grouped raster: consecutive blocks walk down a group of 8 M-tiles before
// moving to the next N-tile, so one wave's A rows and B columns stay L2-resident.
__device__ __forceinline__ void tile_coords(int M, int N, int bn, int& m0, int& n0) {
  constexpr int GROUP_M = 8;
  const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + bn - 1) / bn, pid = blockIdx.x;
  const int group = pid / (GROUP_M * tiles_n), first_m = group * GROUP_M;
  const int gsize = min(tiles_m - first_m, GROUP_M), in_group = pid % (GROUP_M * tiles_n);
  m0 = (first_m + in_group % gsize) * BM;
  n0 = (in_group / gsize) * bn;
}

// Accumulator fragment (m64nNk16 / m64nNk8, f32): warp w of the warpgroup owns rows 16w..16w+15;
// lane = 4*g + q holds d[4c+0..1] at (row g, cols 8c+2q, +1) and d[4c+2..3] at (row g+8, same cols).
template <int BN>
__device__ __forceinline__ void store_acc(float* C, const float* d, int M, int N, int m0, int n0, int tid) {
  const int wg = tid >> 7, warp = (tid >> 5) & 3, lane = tid & 31;
  const int row = m0 + wg * 64 + warp * 16 + (lane >> 2);
#pragma unroll
  for (int c = 0; c < BN / 8; ++c) {
    int col = n0 + c * 8 + (lane & 3) * 2;
    if (col < N) {  // N % 8 == 0, so col+1 < N as well
      if (row < M) *reinterpret_cast<float2*>(C + (size_t)row * N + col) = make_float2(d[4 * c], d[4 * c + 1]);
      if (row + 8 < M)
        *reinterpret_cast<float2*>(C + (size_t)(row + 8) * N + col) = make_float2(d[4 * c + 2], d[4 * c + 3]);
    }
  }
}

// ------------------------------------------------------------------------------------------------
// f16 main kernel. Ring of S = STAGES smem stages (A 16 KiB + B BN*128 B each). INFLIGHT = wgmma
// groups left in flight at the end of an iteration (1 default, 0 = variant); prefetch distance
// P = S-1-INFLIGHT tiles. Per k-tile kt:
//   cp.async.wait_group(P-1)           -> this thread's copies of tile kt have landed
//   fence.proxy.async + __syncthreads  -> everyone's copies visible to the async proxy; also every
//                                         thread has passed wgmma.wait_group(INFLIGHT) of iteration
//                                         kt-1, i.e. both warpgroups finished reading tile kt-1-INFLIGHT
//   wgmma.fence, 4 x wgmma (k16 each), commit
//   cp.async tile kt+P into stage (kt+P)%S == (kt-1-INFLIGHT)%S (free, see above), commit
//   wgmma.wait_group(INFLIGHT)
// FENCE=false drops fence.proxy.async (violates the PTX ISA; only to measure what the fence costs).
// ------------------------------------------------------------------------------------------------
template <int BN, int STAGES, bool SW, bool BMN, int INFLIGHT, bool FENCE>
__global__ void __launch_bounds__(NTHREADS, 1)
gemm_f16_kernel(const __half* __restrict__ A, const __half* __restrict__ B, float* __restrict__ C,
                int M, int N, int K, DescCfg dc) {
  constexpr int P = STAGES - 1 - INFLIGHT;  // prefetch distance (tiles)
  static_assert(P >= 1 && (INFLIGHT == 0 || INFLIGHT == 1), "bad pipeline config");
  constexpr uint32_t A_BYTES = BM * BK * 2, STAGE_BYTES = A_BYTES + BN * BK * 2;
  constexpr uint32_t A_KSTEP = SW ? 32 : 256;                      // bytes per k16 step in A
  constexpr uint32_t B_KSTEP = BMN ? (SW ? 2048 : BN * 32) : A_KSTEP;
  constexpr uint32_t SWZ = SW ? 1 : 0;
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;    // stages 1024-byte aligned
  const int tid = threadIdx.x, wg = tid >> 7;
  const int ktiles = K / BK;
  int m0, n0;
  tile_coords(M, N, BN, m0, n0);

  float d[BN / 2];
#pragma unroll
  for (int i = 0; i < BN / 2; ++i) d[i] = 0.f;
  // descriptors of stage 0, k-step 0; other stages / k-steps add (byte offset >> 4) to the address field
  const uint64_t da0 = make_desc(base + wg * 8192, dc.a_lbo, dc.a_sbo, SWZ);  // this warpgroup's 64 rows
  const uint64_t db0 = make_desc(base + A_BYTES, dc.b_lbo, dc.b_sbo, SWZ);
  TileLoader<BN, SW, BMN> ld(A, B, M, N, K, m0, n0, tid);

#pragma unroll
  for (int s = 0; s < P; ++s) {
    if (s < ktiles) ld.issue(base + s * STAGE_BYTES, base + s * STAGE_BYTES + A_BYTES, tid);
    cp_async_commit();
  }
  for (int kt = 0; kt < ktiles; ++kt) {
    cp_async_wait<P - 1>();
    if (FENCE) fence_proxy_async();
    __syncthreads();
    const uint32_t soff = (kt % STAGES) * STAGE_BYTES;
    fence_regs<BN / 2>(d);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk) {
      const uint64_t da = da0 + ((soff + kk * A_KSTEP) >> 4), db = db0 + ((soff + kk * B_KSTEP) >> 4);
      if constexpr (BN == 128) wgmma_n128<BMN ? 1 : 0>(d, da, db);
      else wgmma_n256<BMN ? 1 : 0>(d, da, db);
    }
    wgmma_commit();
    fence_regs<BN / 2>(d);
    const int nk = kt + P;
    if (nk < ktiles) {
      const uint32_t na = base + (nk % STAGES) * STAGE_BYTES;
      ld.issue(na, na + A_BYTES, tid);
    }
    cp_async_commit();
    wgmma_wait<INFLIGHT>();
  }
  wgmma_wait<0>();
  fence_regs<BN / 2>(d);
  store_acc<BN>(C, d, M, N, m0, n0, tid);
}

// ------------------------------------------------------------------------------------------------
// tf32 kernel: 128x128x32 tiles (fp32 row = 128 B -> K-major SW128 for both operands), 2 stages,
// register-staged loads: A/B read with ld.global, rounded (cvt.rna.tf32.f32), B transposed to [n][k].
// ------------------------------------------------------------------------------------------------
constexpr int TBK = 32, TF_TILE = 128 * 128;  // bytes per operand tile (128 rows x 128 B)
__device__ __forceinline__ float to_tf32(float x) {
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}
__device__ __forceinline__ void tf32_gload(float4 (&ra)[4], float4 (&rb)[4], const float* A, const float* B,
                                           int M, int N, int K, int m0, int n0, int k0, int tid) {
  const int lane = tid & 31, warp = tid >> 5;
#pragma unroll
  for (int it = 0; it < 4; ++it) {
    int i = tid + it * NTHREADS, row = i >> 3, c = i & 7;
    ra[it] = (m0 + row < M) ? __ldg(reinterpret_cast<const float4*>(A + (size_t)(m0 + row) * K + k0 + 4 * c))
                            : make_float4(0.f, 0.f, 0.f, 0.f);
    int k = (lane & 7) + 8 * it, n = 4 * ((lane >> 3) + 4 * warp);
    rb[it] = (n0 + n < N) ? __ldg(reinterpret_cast<const float4*>(B + (size_t)(k0 + k) * N + n0 + n))
                          : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}
__device__ __forceinline__ void tf32_sstore(uint8_t* sA, const float4 (&ra)[4], const float4 (&rb)[4], int tid) {
  uint8_t* sB = sA + TF_TILE;
  const int lane = tid & 31, warp = tid >> 5;
#pragma unroll
  for (int it = 0; it < 4; ++it) {
    int i = tid + it * NTHREADS, row = i >> 3, c = i & 7;
    float4 v = make_float4(to_tf32(ra[it].x), to_tf32(ra[it].y), to_tf32(ra[it].z), to_tf32(ra[it].w));
    *reinterpret_cast<float4*>(sA + row * 128 + ((c ^ (row & 7)) << 4)) = v;
    int k = (lane & 7) + 8 * it, n = 4 * ((lane >> 3) + 4 * warp);
    const float e[4] = {rb[it].x, rb[it].y, rb[it].z, rb[it].w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int nn = n + j;
      *reinterpret_cast<float*>(sB + nn * 128 + (((k >> 2) ^ (nn & 7)) << 4) + (k & 3) * 4) = to_tf32(e[j]);
    }
  }
}
__global__ void __launch_bounds__(NTHREADS, 1)
gemm_tf32_kernel(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                 int M, int N, int K, DescCfg dc) {
  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  uint8_t* gbase = smem_raw + (base - smem_u32(smem_raw));
  const int tid = threadIdx.x, wg = tid >> 7;
  const int ktiles = K / TBK;
  int m0, n0;
  tile_coords(M, N, 128, m0, n0);
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.f;
  float4 ra[4], rb[4];
  tf32_gload(ra, rb, A, B, M, N, K, m0, n0, 0, tid);
  tf32_sstore(gbase, ra, rb, tid);
  fence_proxy_async();
  __syncthreads();
  for (int kt = 0; kt < ktiles; ++kt) {
    if (kt + 1 < ktiles) tf32_gload(ra, rb, A, B, M, N, K, m0, n0, (kt + 1) * TBK, tid);
    const int s = kt & 1;
    const uint32_t sa = base + s * 2 * TF_TILE, sb = sa + TF_TILE;
    fence_regs<64>(d);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < TBK / 8; ++kk)
      wgmma_tf32_n128(d, make_desc(sa + wg * 8192 + kk * 32, dc.a_lbo, dc.a_sbo, 1),
                      make_desc(sb + kk * 32, dc.b_lbo, dc.b_sbo, 1));
    wgmma_commit();
    fence_regs<64>(d);
    wgmma_wait<1>();   // tile kt-1 done for this warpgroup
    __syncthreads();   // ... and for the other one: stage s^1 is free
    if (kt + 1 < ktiles) {
      tf32_sstore(gbase + (s ^ 1) * 2 * TF_TILE, ra, rb, tid);
      fence_proxy_async();
    }
    __syncthreads();
  }
  wgmma_wait<0>();
  fence_regs<64>(d);
  store_acc<128>(C, d, M, N, m0, n0, tid);
}

// ------------------------------------------------------------------------------------------------
// Self-test: one wgmma m64n8k16 (A and B K-major, no swizzle). A[m][k] = (k == m%16) ? 1+256*(m/16) : 0,
// B[k][n] = 8k+n+1, so D[m][n] = (1+256*(m/16))*(8*(m%16)+n+1) identifies (m,n) uniquely.
// A core (m/8, k/8) at ((m/8)*2 + k/8)*128 (K-dir 128, M-dir 256); B core (k/8) at 2048 + (k/8)*128.
// ------------------------------------------------------------------------------------------------
__global__ void selftest_kernel(float* out, DescCfg dc) {
  __shared__ __align__(1024) __half sm[2048];
  const int tid = threadIdx.x;
  for (int i = tid; i < 2048; i += 128) sm[i] = __float2half(0.f);
  __syncthreads();
  for (int i = tid; i < 64 * 16; i += 128) {
    int m = i / 16, k = i % 16;
    float v = (k == m % 16) ? 1.f + 256.f * (m / 16) : 0.f;
    sm[(((m / 8) * 2 + k / 8) * 128 + (m % 8) * 16 + (k % 8) * 2) / 2] = __float2half(v);
  }
  { int k = tid / 8, n = tid % 8;  // 128 threads = 16 x 8 B elements
    sm[(2048 + (k / 8) * 128 + n * 16 + (k % 8) * 2) / 2] = __float2half(8.f * k + n + 1.f); }
  fence_proxy_async();
  __syncthreads();
  const uint32_t s = smem_u32(sm);
  float d[4] = {0.f, 0.f, 0.f, 0.f};
  fence_regs<4>(d);
  wgmma_fence();
  wgmma_n8(d, make_desc(s, dc.a_lbo, dc.a_sbo, 0), make_desc(s + 2048, dc.b_lbo, dc.b_sbo, 0));
  wgmma_commit();
  wgmma_wait<0>();
  fence_regs<4>(d);
  for (int r = 0; r < 4; ++r) out[tid * 4 + r] = d[r];
}

__device__ __forceinline__ float hash_val(size_t i, uint32_t seed) {  // non-zero, in [-1, 1)
  uint32_t h = (uint32_t)i * 2654435761u ^ seed ^ (uint32_t)(i >> 32) * 40503u;
  h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
  float v = (float)(h & 0xFFFF) / 32768.f - 1.f;
  return v == 0.f ? 0.5f : v;
}
__global__ void fill_f16(__half* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = __float2half(hash_val(i, seed));
}
__global__ void fill_f32(float* p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = hash_val(i, seed);
}

// ------------------------------------------------------------------------------------------------
// Host: launchers and the variant table
// ------------------------------------------------------------------------------------------------
static int smem_bytes(int need) { return std::min(SMEM_MAX, need + 1024 + SMEM_SLACK); }
typedef cudaError_t (*LaunchFn)(const void*, const void*, float*, int, int, int, DescCfg);

template <int BN, int ST, bool SW, bool BMN, int INFL = 1, bool FENCE = true>
static cudaError_t launch_f16(const void* A, const void* B, float* C, int M, int N, int K, DescCfg dc) {
  static bool attr_set = false;
  const int smem = smem_bytes(ST * (BM * BK * 2 + BN * BK * 2));
  if (!attr_set) {
    cudaError_t e = cudaFuncSetAttribute(gemm_f16_kernel<BN, ST, SW, BMN, INFL, FENCE>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    attr_set = true;
  }
  dim3 grid(((N + BN - 1) / BN) * ((M + BM - 1) / BM));
  gemm_f16_kernel<BN, ST, SW, BMN, INFL, FENCE><<<grid, NTHREADS, smem>>>((const __half*)A, (const __half*)B, C, M, N, K, dc);
  return cudaGetLastError();
}
static cudaError_t launch_tf32(const void* A, const void* B, float* C, int M, int N, int K, DescCfg dc) {
  static bool attr_set = false;
  const int smem = smem_bytes(2 * 2 * TF_TILE);
  if (!attr_set) {
    cudaError_t e = cudaFuncSetAttribute(gemm_tf32_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    attr_set = true;
  }
  dim3 grid(((N + 127) / 128) * ((M + BM - 1) / BM));
  gemm_tf32_kernel<<<grid, NTHREADS, smem>>>((const float*)A, (const float*)B, C, M, N, K, dc);
  return cudaGetLastError();
}

enum { STD = 0, SWAP = 1, AUTO = 2 };  // descriptor field convention, see header comment
enum { F16 = 0, TF32 = 1 };
static const char* conv_name[] = {"STD", "SWAP", "AUTO"};
struct Variant {
  const char* name;
  int kind; bool sw; bool bmn; int bn, stages, conv_a, conv_b;
  LaunchFn fn;
};
// AUTO = take the (A,B) convention pair of the first passing BN=128/4-stage variant with the same
// swizzle and B major-ness (STD if none passed). Order: convention probes first, then performance.
static const Variant kVariants[] = {
  // name                           kind  sw     bMN    BN  st  convA convB  launcher
  {"f16 sw128 A:K B:MN  std/std",   F16,  true,  true,  128, 4, STD,  STD,  launch_f16<128, 4, true, true>},
  {"f16 sw128 A:K B:K   std/std",   F16,  true,  false, 128, 4, STD,  STD,  launch_f16<128, 4, true, false>},
  {"f16 none  A:K B:MN  std/std",   F16,  false, true,  128, 4, STD,  STD,  launch_f16<128, 4, false, true>},
  {"f16 none  A:K B:K   std/std",   F16,  false, false, 128, 4, STD,  STD,  launch_f16<128, 4, false, false>},
  {"f16 sw128 A:K B:MN  std/swap",  F16,  true,  true,  128, 4, STD,  SWAP, launch_f16<128, 4, true, true>},
  {"f16 sw128 A:K B:MN  swap/std",  F16,  true,  true,  128, 4, SWAP, STD,  launch_f16<128, 4, true, true>},
  {"f16 sw128 A:K B:MN  swap/swap", F16,  true,  true,  128, 4, SWAP, SWAP, launch_f16<128, 4, true, true>},
  {"f16 sw128 A:K B:K   std/swap",  F16,  true,  false, 128, 4, STD,  SWAP, launch_f16<128, 4, true, false>},
  {"f16 sw128 A:K B:K   swap/std",  F16,  true,  false, 128, 4, SWAP, STD,  launch_f16<128, 4, true, false>},
  {"f16 sw128 A:K B:K   swap/swap", F16,  true,  false, 128, 4, SWAP, SWAP, launch_f16<128, 4, true, false>},
  {"f16 none  A:K B:MN  std/swap",  F16,  false, true,  128, 4, STD,  SWAP, launch_f16<128, 4, false, true>},
  {"f16 none  A:K B:MN  swap/std",  F16,  false, true,  128, 4, SWAP, STD,  launch_f16<128, 4, false, true>},
  {"f16 none  A:K B:MN  swap/swap", F16,  false, true,  128, 4, SWAP, SWAP, launch_f16<128, 4, false, true>},
  {"f16 none  A:K B:K   std/swap",  F16,  false, false, 128, 4, STD,  SWAP, launch_f16<128, 4, false, false>},
  {"f16 none  A:K B:K   swap/std",  F16,  false, false, 128, 4, SWAP, STD,  launch_f16<128, 4, false, false>},
  {"f16 none  A:K B:K   swap/swap", F16,  false, false, 128, 4, SWAP, SWAP, launch_f16<128, 4, false, false>},
  // performance variants (convention AUTO)
  {"f16 sw128 B:MN 128x128 st5",    F16,  true,  true,  128, 5, AUTO, AUTO, launch_f16<128, 5, true, true>},
  {"f16 sw128 B:MN 128x128 st6",    F16,  true,  true,  128, 6, AUTO, AUTO, launch_f16<128, 6, true, true>},
  {"f16 sw128 B:MN 128x256 st3",    F16,  true,  true,  256, 3, AUTO, AUTO, launch_f16<256, 3, true, true>},
  {"f16 sw128 B:MN 128x256 st4",    F16,  true,  true,  256, 4, AUTO, AUTO, launch_f16<256, 4, true, true>},
  {"f16 sw128 B:K  128x256 st4",    F16,  true,  false, 256, 4, AUTO, AUTO, launch_f16<256, 4, true, false>},
  {"f16 sw128 B:MN 128x128 st4 if0", F16, true,  true,  128, 4, AUTO, AUTO, launch_f16<128, 4, true, true, 0>},
  {"f16 sw128 B:MN 128x128 nofence", F16, true,  true,  128, 4, AUTO, AUTO, launch_f16<128, 4, true, true, 1, false>},
  {"tf32 sw128 A:K B:K(T) 128x128", TF32, true,  false, 128, 2, AUTO, AUTO, launch_tf32},
};
constexpr int NV = sizeof(kVariants) / sizeof(kVariants[0]);
constexpr int NJOBS = NV + 1;  // job 0 = accumulator-layout self-test

// Field values under the STD reading (see header); SWAP exchanges them.
static void std_fields(bool sw, bool mn, int bn, uint32_t& lbo, uint32_t& sbo) {
  if (!mn) { lbo = sw ? 16 : 128; sbo = 1024; }            // K-major (rows of 128 B for f16 BK=64 / tf32 BK=32)
  else if (sw) { lbo = BK * 128; sbo = 1024; }             // MN-major SW128: atom stride, 8-k-row stride
  else { lbo = (uint32_t)bn * 16; sbo = 128; }             // MN-major none: K-dir core stride, MN-dir stride
}
static DescCfg make_cfg(const Variant& v, int ca, int cb) {
  DescCfg dc;
  std_fields(v.sw, false, v.bn, dc.a_lbo, dc.a_sbo);
  std_fields(v.sw, v.bmn, v.bn, dc.b_lbo, dc.b_sbo);
  if (ca == SWAP) std::swap(dc.a_lbo, dc.a_sbo);
  if (cb == SWAP) std::swap(dc.b_lbo, dc.b_sbo);
  return dc;
}

// ------------------------------------------------------------------------------------------------
// Shapes, host data, shared results
// ------------------------------------------------------------------------------------------------
struct Shape { int M, K, N; };
static const Shape kCorr[2] = {{256, 256, 256}, {200, 320, 384}};  // M, K, N
static const Shape kTime[5] = {{4096, 768, 3072}, {4096, 3072, 768}, {6304, 768, 3072},
                               {6304, 3072, 768}, {8192, 8192, 8192}};
struct HostCase {
  std::vector<__half> A, B, Bt;       // A[M][K], B[K][N], Bt[N][K]
  std::vector<float> A32, B32;        // tf32 inputs (unrounded)
  std::vector<double> ref16, ref32;   // references (f16 values / tf32-rounded values)
};
static HostCase g_case[2];

enum { ST_PENDING = 0, ST_STARTED, ST_DONE, ST_CRASHED, ST_SKIPPED };
struct Result {
  int status, correct, checked, conv_a, conv_b, timed, selftest_bad[2];
  double rel_l2[2], max_rel[2], tflops[5];
  char err[200];
};
static Result* g_res;  // MAP_SHARED: written by worker processes, read by the parent
static int g_cur = -1;

static void fail_cuda(const char* what, cudaError_t e) {
  const char* name = g_cur == 0 ? "self-test" : kVariants[g_cur - 1].name;
  snprintf(g_res[g_cur].err, sizeof(g_res[g_cur].err), "%s: %s", what, cudaGetErrorString(e));
  g_res[g_cur].status = ST_CRASHED;
  printf("  !! [%s] CUDA error in %s: %s\n  !! CUDA context of this worker may be lost; variant '%s' marked "
         "FAILED, a fresh worker process continues with the next job.\n",
         name, what, cudaGetErrorString(e), name);
  fflush(stdout);
  _exit(3);
}
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) fail_cuda(#x, e_); } while (0)

static float tf32_round_host(float x) {  // round-to-nearest, ties away (cvt.rna), finite inputs
  uint32_t u; memcpy(&u, &x, 4); u = (u + 0x1000u) & 0xFFFFE000u; memcpy(&x, &u, 4); return x;
}
static void make_host_data() {
  uint32_t st = 12345u;
  auto rnd = [&]() { st = st * 1664525u + 1013904223u; return (float)((st >> 8) * (1.0 / 16777216.0)) * 2.f - 1.f; };
  for (int c = 0; c < 2; ++c) {
    const int M = kCorr[c].M, K = kCorr[c].K, N = kCorr[c].N;
    HostCase& h = g_case[c];
    std::vector<float> af(M * K), bf(K * N), a32r(M * K), b32r(K * N);
    h.A.resize(M * K); h.B.resize(K * N); h.Bt.resize(N * K); h.A32.resize(M * K); h.B32.resize(K * N);
    for (int i = 0; i < M * K; ++i) { h.A[i] = __float2half(rnd()); af[i] = __half2float(h.A[i]); }
    for (int i = 0; i < K * N; ++i) { h.B[i] = __float2half(rnd()); bf[i] = __half2float(h.B[i]); }
    for (int k = 0; k < K; ++k) for (int n = 0; n < N; ++n) h.Bt[(size_t)n * K + k] = h.B[(size_t)k * N + n];
    for (int i = 0; i < M * K; ++i) { h.A32[i] = rnd(); a32r[i] = tf32_round_host(h.A32[i]); }
    for (int i = 0; i < K * N; ++i) { h.B32[i] = rnd(); b32r[i] = tf32_round_host(h.B32[i]); }
    h.ref16.assign((size_t)M * N, 0.0); h.ref32.assign((size_t)M * N, 0.0);
    for (int m = 0; m < M; ++m)
      for (int k = 0; k < K; ++k) {
        double a = af[m * K + k], a2 = a32r[m * K + k];
        for (int n = 0; n < N; ++n) {
          h.ref16[(size_t)m * N + n] += a * bf[(size_t)k * N + n];
          h.ref32[(size_t)m * N + n] += a2 * b32r[(size_t)k * N + n];
        }
      }
  }
}

// ------------------------------------------------------------------------------------------------
// Jobs (run inside a worker process)
// ------------------------------------------------------------------------------------------------
static void run_selftest() {
  cudaDeviceProp p;
  CK(cudaGetDeviceProperties(&p, 0));
  printf("device: %s, sm_%d%d, %d SMs, smem/block opt-in %zu B\n", p.name, p.major, p.minor,
         p.multiProcessorCount, p.sharedMemPerBlockOptin);
  float* dout;
  CK(cudaMalloc(&dout, 512 * sizeof(float)));
  std::vector<float> out(512);
  Result& r = g_res[0];
  for (int conv = 0; conv < 2; ++conv) {
    DescCfg dc = conv == STD ? DescCfg{128, 256, 128, 256} : DescCfg{256, 128, 256, 128};
    CK(cudaMemset(dout, 0xFF, 512 * sizeof(float)));
    printf("[self-test m64n8k16, desc %s: A LBO=%u SBO=%u, B LBO=%u SBO=%u] launching...\n", conv_name[conv],
           dc.a_lbo, dc.a_sbo, dc.b_lbo, dc.b_sbo);
    fflush(stdout);
    selftest_kernel<<<1, 128>>>(dout, dc);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), dout, 512 * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int t = 0; t < 128; ++t)
      for (int q = 0; q < 4; ++q) {
        int row = 16 * (t / 32) + (t % 32) / 4 + 8 * (q / 2), col = 2 * (t % 4) + (q % 2);
        double expect = (1.0 + 256.0 * (row / 16)) * (8.0 * (row % 16) + col + 1.0), got = out[t * 4 + q];
        if (got == expect) continue;
        if (++bad <= 6) {  // decode which (row, col) the value belongs to
          long v = std::isfinite(got) ? lround(got) : -1, b = v > 0 ? v % 256 : 0;
          if (b > 0 && (v - b) % (256 * b) == 0 && (v - b) / (256 * b) < 4)
            printf("    thread %3d d[%d]: expected (row %2d, col %d) = %.0f, got %.0f = value of (row %2ld, col %ld)\n",
                   t, q, row, col, expect, got, 16 * ((v - b) / (256 * b)) + (b - 1) / 8, (b - 1) % 8);
          else
            printf("    thread %3d d[%d]: expected (row %2d, col %d) = %.0f, got %g (not a D value)\n", t, q, row,
                   col, expect, got);
        }
      }
    r.selftest_bad[conv] = bad;
    printf("  self-test (desc %s): accumulator mapping %s (%d of 512 values wrong)\n", conv_name[conv],
           bad ? "FAIL" : "PASS", bad);
    if (!bad) r.correct = 1;
    fflush(stdout);
  }
  CK(cudaFree(dout));
}

static void check_case(const Variant& v, DescCfg dc, int c, Result& r) {
  const int M = kCorr[c].M, K = kCorr[c].K, N = kCorr[c].N;
  const HostCase& h = g_case[c];
  const size_t es = v.kind == F16 ? 2 : 4;
  const void* ha = v.kind == F16 ? (const void*)h.A.data() : (const void*)h.A32.data();
  const void* hb = v.kind == F16 ? (v.bmn ? (const void*)h.B.data() : (const void*)h.Bt.data()) : (const void*)h.B32.data();
  void *dA, *dB; float* dC;
  CK(cudaMalloc(&dA, (size_t)M * K * es));
  CK(cudaMalloc(&dB, (size_t)K * N * es));
  CK(cudaMalloc(&dC, (size_t)M * N * 4));
  CK(cudaMemcpy(dA, ha, (size_t)M * K * es, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, hb, (size_t)K * N * es, cudaMemcpyHostToDevice));
  CK(cudaMemset(dC, 0xFF, (size_t)M * N * 4));  // NaN: unwritten outputs are caught
  printf("  [%s] correctness M=%d N=%d K=%d: launching...\n", v.name, M, N, K);
  fflush(stdout);
  CK(v.fn(dA, dB, dC, M, N, K, dc));
  CK(cudaDeviceSynchronize());
  std::vector<float> out((size_t)M * N);
  CK(cudaMemcpy(out.data(), dC, out.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaFree(dA)); CK(cudaFree(dB)); CK(cudaFree(dC));
  const std::vector<double>& ref = v.kind == F16 ? h.ref16 : h.ref32;
  double maxref = 0, maxerr = 0, se = 0, sr = 0;
  bool finite = true;
  for (size_t i = 0; i < out.size(); ++i) {
    if (!std::isfinite(out[i])) finite = false;
    double e = fabs(out[i] - ref[i]);
    maxerr = std::max(maxerr, e); maxref = std::max(maxref, fabs(ref[i]));
    se += e * e; sr += ref[i] * ref[i];
  }
  r.rel_l2[c] = finite ? sqrt(se / sr) : INFINITY;
  r.max_rel[c] = finite ? maxerr / maxref : INFINITY;
  bool pass = finite && r.rel_l2[c] <= 1e-3;
  if (!pass) r.correct = 0;
  printf("  [%s] M=%d N=%d K=%d: rel L2 err %.3e, max rel err %.3e%s -> %s\n", v.name, M, N, K, r.rel_l2[c],
         r.max_rel[c], finite ? "" : " (non-finite values)", pass ? "PASS" : "FAIL");
  fflush(stdout);
}

static void* g_bigA = nullptr; static void* g_bigB = nullptr; static float* g_bigC = nullptr;
static int g_big_kind = -1;

static void time_variant(const Variant& v, DescCfg dc, Result& r) {
  const size_t maxe = (size_t)8192 * 8192;
  if (!g_bigA) {
    CK(cudaMalloc(&g_bigA, maxe * 4)); CK(cudaMalloc(&g_bigB, maxe * 4)); CK(cudaMalloc((void**)&g_bigC, maxe * 4));
  }
  if (g_big_kind != v.kind) {
    if (v.kind == F16) { fill_f16<<<1024, 256>>>((__half*)g_bigA, maxe, 1u); fill_f16<<<1024, 256>>>((__half*)g_bigB, maxe, 2u); }
    else { fill_f32<<<1024, 256>>>((float*)g_bigA, maxe, 1u); fill_f32<<<1024, 256>>>((float*)g_bigB, maxe, 2u); }
    CK(cudaGetLastError()); CK(cudaDeviceSynchronize());
    g_big_kind = v.kind;
  }
  const int WARM = 10, RUNS = 50;
  cudaEvent_t ev[RUNS + 1];
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int s = 0; s < 5; ++s) {
    const int M = kTime[s].M, K = kTime[s].K, N = kTime[s].N;
    printf("  [%s] timing M=%d K=%d N=%d ...", v.name, M, K, N);
    fflush(stdout);
    for (int i = 0; i < WARM; ++i) CK(v.fn(g_bigA, g_bigB, g_bigC, M, N, K, dc));
    for (int i = 0; i < RUNS; ++i) { CK(cudaEventRecord(ev[i])); CK(v.fn(g_bigA, g_bigB, g_bigC, M, N, K, dc)); }
    CK(cudaEventRecord(ev[RUNS]));
    CK(cudaEventSynchronize(ev[RUNS]));
    std::vector<float> ms(RUNS);
    for (int i = 0; i < RUNS; ++i) CK(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
    std::sort(ms.begin(), ms.end());
    double med = 0.5 * (ms[RUNS / 2 - 1] + ms[RUNS / 2]);
    r.tflops[s] = 2.0 * M * N * (double)K / (med * 1e-3) / 1e12;
    printf(" median %.4f ms, %.1f TFLOP/s\n", med, r.tflops[s]);
    fflush(stdout);
  }
  for (auto& e : ev) CK(cudaEventDestroy(e));
  r.timed = 1;
}

static void run_variant(int vi) {
  const Variant& v = kVariants[vi];
  Result& r = g_res[vi + 1];
  int ca = v.conv_a, cb = v.conv_b;
  if (ca == AUTO || cb == AUTO) {  // borrow the convention that passed for the same layout
    ca = cb = STD;
    for (int j = 0; j < NV; ++j) {
      const Variant& b = kVariants[j];
      if (b.kind == F16 && b.sw == v.sw && b.bmn == v.bmn && b.conv_a != AUTO && g_res[j + 1].correct) {
        ca = b.conv_a; cb = b.conv_b; break;
      }
    }
  }
  DescCfg dc = make_cfg(v, ca, cb);
  r.conv_a = ca; r.conv_b = cb;
  printf("\n=== [%s] BM=%d BN=%d BK=%d stages=%d smem=%d B; desc conv A=%s B=%s: A LBO=%u SBO=%u | B LBO=%u SBO=%u "
         "(swizzle %s, trans-b %d)\n", v.name, BM, v.bn, v.kind == F16 ? BK : TBK, v.stages,
         smem_bytes(v.kind == F16 ? v.stages * (BM * BK * 2 + v.bn * BK * 2) : 4 * TF_TILE), conv_name[ca],
         conv_name[cb], dc.a_lbo, dc.a_sbo, dc.b_lbo, dc.b_sbo, v.sw ? "128B" : "none", v.bmn ? 1 : 0);
  fflush(stdout);
  r.correct = 1;
  for (int c = 0; c < 2; ++c) check_case(v, dc, c, r);
  r.checked = 1;
  if (r.correct) time_variant(v, dc, r);
}

static void worker(int start) {
  cudaError_t e = cudaSetDevice(0);
  if (e == cudaSuccess) e = cudaFree(nullptr);  // forces context creation
  if (e != cudaSuccess) {  // leaves the job PENDING: the parent stops instead of retrying every job
    snprintf(g_res[start].err, sizeof(g_res[start].err), "CUDA init: %s", cudaGetErrorString(e));
    printf("!! CUDA initialisation failed in worker: %s\n", cudaGetErrorString(e));
    fflush(stdout);
    _exit(4);
  }
  for (int j = start; j < NJOBS; ++j) {
    if (g_res[j].status == ST_SKIPPED) continue;
    g_cur = j;
    g_res[j].status = ST_STARTED;
    alarm(40);  // a hung kernel kills only this worker
    if (j == 0) run_selftest(); else run_variant(j - 1);
    alarm(0);
    g_res[j].status = ST_DONE;
  }
}

int main(int argc, char** argv) {
  const char* filter = argc > 1 ? argv[1] : nullptr;  // optional: only variants whose name contains it
  printf("wgmma + cp.async GEMM probe (C = A x B, f16 in / f32 acc; tf32 variant). %d variants.\n", NV);
  printf("Reference on this GPU: cuBLAS ~369 TFLOP/s at 4096x768x3072 f16; mma.sync kernel 120-175.\n");
  make_host_data();
  g_res = (Result*)mmap(nullptr, sizeof(Result) * NJOBS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (g_res == MAP_FAILED) { perror("mmap"); return 1; }
  memset(g_res, 0, sizeof(Result) * NJOBS);
  for (int i = 0; i < NV; ++i) {
    g_res[i + 1].conv_a = kVariants[i].conv_a;
    g_res[i + 1].conv_b = kVariants[i].conv_b;
    if (filter && !strstr(kVariants[i].name, filter)) g_res[i + 1].status = ST_SKIPPED;
  }

  int next = 0, exit_code = 0;
  while (next < NJOBS) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    if (pid == 0) { worker(next); fflush(stdout); _exit(0); }
    int wst = 0;
    waitpid(pid, &wst, 0);
    int j = next;
    while (j < NJOBS && (g_res[j].status == ST_DONE || g_res[j].status == ST_SKIPPED)) ++j;
    if (j < NJOBS) {  // the worker died while running job j (or before it started)
      Result& r = g_res[j];
      if (r.status == ST_PENDING) {
        printf("!! a worker process died before starting any job (%s). No usable GPU? Stopping.\n",
               r.err[0] ? r.err : "no CUDA error recorded");
        exit_code = 2;
        break;
      }
      if (r.status != ST_CRASHED) {
        snprintf(r.err, sizeof(r.err), "worker %s %d", WIFSIGNALED(wst) ? "killed by signal" : "exited with code",
                 WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
        r.status = ST_CRASHED;
      }
      if (!r.checked) r.correct = 0;
      printf("  !! job '%s' FAILED (%s); continuing with a new worker process.\n",
             j == 0 ? "self-test" : kVariants[j - 1].name, r.err);
      ++j;
    }
    next = j;
  }

  printf("\n================================ SUMMARY ================================\n");
  const Result& st = g_res[0];
  printf("accumulator self-test (m64n8k16): desc STD %s, desc SWAP %s%s\n",
         st.status == ST_DONE ? (st.selftest_bad[0] == 0 ? "PASS" : "FAIL") : "n/a",
         st.status == ST_DONE ? (st.selftest_bad[1] == 0 ? "PASS" : "FAIL") : "n/a",
         st.status == ST_CRASHED ? "  (self-test crashed)" : "");
  printf("TFLOP/s = 2*M*N*K / median time; shapes are M x K x N. conv = descriptor convention A/B.\n");
  printf("%-31s %-9s %-9s", "variant", "conv", "correct");
  for (int s = 0; s < 5; ++s) {
    char b[32]; snprintf(b, sizeof(b), "%dx%dx%d", kTime[s].M, kTime[s].K, kTime[s].N); printf(" %14s", b);
  }
  printf("\n");
  for (int i = 0; i < NV; ++i) {
    const Result& r = g_res[i + 1];
    if (r.status == ST_SKIPPED) continue;
    char conv[16]; snprintf(conv, sizeof(conv), "%s/%s", conv_name[r.conv_a], conv_name[r.conv_b]);
    const char* c = r.checked ? (r.correct ? "yes" : "no") : (r.status == ST_CRASHED ? "ERROR" : "n/a");
    printf("%-31s %-9s %-9s", kVariants[i].name, conv, c);
    for (int s = 0; s < 5; ++s) {
      if (r.timed) printf(" %14.1f", r.tflops[s]); else printf(" %14s", "-");
    }
    if (r.status == ST_CRASHED) printf("  [%s]", r.err);
    printf("\n");
  }
  return exit_code;
}
