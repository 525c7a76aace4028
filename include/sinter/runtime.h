/* libsinter_rt: loads and runs artifacts made by `sinter compile`. A stable C ABI.
 *
 * Lifecycle:  sinter_model_load -> sinter_session_create -> sinter_session_run ... ->
 *             sinter_session_destroy -> sinter_model_free
 *
 * Thread safety: a loaded model is immutable and may be shared by any number of threads; its
 * weights go to a device once, with the first session there, and every session on that device
 * reads that one copy. A session owns its working memory (the activation arena; on the GPU also
 * its stream, events and captured CUDA graph) and must be used by one thread at a time; create one
 * session per thread (or per stream) to run concurrently, or let a pool (sinter_pool_*) hand a free
 * session to each call from any thread. A call on a session that another thread is in fails with
 * SINTER_ERROR_BUSY. Handles are checked without being dereferenced: a null, freed or stale
 * handle is SINTER_ERROR_INVALID_ARGUMENT (freeing one twice does nothing). Errors: every call
 * returns a status; SINTER_OK is 0. The message of the calling thread's last failure is
 * sinter_last_error().
 *
 * Versions: SINTER_ABI_VERSION changes when something existing changes incompatibly (a function's
 * signature or meaning, a struct's layout, an enum value, the artifact format); a runtime refuses
 * artifacts of another version. SINTER_ABI_REVISION counts additive changes within one version
 * (new functions, structs, status or enum values) and restarts at 0 with a new version. A program
 * built against revision R runs on a library of the same version and a revision >= R
 * (sinter_runtime_abi_revision() says which one is loaded).
 *   revision 1: pools (sinter_pool_*), SINTER_ERROR_BUSY (a session already in a call, a busy
 *   pool), sinter_model_device_usage; artifacts end in a digest trailer (docs/artifact-format.md).
 *   revision 2: shape buckets (sinter_model_symbol_count / _symbol_info / _dim_symbol /
 *   _output_shape): an artifact with a plan per bucket of a symbolic dim; a run picks the plan of
 *   its inputs' shape, or pads into the next bucket up where the compiler proved the dim
 *   independent. A revision-1 library refuses such artifacts (a header field it reads as reserved).
 *   Also sinter_session_run_memory and sinter_session_copy (buffers in host or device memory).
 *   revision 3: sinter_model_cpu_level; a CPU artifact may carry kernels for several x86-64
 *   levels, of which the loader runs the best the CPU has (a revision-2 library refuses them,
 *   naming the list of levels as a CPU it cannot check).
 *
 * The runtime depends on libc only. It reaches the GPU through dlopen("libcuda.so.1") and the CUDA
 * driver API; a machine without the driver gets SINTER_ERROR_NO_DEVICE, not a crash.
 */
#ifndef SINTER_RUNTIME_H
#define SINTER_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SINTER_ABI_VERSION 1
#define SINTER_ABI_REVISION 3

typedef enum sinter_status {
  SINTER_OK = 0,
  SINTER_ERROR_INVALID_ARGUMENT = 1, /* null handle, bad index, input of wrong dtype/shape/size */
  SINTER_ERROR_INVALID_ARTIFACT = 2, /* not a sinter artifact, corrupt, or another ABI version */
  SINTER_ERROR_UNSUPPORTED = 3,      /* e.g. CPU instruction set or GPU architecture not supported */
  SINTER_ERROR_NO_DEVICE = 4,        /* no CUDA driver or no such device */
  SINTER_ERROR_DEVICE = 5,           /* a CUDA driver call failed */
  SINTER_ERROR_OUT_OF_MEMORY = 6,
  SINTER_ERROR_IO = 7,               /* the file could not be opened or loaded */
  SINTER_ERROR_INTERNAL = 8,
  SINTER_ERROR_BUSY = 9              /* the session is in a call from another thread, or a pool
                                        that fails when busy had every session in use (rev. 1) */
} sinter_status;

/* Element types; values match ONNX TensorProto.DataType. The low-precision types (17 and up)
 * take one byte per element in every buffer: a float8 or float4 code (float4 in the low 4 bits),
 * a 4- or 2-bit integer as its int8 / uint8 value (int4 -8 is 0xF8). Only an element's type bits
 * are read; the kernels write them in that canonical form. (ONNX files pack them; sinter's
 * buffers do not.) */
