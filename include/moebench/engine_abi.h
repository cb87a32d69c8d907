/* The moebench engine ABI: how moebench drives an MoE engine it did not build.
 *
 * An engine developer writes an adapter, a shared library that exports one function,
 * moebench_engine_abi (MOEBENCH_ENGINE_ABI_ENTRY). moebench loads it (`--engine PATH`), asks it
 * for its table of functions and, through them, builds engines of L MoE layers over weights that
 * moebench generated and owns on the device, runs them on a CUDA stream, and destroys them,
 * while its probes check the outputs against their CPU reference. docs/engine-abi.md shows a
 * whole adapter.
 *
 * Plain C: it compiles as C99 and as C++, and needs no CUDA header (a stream is a cudaStream_t,
 * declared below as the driver's type it is).
 *
 * Versions. MOEBENCH_ENGINE_ABI_MAJOR changes when a struct, a function's signature or a
 * meaning changes: moebench refuses an adapter of another major. A minor version only appends
 * fields at the end of structs, functions at the end of the table or new capability bits: every
 * struct therefore starts with its size (struct_size, in bytes, set by whoever fills it), and a
 * reader reads only the fields that size covers (MOEBENCH_ABI_HAS_FIELD). Arrays of structs
 * are passed as arrays of pointers, so a struct that grows never shifts the others.
 *
 * Status. Every function returns MOEBENCH_OK or one of the MOEBENCH_ERROR_* codes and, when it
 * fails, writes one line saying why into the moebench_error it was given. moebench then reports
 * the failure naming the function and that line. No function may abort the process. */
#ifndef MOEBENCH_ENGINE_ABI_H
#define MOEBENCH_ENGINE_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOEBENCH_ENGINE_ABI_MAJOR 1
#define MOEBENCH_ENGINE_ABI_MINOR 1

/* The one symbol an adapter exports (see moebench_engine_abi_entry below). */
#define MOEBENCH_ENGINE_ABI_ENTRY "moebench_engine_abi"

#if defined(_WIN32)
#define MOEBENCH_ENGINE_ABI_EXPORT __declspec(dllexport)
#else
#define MOEBENCH_ENGINE_ABI_EXPORT __attribute__((visibility("default")))
#endif

/* Whether a struct moebench passed (ptr, of the given type) is large enough to hold `field`:
 * an adapter built against a newer minor checks this before reading a field that minor added. */
