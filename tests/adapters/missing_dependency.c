/* A library that a test adapter links against and that is then not found at run time (it is
 * built where no run path points): loading that adapter is an environment fault. */
#include "moebench/engine_abi.h"

MOEBENCH_ENGINE_ABI_EXPORT int moebench_test_dependency(void);
MOEBENCH_ENGINE_ABI_EXPORT int moebench_test_dependency(void) { return 1; }
