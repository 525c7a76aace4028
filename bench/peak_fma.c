/* The machine's peak f32 multiply-add rate, for the instruction sets sinter's --cpu levels use:
 * SSE multiply then add (x86-64-v2 has no FMA), AVX2 FMA (v3) and AVX-512 FMA (v4), on 1 and on
 * N threads at once. The denominator for "fraction of peak" in docs/performance.md.
 *
 *   cc -O3 -pthread bench/peak_fma.c -o /tmp/peak_fma && /tmp/peak_fma [threads=2]
 *
 * Each thread runs 12 independent accumulator chains (enough to cover the FMA latency on two
 * ports) for a fixed number of steps; GFLOP/s counts a multiply-add as 2 FLOPs per lane; the best
 * of 3 rounds is printed (on a shared machine, the least disturbed). Levels the CPU lacks are
 * skipped. Two "cores" that are hyperthreads of one physical core share its FMA units, so the
 * N-thread figure can equal the 1-thread one. */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHAINS 12
#define STEPS 50000000L
#define ROUNDS 3

typedef double (*kernel_fn)(float seed);

static double sse_kernel(float seed) {
  __m128 acc[CHAINS], m = _mm_set1_ps(0.999999f), a = _mm_set1_ps(1e-7f);
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = _mm_set1_ps(seed + (float)c);
  for (long s = 0; s < STEPS; ++s)
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = _mm_add_ps(_mm_mul_ps(acc[c], m), a);
  __m128 sum = acc[0];
  for (int c = 1; c < CHAINS; ++c)
    sum = _mm_add_ps(sum, acc[c]);
  return _mm_cvtss_f32(sum);
}

__attribute__((target("avx2,fma"))) static double avx2_kernel(float seed) {
  __m256 acc[CHAINS], m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = _mm256_set1_ps(seed + (float)c);
  for (long s = 0; s < STEPS; ++s)
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = _mm256_fmadd_ps(acc[c], m, a);
  __m256 sum = acc[0];
  for (int c = 1; c < CHAINS; ++c)
    sum = _mm256_add_ps(sum, acc[c]);
  return _mm256_cvtss_f32(sum);
}

__attribute__((target("avx512f"))) static double avx512_kernel(float seed) {
  __m512 acc[CHAINS], m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = _mm512_set1_ps(seed + (float)c);
  for (long s = 0; s < STEPS; ++s)
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = _mm512_fmadd_ps(acc[c], m, a);
  __m512 sum = acc[0];
  for (int c = 1; c < CHAINS; ++c)
    sum = _mm512_add_ps(sum, acc[c]);
  return _mm512_reduce_add_ps(sum);
}

struct job {
  kernel_fn kernel;
  double result;
};

static void *run_job(void *argument) {
  struct job *job = argument;
  job->result = job->kernel(1.0f);
  return NULL;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* GFLOP/s of `threads` threads each running the kernel once, all started together. */
static double measure(kernel_fn kernel, int lanes, int threads) {
  pthread_t ids[64];
  struct job jobs[64];
  double start = now();
  for (int t = 0; t < threads; ++t) {
    jobs[t].kernel = kernel;
    pthread_create(&ids[t], NULL, run_job, &jobs[t]);
  }
  double sink = 0;
  for (int t = 0; t < threads; ++t) {
    pthread_join(ids[t], NULL);
    sink += jobs[t].result;
  }
  double seconds = now() - start;
  if (sink == 12345.0)
    printf("(unlikely)\n");
  return 2.0 * lanes * CHAINS * (double)STEPS * threads / seconds / 1e9;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2;
  if (threads < 1 || threads > 64)
    threads = 2;
  __builtin_cpu_init();
  struct {
    const char *name;
    kernel_fn kernel;
    int lanes;
    int supported;
  } levels[] = {
      {"x86-64-v2 (SSE mul+add)", sse_kernel, 4, 1},
      {"x86-64-v3 (AVX2 FMA)", avx2_kernel, 8, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
      {"x86-64-v4 (AVX-512 FMA)", avx512_kernel, 16, __builtin_cpu_supports("avx512f")},
  };
  printf("| level | 1 thread GFLOP/s | %d threads GFLOP/s |\n|---|---:|---:|\n", threads);
  for (int i = 0; i < 3; ++i) {
    if (!levels[i].supported) {
      printf("| %s | not supported | |\n", levels[i].name);
      continue;
    }
    double one = 0, many = 0;
    for (int round = 0; round < ROUNDS; ++round) {
      double a = measure(levels[i].kernel, levels[i].lanes, 1);
      double b = measure(levels[i].kernel, levels[i].lanes, threads);
      one = a > one ? a : one;
      many = b > many ? b : many;
    }
    printf("| %s | %.1f | %.1f |\n", levels[i].name, one, many);
  }
  return 0;
}
