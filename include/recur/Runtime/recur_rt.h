/*===- recur_rt.h - the Recur runtime C API ---------------------*- C -*-===*
 *
 * Part of the Recur project.
 *
 * librecur_rt links the kernels recurc generates into a C or C++ program.
 * It has a C ABI and no LLVM or MLIR dependency. `recurc --target=cpu`
 * writes, next to each layer's object, a header `<layer>.h` that describes
 * the layer to this runtime (a `recur_layer_desc`) and wraps the calls below
 * in functions typed for the layer (`recur_<layer>_forward`, ...); most
 * programs use those and never fill a descriptor by hand.
 *
 * Errors: every fallible call returns a `recur_status`. On failure it also
 * records a readable message, retrieved with `recur_last_error()` (one per
 * thread, overwritten by the next failure on that thread). Nothing in the
 * runtime aborts its host: bad shapes, null pointers, mismatched dtypes, a
 * state made for another layer or a corrupt saved state are all errors.
 *
 * CUDA: the calls of the "CUDA devices" section reach the driver through
 * libcuda.so.1, opened at run time; without it they fail with
 * RECUR_ERROR_NO_DEVICE and everything else works as before.
 *
 *===----------------------------------------------------------------------===*/

#ifndef RECUR_RUNTIME_RECUR_RT_H
#define RECUR_RUNTIME_RECUR_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes; a layer header built for another version is
 * refused by recur_forward with RECUR_ERROR_ABI. */
#define RECUR_ABI_VERSION 6
#define RECUR_MAX_RANK 8

/*===-------------------------------------------------------------------===*
 * Status codes and messages
 *===-------------------------------------------------------------------===*/

typedef enum recur_status {
  RECUR_OK = 0,
  RECUR_ERROR_NULL_POINTER = 1,     /* a required pointer is NULL */
  RECUR_ERROR_INVALID_ARGUMENT = 2, /* a bad index, row, count or option */
  RECUR_ERROR_SHAPE = 3,            /* a tensor's rank or size is wrong */
  RECUR_ERROR_DTYPE = 4,            /* a tensor's element type is wrong */
  RECUR_ERROR_STATE = 5, /* a state made for another layer or batch size */
  RECUR_ERROR_OUT_OF_MEMORY = 6,
  RECUR_ERROR_FORMAT = 7, /* a saved state that is truncated or corrupt */
  RECUR_ERROR_ABI = 8,    /* a layer descriptor of another ABI version */
  RECUR_ERROR_UNSUPPORTED = 9, /* e.g. a state init the runtime cannot make */
  RECUR_ERROR_INTERNAL = 10,
  RECUR_ERROR_NO_DEVICE = 11, /* no CUDA driver or no CUDA device */
  RECUR_ERROR_DEVICE = 12     /* a CUDA driver call failed */
} recur_status;

/* A fixed name for a status ("RECUR_ERROR_SHAPE"). */
const char *recur_status_name(recur_status status);

/* The message of the last failing call on this thread ("" if none). */
const char *recur_last_error(void);

/*===-------------------------------------------------------------------===*
 * Tensors
 *===-------------------------------------------------------------------===*/

typedef enum recur_dtype {
  RECUR_F16 = 1,  /* IEEE half, stored as uint16_t */
  RECUR_BF16 = 2, /* bfloat16, stored as uint16_t */
  RECUR_F32 = 3,
  RECUR_F64 = 4,
  RECUR_C64 = 5,  /* complex float: {re, im} as two floats */
  RECUR_C128 = 6, /* complex double */
  RECUR_BOOL = 7, /* one byte, 0 or 1 */
  RECUR_I32 = 8
} recur_dtype;

/* Bytes per element (0 for an unknown dtype). */
size_t recur_dtype_size(recur_dtype dtype);
/* "f32", "c64", ... ("?" for an unknown dtype). */
const char *recur_dtype_name(recur_dtype dtype);

/* A view of a strided tensor owned by the caller. Strides count elements,
 * not bytes. `data` may be NULL only when the tensor has no elements. */
typedef struct recur_tensor {
  void *data;
  recur_dtype dtype;
  int32_t rank;
  int64_t shape[RECUR_MAX_RANK];
  int64_t strides[RECUR_MAX_RANK];
} recur_tensor;