typedef enum sinter_dtype {
  SINTER_FLOAT32 = 1, SINTER_UINT8 = 2, SINTER_INT8 = 3, SINTER_UINT16 = 4, SINTER_INT16 = 5,
  SINTER_INT32 = 6, SINTER_INT64 = 7, SINTER_BOOL = 9, SINTER_FLOAT16 = 10, SINTER_FLOAT64 = 11,
  SINTER_UINT32 = 12, SINTER_UINT64 = 13, SINTER_BFLOAT16 = 16,
  SINTER_FLOAT8E4M3FN = 17, SINTER_FLOAT8E4M3FNUZ = 18, SINTER_FLOAT8E5M2 = 19,
  SINTER_FLOAT8E5M2FNUZ = 20, SINTER_UINT4 = 21, SINTER_INT4 = 22, SINTER_FLOAT4E2M1 = 23,
  SINTER_FLOAT8E8M0 = 24, SINTER_UINT2 = 25, SINTER_INT2 = 26
} sinter_dtype;

typedef enum sinter_target { SINTER_TARGET_CPU = 1, SINTER_TARGET_CUDA = 2 } sinter_target;

#define SINTER_MAX_RANK 8

/* One input or output of a model. */
typedef struct sinter_tensor_info {
  const char *name;
  sinter_dtype dtype;
  int32_t rank;
  int64_t dims[SINTER_MAX_RANK];
} sinter_tensor_info;

/* A caller's buffer: device memory for a CUDA session's run, host memory otherwise. */
typedef struct sinter_tensor {
  void *data;
  size_t byte_size; /* must equal the signature's element count times the element size */
  sinter_dtype dtype;
  int32_t rank;
  int64_t dims[SINTER_MAX_RANK];
} sinter_tensor;

typedef struct sinter_model sinter_model;
typedef struct sinter_session sinter_session;

/* The message of the calling thread's last failed call ("" if none). Valid until the thread's
 * next failing call. */
const char *sinter_last_error(void);
/* Runtime ABI version (SINTER_ABI_VERSION of the library actually loaded). */
int sinter_runtime_abi_version(void);
/* Its additive revision (SINTER_ABI_REVISION of the library actually loaded). Revision 3. */
int sinter_runtime_abi_revision(void);

/* Loads an artifact (model.so). Checks its ABI version, its target, and for CPU artifacts that
 * the host has the instruction set it was compiled for. */
sinter_status sinter_model_load(const char *path, sinter_model **model);
void sinter_model_free(sinter_model *model);

sinter_target sinter_model_target(const sinter_model *model);
int32_t sinter_model_input_count(const sinter_model *model);
int32_t sinter_model_output_count(const sinter_model *model);
sinter_status sinter_model_input_info(const sinter_model *model, int32_t index, sinter_tensor_info *info);
sinter_status sinter_model_output_info(const sinter_model *model, int32_t index, sinter_tensor_info *info);

typedef struct sinter_session_options {
  int32_t device;      /* CUDA device ordinal (CUDA artifacts) */
  int32_t threads;     /* CPU worker threads; 0 = one per core (CPU artifacts) */
  int32_t use_graphs;  /* CUDA: capture the plan as a CUDA graph after the first run (default 1) */
} sinter_session_options;

/* Fills options with the defaults. */
void sinter_session_options_init(sinter_session_options *options);
/* Creates a session: allocates the arena; CUDA: makes its stream and events, and the first
 * session of the model on a device also loads the kernels and uploads the weights there, which
 * later sessions on that device share (they are freed with the last of them). options may be null
 * for the defaults. */
sinter_status sinter_session_create(const sinter_model *model, const sinter_session_options *options,
                                    sinter_session **session);
void sinter_session_destroy(sinter_session *session);

/* Runs the model. inputs and outputs follow the signature's order; every one is validated (null,
 * dtype, rank, dims, byte size) before anything runs. CUDA: buffers are device pointers and the
 * work is queued on `stream` (a CUstream; null is the default stream) without synchronising.
 * CPU: buffers are host pointers; `stream` must be null; the call returns when done. */
sinter_status sinter_session_run(sinter_session *session, const sinter_tensor *inputs, int32_t input_count,
                                 sinter_tensor *outputs, int32_t output_count, void *stream);

/* Like sinter_session_run, but every buffer is host memory for any target: copies in, runs,
 * copies out and synchronises. For tools and simple programs. */
sinter_status sinter_session_run_host(sinter_session *session, const sinter_tensor *inputs,
                                      int32_t input_count, sinter_tensor *outputs, int32_t output_count);

