#include "probes/capture_replay/capture_invalidation.hpp"

namespace moe {

bool is_capture_invalidation(cudaError_t status) {
  switch (status) {
    case cudaErrorStreamCaptureUnsupported:  // the synchronising call itself
    case cudaErrorStreamCaptureInvalidated:  // the calls after it, and the capture's end
    case cudaErrorStreamCaptureImplicit:     // the legacy stream touched (cudaMemcpy, say)
    case cudaErrorStreamCaptureUnjoined:
    case cudaErrorStreamCaptureIsolation:
    case cudaErrorCapturedEvent:
      return true;
    default:
      return false;
  }
}

}  // namespace moe