/* A row-major (contiguous) view of `data`; `rank` <= RECUR_MAX_RANK. */
recur_tensor recur_tensor_contiguous(void *data, recur_dtype dtype,
                                     int32_t rank, const int64_t *shape);
/* The number of elements of `t` (1 for rank 0). */
int64_t recur_tensor_numel(const recur_tensor *t);

/*===-------------------------------------------------------------------===*
 * Memory and threads
 *===-------------------------------------------------------------------===*/

/* 64-byte aligned memory; recur_free(NULL) does nothing. */
void *recur_alloc(size_t bytes);
void recur_free(void *ptr);

/* The buffers kernels allocate (their workspace and results) come from the
 * runtime; these counters say how much. */
typedef struct recur_memory_stats {
  size_t live_bytes;  /* allocated by kernels and not yet freed */
  size_t peak_bytes;  /* the most live at once since the last reset */
  uint64_t allocations;
} recur_memory_stats;
void recur_memory_stats_get(recur_memory_stats *stats);
void recur_memory_stats_reset_peak(void);

/* Threads the kernels' parallel loops use (OpenMP); n <= 0 restores the
 * default (OMP_NUM_THREADS, else the number of cores). */
void recur_set_num_threads(int n);
int recur_get_num_threads(void);

/*===-------------------------------------------------------------------===*
 * Layer descriptors (written by recurc into <layer>.h)
 *===-------------------------------------------------------------------===*/

typedef enum recur_role {
  RECUR_ROLE_INPUT = 0,
  RECUR_ROLE_PARAM = 1,
  RECUR_ROLE_STATE = 2,     /* a kernel argument: the state before the call */
  RECUR_ROLE_OUTPUT = 3,
  RECUR_ROLE_NEXT_STATE = 4 /* a kernel result: the state after the call */
} recur_role;

/* How a state starts and resets. */
typedef enum recur_init_kind {
  RECUR_INIT_NONE = 0, /* inputs, params, outputs */
  RECUR_INIT_ZEROS = 1,
  RECUR_INIT_ONES = 2,
  RECUR_INIT_CONST = 3, /* init_value */
  RECUR_INIT_PARAM = 4, /* a copy of param init_param, per batch row */
  RECUR_INIT_OTHER = 5  /* random inits (normal...): not reproducible */
} recur_init_kind;

/* One argument or result of a layer's kernel. */
typedef struct recur_arg_desc {
  const char *name;
  recur_role role;
  int32_t index; /* position among the layer's tensors of this role; for a
                    next_state, the index of its state */
  recur_dtype dtype;
  int32_t rank;
  /* A static size, or -1 - k for the layer's runtime dimension k. */
  int64_t shape[RECUR_MAX_RANK];
  /* The dimension names as the spec writes them (for messages). */
  const char *dim_names[RECUR_MAX_RANK];
  recur_init_kind init;
  double init_value;  /* RECUR_INIT_CONST */
  int32_t init_param; /* RECUR_INIT_PARAM: index among the params */
  /* The init rule of a param or state as the spec spells it:
   * "normal(0.02)", "truncnormal(0.014)", "uniform(-1, 1)", "const(0.5)",
   * "ones", "zeros" (also for one the spec gives no rule), or "param(c0)"
   * for a state that starts from a param; "" for inputs and results. The
   * runtime reads `init` only; training programs initialize params from
   * this. (ABI version 3.) */
  const char *init_rule;
} recur_arg_desc;

/* The kernel entry recurc generates: `in` holds, for each argument in
 * order, a memref descriptor flattened to 64-bit words: allocated pointer,
 * aligned pointer, offset, sizes[rank], strides[rank] (3 + 2 * rank words).
 * The kernel writes each result's descriptor to `out` the same way (the
 * next states only, when the layer has output_destinations); result
 * buffers come from the runtime's allocator (see recur_memory_stats). */
typedef void (*recur_kernel_fn)(int64_t *in, int64_t *out);

/* The workspace bound recurc generates beside the kernel: given the same
 * `in` words as the kernel (only the sizes are read) and a thread count, an
 * upper bound on the bytes the kernel's buffers hold at once. */
typedef int64_t (*recur_workspace_fn)(int64_t *in, int64_t threads);