/* Measures the plan's latency without host<->device copies, for benchmarks. Copies the host
 * inputs (validated like sinter_session_run's) to the session once, then runs the plan `warmup`
 * times untimed and `iterations` times timed, and writes each timed run's milliseconds to
 * latencies_ms[0 .. iterations). Before every run the inputs are put back into the arena from that
 * copy (device to device on CUDA), outside the timed span: the plan may reuse their memory. Only
 * the plan is timed: on CUDA with events on the session's stream around it (the CUDA graph's
 * replay when graphs are on; capture happens before the first event), waiting for each run before
 * the next; on the CPU with a steady clock. Outputs are computed but not returned. warmup >= 0,
 * 1 <= iterations <= 100000000. The same thread-safety as sinter_session_run. */
sinter_status sinter_session_benchmark(sinter_session *session, const sinter_tensor *host_inputs,
                                       int32_t input_count, int32_t warmup, int32_t iterations,
                                       double *latencies_ms);

/* The plan's steps (kernel launches and copies), in the order they run: how many, and each one's
 * name (the kernel's, "fused_matmul_add_3", or "copy"; null with the last error set for an index
 * out of range). The string lives as long as the model. */
int32_t sinter_model_step_count(const sinter_model *model);
const char *sinter_model_step_name(const sinter_model *model, int32_t index);

/* The x86-64 level whose kernels a CPU model runs ("x86-64-v3"): of the levels the artifact has
 * kernels for, the highest this CPU supports, no higher than the environment variable
 * SINTER_MAX_CPU_LEVEL when it was set at load (revision 3). Null for a CUDA model, and null with
 * the last error set for an invalid handle. The string lives as long as the model. */
const char *sinter_model_cpu_level(const sinter_model *model);

/* Where the time goes: like sinter_session_benchmark, but each run executes the plan one step at
 * a time (no CUDA graph) with a timestamp between consecutive steps (CUDA events on the session's
 * stream; a steady clock on the CPU), and writes the median over the `iterations` timed runs of
 * each step's milliseconds to step_ms[0 .. sinter_model_step_count). step_capacity must be at
 * least that count. Launch overheads that a graph replay hides are part of these numbers, so their
 * sum exceeds sinter_session_benchmark's latency. */
sinter_status sinter_session_profile(sinter_session *session, const sinter_tensor *host_inputs,
                                     int32_t input_count, int32_t warmup, int32_t iterations,
                                     double *step_ms, int32_t step_capacity);

/* What a model holds on one device (revision 1). */
typedef struct sinter_device_usage {
  int32_t sessions;       /* live sessions of the model there (a pool's included) */
  int32_t weight_uploads; /* times its weights were copied there since the model was loaded */
  uint64_t weight_bytes;  /* device memory its weights hold there now: one copy for all sessions;
                             0 on the CPU, where every session reads them in place in the file */
  uint64_t arena_bytes;   /* the activation arenas of those sessions, together */
} sinter_device_usage;

/* Fills usage for a CUDA ordinal (CUDA artifacts; all zero where no session is) or for device 0,
 * the host (CPU artifacts; another device is an invalid argument). It counts the sessions made
 * from this handle, pools' included; another sinter_model_load of the same file is another model
 * with its own weights. */
sinter_status sinter_model_device_usage(const sinter_model *model, int32_t device,
                                        sinter_device_usage *usage);

/* A pool of sessions on one model that any number of threads may run through at once, with no
 * locking of their own (revision 1). Each call takes a free session, runs on it and puts it back;
 * the pool creates sessions lazily, up to max_sessions, and when all are taken the call waits for
 * one (SINTER_POOL_WAIT) or returns SINTER_ERROR_BUSY at once (SINTER_POOL_FAIL). Sessions are
 * kept until sinter_pool_free. */
typedef struct sinter_pool sinter_pool;

typedef enum sinter_pool_when_busy { SINTER_POOL_WAIT = 0, SINTER_POOL_FAIL = 1 } sinter_pool_when_busy;

typedef struct sinter_pool_options {
  sinter_session_options session; /* for every session the pool makes */
  int32_t when_busy;              /* a sinter_pool_when_busy */
} sinter_pool_options;

/* Defaults: the session defaults except threads 1 (a pool runs in parallel across its callers,
 * one core each; set session.threads to give each run more), and SINTER_POOL_WAIT. */