#define MOEBENCH_ABI_HAS_FIELD(ptr, type, field) \
  ((ptr)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

/* A CUDA stream: cudaStream_t is this very type (struct CUstream_st*). */
struct CUstream_st;
typedef struct CUstream_st* moebench_stream;

typedef int32_t moebench_status;
#define MOEBENCH_OK 0
#define MOEBENCH_ERROR_INVALID_ARGUMENT 1 /* a value moebench passed is out of its range */
#define MOEBENCH_ERROR_UNSUPPORTED 2      /* a layer or feature this adapter does not implement */
#define MOEBENCH_ERROR_OUT_OF_MEMORY 3    /* device or host memory ran out */
#define MOEBENCH_ERROR_CUDA 4             /* a CUDA call failed (the message names it) */
#define MOEBENCH_ERROR_INTERNAL 5         /* anything else */

/* Why a call failed: one line, NUL-terminated, truncated to fit. moebench sets struct_size and
 * an empty message before every call; an adapter writes it only when it returns an error. */
#define MOEBENCH_ERROR_MESSAGE_BYTES 512
typedef struct moebench_error {
  uint32_t struct_size;
  char message[MOEBENCH_ERROR_MESSAGE_BYTES];
} moebench_error;

/* ---- The layer ------------------------------------------------------------------------- */

/* Weight formats (moebench_layer_desc.weight_format). */
#define MOEBENCH_WEIGHTS_BF16 0
/* int4 group-quantised along K, group 128: a [rows, K] matrix is uint32 codes [rows, K / 8]
 * (element k in word k / 8, bits 4 * (k % 8) .. + 3, the nibble q + 8 with q in -8..7) and bf16
 * scales [rows, ceil(K / 128)] (the last group partial); W[r][k] = q * scale[r][k / 128]. */
#define MOEBENCH_WEIGHTS_INT4 1

/* How the router's scores come from its logits (moebench_layer_desc.scoring). */
#define MOEBENCH_SCORING_SOFTMAX 0
#define MOEBENCH_SCORING_SIGMOID 1

/* How a token's experts are chosen (moebench_layer_desc.topk_method). */
#define MOEBENCH_TOPK_GREEDY 0               /* top-k of the scores */
#define MOEBENCH_TOPK_GROUP_LIMITED_GREEDY 1 /* DeepSeek-V2: best topk_group groups by best score */
#define MOEBENCH_TOPK_NOAUX_TC 2             /* DeepSeek-V3: + selection_bias, groups by top-2 sum */

/* One MoE layer's dimensions and routing, as moebench's shapes give them (fixtures/shapes,
 * or a model's config.json). For each token x [H]:
 *   logits = x . router[e] (+ router_bias[e]) for e < E, in fp32;
 *   scores = softmax over the E logits, or sigmoid of each;
 *   ids    = top_k experts by score (+ selection_bias under noaux_tc; groups first under the
 *            grouped methods), ties to the lower index;
 *   w      = the unbiased scores of ids, divided by their sum when renormalize, times
 *            routed_scaling;
 *   expert e: h = silu(x . gate_up[e][j]) * (x . gate_up[e][I + j]) for j < I, rounded to bf16;
 *             y = h . down[e][n] for n < H;
 *   out    = sum over the k routed slots of w * y (or, with scale_input, the expert run on
 *            x * w and its y added unweighted) + every shared expert's y (times
 *            sigmoid(x . router[E]) with shared_gate), rounded to bf16.
 * moebench checks an output against its CPU reference of exactly this to a relative L2 error
 * of 2e-2 (bf16 accumulation order is free). */
typedef struct moebench_layer_desc {
  uint32_t struct_size;
  int32_t hidden;          /* H */
  int32_t intermediate;    /* I, of every expert, routed and shared */
  int32_t experts;         /* E routed experts */
  int32_t shared_experts;  /* S shared experts: every token, after the routed ones */
  int32_t top_k;
  int32_t scoring;         /* MOEBENCH_SCORING_* */
  int32_t renormalize;     /* 1: the top-k weights divided by their sum; 0: not */
  int32_t topk_method;     /* MOEBENCH_TOPK_* */
  int32_t n_group;         /* grouped methods: the experts in n_group groups of E / n_group */
  int32_t topk_group;      /* grouped methods: the groups kept */
  float routed_scaling;    /* 1 for most models */
  int32_t shared_gate;     /* 1: shared experts weighted by sigmoid(x . router row E) */
  int32_t scale_input;     /* 1: a routed expert's input is x * w, its output unweighted */
  int32_t weight_format;   /* MOEBENCH_WEIGHTS_* */
} moebench_layer_desc;

/* One layer's weights: device memory that moebench allocated, generated and owns. It stays
 * valid until the engine built on it is destroyed and the work enqueued before has finished.
 * Every tensor is row-major, bf16 (or int4 as above). The pointer arrays themselves are host
 * memory valid only during the call that receives them: copy what you keep. */
typedef struct moebench_layer_weights {
  uint32_t struct_size;
  const void* router;          /* bf16 [E, H], plus row E (the shared gate) with shared_gate */
  const float* router_bias;    /* fp32 [E] added to the logits, or NULL */
  const float* selection_bias; /* fp32 [E], noaux_tc's bias on the choice only, else NULL */
  int32_t total_experts;       /* E + S: the length of each array below; shared experts last */
  const void* const* gate_up;  /* [2I, H]: rows 0..I-1 gate, I..2I-1 up */
  const void* const* gate_up_scales; /* int4: [2I, ceil(H / 128)] bf16; NULL for bf16 */
  const void* const* down;     /* [H, I] */
  const void* const* down_scales;    /* int4: [H, ceil(I / 128)] bf16; NULL for bf16 */
} moebench_layer_weights;

/* ---- The engine ------------------------------------------------------------------------ */

/* An engine of `layers` layers of one shape. The adapter's own type: moebench only holds the
 * pointer. */
typedef struct moebench_engine moebench_engine;

/* Device memory moebench lends an engine (minor 1; moebench_engine_desc.allocator). An adapter
 * that declares MOEBENCH_CAP_DEVICE_ALLOCATOR takes every device buffer its engine holds from it
 * when it is given, so moebench sees which blocks an engine gave back and who received them next
 * (probe drop-after-inflight). The table and its context stay valid until destroy returns.
 * allocate returns MOEBENCH_ERROR_OUT_OF_MEMORY when the device is full. release hands a block
 * back at once: the engine must have waited for every piece of work that uses it. */
typedef struct moebench_device_allocator {
  uint32_t struct_size;
  void* context;
  moebench_status (*allocate)(void* context, size_t bytes, void** block, moebench_error* error);
  void (*release)(void* context, void* block);
} moebench_device_allocator;

typedef struct moebench_engine_desc {
  uint32_t struct_size;
  int32_t device;                               /* the CUDA device, current in every call */
  int32_t layers;                               /* L */
  int32_t max_tokens;                           /* the largest M forward will be given */
  const moebench_layer_desc* layer;             /* every layer's shape */
  const moebench_layer_weights* const* weights; /* [L]: layer l's weights */
  moebench_stream stream;                       /* where create may enqueue (uploads) */
  /* Minor 1 (read it only where MOEBENCH_ABI_HAS_FIELD says it is there): the device memory
   * moebench lends, given to an adapter that declares MOEBENCH_CAP_DEVICE_ALLOCATOR; NULL: the
   * engine allocates its own. */
  const moebench_device_allocator* allocator;
} moebench_engine_desc;

/* One step: every layer over the same input, layer l writing outputs[l] (moebench checks each
 * layer against its reference on its own). Enqueued on `stream`: forward returns without
 * waiting for the GPU, and neither input nor outputs may be touched after it returns except
 * by work on that stream. moebench never runs two steps of one engine at once (on two streams
 * without an order between them), and every stream it passes stays valid until destroy. */
typedef struct moebench_forward_args {
  uint32_t struct_size;
  int32_t tokens;        /* M, 1..max_tokens */
  const void* input;     /* bf16 [M, H], device */
  void* const* outputs;  /* [L] device pointers, bf16 [M, H]; host array valid during the call */
  moebench_stream stream;
} moebench_forward_args;

/* ---- Optional capabilities ------------------------------------------------------------- */

/* forward is enqueue-only once the engine has run one eager forward at a given M: no host
 * synchronisation, allocation or readback, so moebench may capture it into a CUDA graph and
 * replay it with new inputs. */
#define MOEBENCH_CAP_CAPTURE_SAFE_FORWARD (UINT64_C(1) << 0)
/* read_route_counts and reset_route_counts are given: the experts the engine routed to. */
#define MOEBENCH_CAP_ROUTE_COUNTS (UINT64_C(1) << 1)
/* set_residency is given: routed experts moved between device and host memory. */
#define MOEBENCH_CAP_RESIDENCY (UINT64_C(1) << 2)
/* Minor 1. The engine takes its device memory from the allocator moebench lends it
 * (moebench_engine_desc.allocator) whenever one is given. */
#define MOEBENCH_CAP_DEVICE_ALLOCATOR (UINT64_C(1) << 3)

/* A layer's routing since the engine was built or last reset: moebench fills struct_size,
 * layer, experts and counts; the adapter fills the rest. */
#define MOEBENCH_ROUTE_OVERFLOW 1u /* a count saturated */
#define MOEBENCH_ROUTE_POISONED 2u /* an expert id out of range was seen: counts are unusable */
typedef struct moebench_route_counts {
  uint32_t struct_size;
  int32_t layer;
  int32_t experts;   /* E: the length of counts */
  uint64_t* counts;  /* host [E]: (token, slot) pairs routed to each expert */
  uint64_t window;   /* the adapter's window number: changes only at reset_route_counts */
  uint32_t flags;    /* MOEBENCH_ROUTE_* */
} moebench_route_counts;

/* ---- The table ------------------------------------------------------------------------- */

typedef struct moebench_adapter {
  uint32_t struct_size;  /* sizeof(moebench_adapter) in the adapter's header */
  uint32_t abi_major;    /* MOEBENCH_ENGINE_ABI_MAJOR the adapter was built with */
  uint32_t abi_minor;
  const char* name;      /* the engine, e.g. "my-engine" (printable, no spaces) */
  const char* version;   /* the adapter's own version, e.g. "0.3.1" */
  uint64_t capabilities; /* MOEBENCH_CAP_* it implements; unknown bits are ignored */
  uint32_t weight_formats; /* (1u << MOEBENCH_WEIGHTS_*) for each format it takes */

  /* Required. create builds an engine (the device's memory it needs, its resident state) and
   * sets *engine. forward enqueues one step. destroy frees the engine, whatever it returns; it
   * may be called with forwards still running on their stream, and must then keep every buffer
   * they use until they finish (a drain, or a stream-ordered free), never hand it back early. */
  moebench_status (*create)(const moebench_engine_desc* desc, moebench_engine** engine,
                            moebench_error* error);
  moebench_status (*forward)(moebench_engine* engine, const moebench_forward_args* args,
                             moebench_error* error);
  moebench_status (*destroy)(moebench_engine* engine, moebench_error* error);

  /* Optional (NULL: create decides). Whether create would take a layer like this, answered
   * without touching the device: moebench asks before any probe runs, so a layer the adapter
   * does not implement is one line (MOEBENCH_ERROR_UNSUPPORTED and why), not a failed run. */
  moebench_status (*check_layer)(const moebench_layer_desc* layer, moebench_error* error);

  /* MOEBENCH_CAP_ROUTE_COUNTS. read_route_counts copies layer counts->layer's routing (it may
   * wait for `stream`); reset_route_counts starts a new window for every layer, ordered on
   * `stream`, and must refuse while the stream is being captured. */
  moebench_status (*read_route_counts)(moebench_engine* engine, moebench_route_counts* counts,
                                       moebench_stream stream, moebench_error* error);
  moebench_status (*reset_route_counts)(moebench_engine* engine, moebench_stream stream,
                                        moebench_error* error);

  /* MOEBENCH_CAP_RESIDENCY. Moves layer `layer`'s routed experts: on_device[e] 1 keeps expert e
   * in device memory, 0 moves it to host memory; all or nothing (on failure nothing moved).
   * moebench calls it only between steps, never under a live graph. */
  moebench_status (*set_residency)(moebench_engine* engine, int32_t layer, const uint8_t* on_device,
                                   moebench_stream stream, moebench_error* error);
} moebench_adapter;

/* The entry point. moebench calls it once after loading the library, with the ABI version it
 * speaks; the adapter sets *adapter to its table (static storage: it must stay valid while the
 * library is loaded) and returns MOEBENCH_OK, or returns MOEBENCH_ERROR_UNSUPPORTED with why when
 * it cannot serve that version. It must not touch the device. */
typedef moebench_status (*moebench_engine_abi_entry)(uint32_t abi_major, uint32_t abi_minor,
                                                     const moebench_adapter** adapter,
                                                     moebench_error* error);

#ifdef __cplusplus
}
#endif

#endif /* MOEBENCH_ENGINE_ABI_H */