/* Where a layer's kernel runs. (ABI version 4.) */
typedef enum recur_device {
  RECUR_DEVICE_CPU = 0,
  /* recurc --target=cuda: the kernel takes and returns device buffers;
   * recur_forward and recur_step copy the tensors to the device and back. */
  RECUR_DEVICE_CUDA = 1
} recur_device;

typedef struct recur_layer_desc {
  uint32_t abi_version; /* RECUR_ABI_VERSION */
  const char *name;
  uint64_t id; /* a hash of the layer's signature; saved states carry it */
  int32_t num_runtime_dims;
  const char *const *runtime_dim_names;
  int32_t batch_dim; /* the runtime dim states are per row of, or -1 */
  int32_t time_dim;  /* the runtime dim `step` advances along, or -1 */
  int64_t step_length; /* positions per step (1, or a block size) */
  int32_t num_inputs, num_params, num_states, num_outputs;
  int32_t num_args; /* kernel arguments: inputs, params, states */
  const recur_arg_desc *args;
  int32_t num_results; /* kernel results: outputs and next states */
  const recur_arg_desc *results;
  recur_kernel_fn kernel;
  recur_workspace_fn workspace; /* NULL: recur_workspace_size is unsupported */
  /* The backward kernel (`in`: the kernel's arguments, then one cotangent
   * per kernel result; `out`: one gradient per kernel argument), or NULL
   * when the layer has none. */
  recur_kernel_fn backward;
  recur_device device; /* where `kernel` runs */
  /* Per runtime dim, the fewest positions a call may have (a slice of the
   * last W positions needs W), or NULL when any size will do: a call with
   * fewer fails with RECUR_ERROR_SHAPE. */
  const int64_t *runtime_dim_min;
  /* Nonzero (recurc --target=cpu, since ABI version 6): the forward
   * kernel's `in` ends, after the arguments, with one memref per output in
   * result order, the buffer the kernel writes that output into; its `out`
   * then holds only the next states. recur_forward and recur_step pass the
   * caller's output tensor
   * when it is row-major and shares no memory with an argument or another
   * output (else a buffer of their own, copied out after the kernel); so
   * the output tensor may hold partial results when a call fails after the
   * kernel ran (an allocation for a next state). Likewise the backward
   * kernel's `in` ends, after the cotangents, with one memref per kernel
   * argument receiving its gradient, and its `out` is empty. */
  int32_t output_destinations;
} recur_layer_desc;

/*===-------------------------------------------------------------------===*
 * State: what a layer carries from one call to the next
 *===-------------------------------------------------------------------===*/

typedef struct recur_state recur_state;

/* A state for `batch` rows, set to the layer's init rules. `params` (the
 * layer's params in order) is needed only when a state's init names a
 * param, and may be NULL otherwise. */
recur_status recur_state_create(const recur_layer_desc *layer, int64_t batch,
                                const recur_tensor *params,
                                recur_state **out);
void recur_state_destroy(recur_state *state);

/* Resets batch row `row` (all rows when row < 0) to the init rules. */
recur_status recur_state_reset(recur_state *state, int64_t row,
                               const recur_tensor *params);

/* A view of state tensor `index` (owned by the state, valid until the next
 * call that takes the state). */
recur_status recur_state_view(const recur_state *state, int32_t index,
                              recur_tensor *view);
int64_t recur_state_batch(const recur_state *state);

/* Serialization: a self-describing byte string (layer id, batch, shapes,
 * data). recur_state_load refuses one from another layer or batch size. */
recur_status recur_state_save_size(const recur_state *state, size_t *bytes);
recur_status recur_state_save(const recur_state *state, void *buffer,
                              size_t bytes);
recur_status recur_state_load(recur_state *state, const void *buffer,
                              size_t bytes);

/*===-------------------------------------------------------------------===*
 * Running a layer
 *===-------------------------------------------------------------------===*/

/* Runs the layer on a whole sequence. `inputs`, `params` and `outputs` are
 * arrays in the order of the layer's declarations (the typed structs of
 * <layer>.h). With a `state`, the run starts from it and leaves the final
 * state in it; with NULL, it starts from the init rules and the final state
 * is dropped. Outputs are written through their strides. */
recur_status recur_forward(const recur_layer_desc *layer,
                           const recur_tensor *inputs,
                           const recur_tensor *params, recur_state *state,
                           const recur_tensor *outputs);

/* recur_forward on one step (`step_length` positions of the time dim) for
 * decoding; the state is required. */
