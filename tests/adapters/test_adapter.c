/* Engine adapters for the loader's tests (tests/cpu/test_engine_abi.cpp): this one source, built
 * once a variant (one ADAPTER_* macro each, tests/adapters/CMakeLists.txt), gives a well-formed
 * adapter and one adapter for each rule of the ABI it breaks. Plain C99 built with -pedantic
 * -Werror, so the header is checked as C too. No variant touches a device: create, forward and
 * destroy only keep book. */
#include <stdio.h>
#include <stdlib.h>

#include "moebench/engine_abi.h"

struct moebench_engine {
  int32_t layers;
};

static moebench_status say(moebench_error* error, moebench_status status, const char* message) {
  if (error && error->struct_size >= sizeof(moebench_error))
    snprintf(error->message, sizeof error->message, "%s", message);
  return status;
}

static moebench_status create(const moebench_engine_desc* desc, moebench_engine** engine, moebench_error* error) {
#ifdef ADAPTER_CREATE_FAILS
  (void)desc;
  (void)engine;
  return say(error, MOEBENCH_ERROR_UNSUPPORTED, "this engine builds no layer of 3 experts");
#else
  moebench_engine* e;
  if (!desc || desc->struct_size < sizeof(moebench_engine_desc))
    return say(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "engine description too small");
  e = (moebench_engine*)malloc(sizeof *e);
  if (!e) return say(error, MOEBENCH_ERROR_OUT_OF_MEMORY, "host memory");
  e->layers = desc->layers;
  *engine = e;
  return MOEBENCH_OK;
#endif
}

#ifdef ADAPTER_NEEDS_MISSING_LIBRARY
int moebench_test_dependency(void); /* tests/adapters/missing_dependency.c */
#endif

#ifndef ADAPTER_NULL_FORWARD
static moebench_status forward(moebench_engine* engine, const moebench_forward_args* args, moebench_error* error) {
#ifdef ADAPTER_NEEDS_MISSING_LIBRARY
  (void)moebench_test_dependency();
#endif
  (void)engine;
  (void)args;
  (void)error;
  return MOEBENCH_OK;
}
#endif

static moebench_status destroy(moebench_engine* engine, moebench_error* error) {
  (void)error;
  free(engine);
  return MOEBENCH_OK;
}

static moebench_status check_layer(const moebench_layer_desc* layer, moebench_error* error) {
#ifdef ADAPTER_CHECK_LAYER_REFUSES
  (void)layer;
  return say(error, MOEBENCH_ERROR_UNSUPPORTED, "shared experts are not implemented");
#else
  if (!layer || layer->struct_size < sizeof(moebench_layer_desc))
    return say(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "layer description too small");
  return MOEBENCH_OK;
#endif
}

static moebench_status read_route_counts(moebench_engine* engine, moebench_route_counts* counts,
                                         moebench_stream stream, moebench_error* error) {
  (void)engine;
  (void)counts;
  (void)stream;
  return say(error, MOEBENCH_ERROR_UNSUPPORTED, "no route counts");
}

#ifdef ADAPTER_TABLE_SIZE
#define TABLE_SIZE (sizeof(moebench_adapter) - 8) /* built with another header, say */
#else
#define TABLE_SIZE sizeof(moebench_adapter)
#endif
#ifdef ADAPTER_OTHER_MAJOR
#define TABLE_MAJOR (MOEBENCH_ENGINE_ABI_MAJOR + 1)
#else
#define TABLE_MAJOR MOEBENCH_ENGINE_ABI_MAJOR
#endif
#ifdef ADAPTER_NULL_FORWARD
#define TABLE_FORWARD NULL
#else
#define TABLE_FORWARD forward
#endif
#ifdef ADAPTER_CAPABILITY_WITHOUT_FUNCTION
/* Declares route counts, gives read_route_counts but leaves reset_route_counts null. */
#define TABLE_CAPABILITIES MOEBENCH_CAP_ROUTE_COUNTS
#else
#define TABLE_CAPABILITIES 0
#endif
#ifdef ADAPTER_NO_FORMAT
#define TABLE_FORMATS 0u
#else
#define TABLE_FORMATS (1u << MOEBENCH_WEIGHTS_BF16)
#endif

static const moebench_adapter table = {
    TABLE_SIZE, TABLE_MAJOR, MOEBENCH_ENGINE_ABI_MINOR, "test-adapter", "1.2.3", TABLE_CAPABILITIES, TABLE_FORMATS,
    create, TABLE_FORWARD, destroy, check_layer, read_route_counts, NULL, NULL};

#ifdef ADAPTER_NO_ENTRY
/* Exports something, but not the entry point. */
MOEBENCH_ENGINE_ABI_EXPORT moebench_status moebench_engine_abi_v0(uint32_t major, uint32_t minor,
                                                                  const moebench_adapter** adapter,
                                                                  moebench_error* error);
MOEBENCH_ENGINE_ABI_EXPORT moebench_status moebench_engine_abi_v0(uint32_t major, uint32_t minor,
                                                                  const moebench_adapter** adapter,
                                                                  moebench_error* error) {
#else
MOEBENCH_ENGINE_ABI_EXPORT moebench_status moebench_engine_abi(uint32_t major, uint32_t minor,
                                                               const moebench_adapter** adapter,
                                                               moebench_error* error);
MOEBENCH_ENGINE_ABI_EXPORT moebench_status moebench_engine_abi(uint32_t major, uint32_t minor,
                                                               const moebench_adapter** adapter,
                                                               moebench_error* error) {
#endif
  (void)major;
  (void)minor;
#ifdef ADAPTER_ENTRY_REFUSES
  (void)adapter;
  (void)&table;
  return say(error, MOEBENCH_ERROR_UNSUPPORTED, "this adapter needs engine ABI 1.7 or newer");
#else
  (void)error;
  *adapter = &table;
  return MOEBENCH_OK;
#endif
}
