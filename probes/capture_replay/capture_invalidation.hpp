#pragma once
// What CUDA answers when something synchronising runs inside a stream capture, past the
// engine's own drain (which refuses first): a raw cudaStreamSynchronize, a cudaMemcpy, an event
// wait on the legacy stream. The call fails and the capture is invalidated, so
// cudaStreamEndCapture fails too; none of these errors is sticky, so the context stays usable.
// Probe capture-replay records them as a FAIL of no_sync_inside_capture, not as an ERROR.
#include <cuda_runtime_api.h>

namespace moe {

// Whether `status` is the failure of a call that is illegal inside a capture, or the
// invalidated capture's own end.
bool is_capture_invalidation(cudaError_t status);

}  // namespace moe