recur_status recur_step(const recur_layer_desc *layer,
                        const recur_tensor *inputs,
                        const recur_tensor *params, recur_state *state,
                        const recur_tensor *outputs);

/* The gradients of a whole-sequence recur_forward call, by the backward
 * kernel recurc derived from the layer (it recomputes the forward). `state`
 * is the state the forward started from (NULL: the init rules); it is read,
 * not changed. `d_outputs` holds the cotangent of each output (dL/dy);
 * `d_states` that of each final state, or is NULL (a tensor with NULL data:
 * zero). The call writes dL/d(input), dL/d(param) and dL/d(initial state)
 * into `grad_inputs`, `grad_params` and `grad_states` (arrays in declaration
 * order shaped like the tensors they differentiate, the states with their
 * batch rows; a NULL array or a tensor with NULL data is not wanted).
 * Complex gradients are dL/dx + i dL/dy. RECUR_ERROR_UNSUPPORTED when the
 * layer has no backward kernel. */
recur_status recur_backward(const recur_layer_desc *layer,
                            const recur_tensor *inputs,
                            const recur_tensor *params,
                            const recur_state *state,
                            const recur_tensor *d_outputs,
                            const recur_tensor *d_states,
                            const recur_tensor *grad_inputs,
                            const recur_tensor *grad_params,
                            const recur_tensor *grad_states);

/* An upper bound on the bytes one recur_forward or recur_step call
 * allocates (the kernel's buffers, its results among them, and the
 * runtime's copies of states) with the layer's runtime dimensions set to
 * `dims` (num_runtime_dims values, in the order of runtime_dim_names; for
 * a step, the time dimension is step_length) at the current thread count
 * (recur_get_num_threads). Not included: a contiguous copy of each input or
 * param passed with strides that are not row-major. recur_memory_stats
 * reports what calls actually used. */
recur_status recur_workspace_size(const recur_layer_desc *layer,
                                  const int64_t *dims, size_t *bytes);

/*===-------------------------------------------------------------------===*
 * CUDA devices
 *
 * The runtime opens the CUDA driver (libcuda.so.1, or the library the
 * environment variable RECUR_CUDA_DRIVER names) with dlopen at the first
 * call of this section, initializes it and retains the primary context of
 * device 0 (or of RECUR_CUDA_DEVICE=N), which every call then makes current
 * on its thread. Without the driver, or when it finds no device, every call
 * fails with RECUR_ERROR_NO_DEVICE and a message starting "no CUDA device"
 * that says why; a failing driver call gives RECUR_ERROR_DEVICE (or
 * RECUR_ERROR_OUT_OF_MEMORY) with the driver's error name and text
 * ("recur_cuda_malloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) ...").
 *
 * Device pointers are the driver's (CUdeviceptr), and the handles below are
 * the driver's own (CUstream, CUmodule, CUfunction), so they can be passed
 * to code that calls the driver directly.
 *
 * Streams: a NULL stream is the default stream, and a copy or memset on it
 * returns when it is done. On a stream it is queued and the caller waits
 * with recur_cuda_stream_synchronize (the host memory of a copy must stay
 * valid until then).
 *===-------------------------------------------------------------------===*/

typedef struct recur_cuda_stream recur_cuda_stream;     /* a CUstream */
typedef struct recur_cuda_module recur_cuda_module;     /* a CUmodule */
typedef struct recur_cuda_function recur_cuda_function; /* a CUfunction */

/* Loads and initializes the driver and the device. Every other call does
 * this itself; the outcome is kept, so a later call returns the same
 * failure (with its message) without trying again. */
recur_status recur_cuda_init(void);

/* The number of devices the driver sees; 0 when the call fails. */
recur_status recur_cuda_device_count(int32_t *count);

/* The ordinal of the device the runtime runs on. */
recur_status recur_cuda_get_device(int32_t *ordinal);

typedef struct recur_cuda_device_info {
  int32_t ordinal;
  char name[256];
  int32_t cc_major, cc_minor; /* compute capability */
  int32_t multiprocessors;
  uint64_t total_bytes;   /* device memory */
  int32_t driver_version; /* the CUDA version of the driver: 1000 * major +
                             10 * minor */
} recur_cuda_device_info;