void sinter_pool_options_init(sinter_pool_options *options);
/* Makes a pool of at most max_sessions (1 to 4096) sessions; none exists until a call needs one.
 * options may be null for the defaults. The pool keeps the model's artifact alive, like a session. */
sinter_status sinter_pool_create(const sinter_model *model, const sinter_pool_options *options,
                                 int32_t max_sessions, sinter_pool **pool);
/* Frees the pool's handle: later calls with it (or a copy) fail with INVALID_ARGUMENT, and freeing
 * it twice does nothing. Calls already running finish; the pool and its sessions go when the last
 * of them returns. */
void sinter_pool_free(sinter_pool *pool);
/* sinter_session_run and sinter_session_run_host on a free session of the pool; safe from any
 * thread at the same time. Arguments are validated before a session is taken. A session's
 * failure is reported to the caller, and the session goes back to the pool. */
sinter_status sinter_pool_run(sinter_pool *pool, const sinter_tensor *inputs, int32_t input_count,
                              sinter_tensor *outputs, int32_t output_count, void *stream);
sinter_status sinter_pool_run_host(sinter_pool *pool, const sinter_tensor *inputs,
                                   int32_t input_count, sinter_tensor *outputs,
                                   int32_t output_count);
/* Sessions the pool has made so far (-1 for a bad handle). */
int32_t sinter_pool_session_count(const sinter_pool *pool);

/* Shape buckets (revision 2). An artifact compiled with `--dim batch=1,2,4,8` (or a range) has a
 * plan per bucket of each such symbol; the input and output infos above describe plan 0 (every
 * smallest bucket). A run picks the plan whose buckets equal its inputs' sizes; a size between
 * buckets runs in the next bucket up, padded with zeros and its outputs trimmed, when the symbol is
 * paddable (the compiler proved no op mixes elements along it), and is INVALID_ARGUMENT otherwise,
 * saying why. Outputs then have the inputs' size of the symbol where it appears in them. */
typedef struct sinter_symbol_info {
  const char *name;          /* the symbol ("batch"); lives as long as the model */
  int32_t bucket_count;
  const int64_t *buckets;    /* bucket_count sizes, ascending; live as long as the model */
  int32_t paddable;          /* 1: sizes between buckets run padded in the next bucket up */
  const char *padding_refusal; /* when not paddable, why the proof failed (or ""); "" otherwise */
} sinter_symbol_info;

/* The bucketed symbols (0 for an artifact of one shape; -1 for a bad handle). */
int32_t sinter_model_symbol_count(const sinter_model *model);
sinter_status sinter_model_symbol_info(const sinter_model *model, int32_t index,
                                       sinter_symbol_info *info);
/* The bucketed symbol at `axis` of input (is_output 0) or output (1) `index`, "" when that dim is
 * not bucketed, null with the last error set for a bad index. The string lives as long as the model. */
const char *sinter_model_dim_symbol(const sinter_model *model, int32_t is_output, int32_t index,
                                    int32_t axis);
/* The shape of output `output` for inputs of these dtypes and dims (their data is not read): the
 * plan's, with each bucketed symbol at the inputs' size. Fails as a run would for inputs that fit no
 * plan, with the same message. */
sinter_status sinter_model_output_shape(const sinter_model *model, const sinter_tensor *inputs,
                                        int32_t input_count, int32_t output,
                                        sinter_tensor_info *info);

/* Where a buffer lives, for callers that get tensors in either place and have no CUDA of their own
 * (a Triton backend whose inputs may arrive in GPU memory; revision 2). */
typedef enum sinter_memory { SINTER_MEMORY_HOST = 0, SINTER_MEMORY_DEVICE = 1 } sinter_memory;

/* Like sinter_session_run_host, but each buffer is host memory or device memory of the session's
 * device, as input_memory[i] / output_memory[i] say (null arrays: all host). A CPU session takes
 * host memory only. Returns when the outputs are written. */
sinter_status sinter_session_run_memory(sinter_session *session, const sinter_tensor *inputs,
                                        const int32_t *input_memory, int32_t input_count,
                                        sinter_tensor *outputs, const int32_t *output_memory,
                                        int32_t output_count);
/* Copies `bytes` between host memory and the session's device memory (either way, or within one),
 * on the session's context, and returns when done. A CPU session copies host to host only. */
sinter_status sinter_session_copy(sinter_session *session, void *destination,
                                  int32_t destination_memory, const void *source,
                                  int32_t source_memory, size_t bytes);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* SINTER_RUNTIME_H */