/* What device `ordinal` (0 .. count - 1) is. */
recur_status recur_cuda_device_info_get(int32_t ordinal,
                                        recur_cuda_device_info *info);

/* Device memory. recur_cuda_malloc of 0 bytes gives NULL; recur_cuda_free
 * takes NULL or a live buffer of recur_cuda_malloc (or of the generated
 * code's mgpuMemAlloc) and refuses any other pointer. */
recur_status recur_cuda_malloc(size_t bytes, void **device_ptr);
recur_status recur_cuda_free(void *device_ptr);

/* Copies `bytes` bytes host to device, device to host, device to device,
 * and sets `bytes` bytes to the byte `value` (on `stream`, or NULL). */
recur_status recur_cuda_memcpy_htod(void *dst, const void *src, size_t bytes,
                                    recur_cuda_stream *stream);
recur_status recur_cuda_memcpy_dtoh(void *dst, const void *src, size_t bytes,
                                    recur_cuda_stream *stream);
recur_status recur_cuda_memcpy_dtod(void *dst, const void *src, size_t bytes,
                                    recur_cuda_stream *stream);
recur_status recur_cuda_memset(void *dst, int value, size_t bytes,
                               recur_cuda_stream *stream);

/* The device buffers of recur_cuda_malloc and mgpuMemAlloc, counted apart
 * from the host's (recur_memory_stats_get); NULL is ignored. */
void recur_cuda_memory_stats_get(recur_memory_stats *stats);
void recur_cuda_memory_stats_reset_peak(void);

/* Freed device buffers of 1 MiB and more are kept for reuse by later
 * allocations of close to their size, up to RECUR_CUDA_ALLOC_CACHE_MB
 * megabytes (default 4096; 0: none); they are not live bytes in the stats.
 * The streams compiled kernels' host code releases after each launch are
 * kept for their next launches too (up to 8). This gives both back to the
 * driver, and fails with the driver's error if a stream's destruction does
 * (an allocation the driver refuses gives back the buffers before it
 * fails). */
recur_status recur_cuda_empty_cache(void);

/* Streams. A stream of recur_cuda_stream_create synchronizes with the
 * default stream as the driver's blocking streams do. Destroying NULL does
 * nothing; synchronizing NULL waits for the default stream. */
recur_status recur_cuda_stream_create(recur_cuda_stream **stream);
recur_status recur_cuda_stream_destroy(recur_cuda_stream *stream);
recur_status recur_cuda_stream_synchronize(recur_cuda_stream *stream);
/* Waits for all work on the device. */
recur_status recur_cuda_synchronize(void);

/* Modules. `image` is PTX text (NUL-terminated; the driver compiles it for
 * the device) or a cubin or fatbin; a PTX error comes with the driver's
 * log in the message. Unloading NULL does nothing. */
recur_status recur_cuda_module_load(const void *image,
                                    recur_cuda_module **module);
recur_status recur_cuda_module_unload(recur_cuda_module *module);
/* The kernel `name` of `module` (RECUR_ERROR_INVALID_ARGUMENT naming it
 * when there is none); valid until the module is unloaded. */
recur_status recur_cuda_module_function(recur_cuda_module *module,
                                        const char *name,
                                        recur_cuda_function **function);

/* Launches `function` on grid[0] x grid[1] x grid[2] blocks of block[0] x
 * block[1] x block[2] threads with `shared_bytes` of dynamic shared memory,
 * on `stream` (NULL: the default stream). `args` holds a pointer to each
 * kernel parameter, in order (NULL for a kernel without parameters). The
 * call returns once the kernel is queued. */
recur_status recur_cuda_launch(recur_cuda_function *function,
                               const uint32_t grid[3], const uint32_t block[3],
                               uint32_t shared_bytes, recur_cuda_stream *stream,
                               void **args);

/* The host code the compiler generates calls MLIR's GPU runtime functions
 * (mgpuModuleLoad, mgpuLaunchKernel, mgpuMemAlloc, ...), which librecur_rt
 * defines on the same driver. They return no status: their first failure on
 * a thread is kept, later work there (module loads, kernel lookups,
 * allocations, copies, memsets, launches) is skipped, and this call returns
 * that failure (its message in recur_last_error) and clears it; RECUR_OK
 * when there was none. */
recur_status recur_cuda_take_error(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* RECUR_RUNTIME_RECUR_RT_H */
