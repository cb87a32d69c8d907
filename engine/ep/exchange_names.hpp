#pragma once
// The expert-parallel exchanges by name, known without NCCL: the CLI validates --exchange and
// `moebench list` describes the axis with these, in any build.
//   alltoall  one ncclAlltoAll (NCCL 2.28+ at run time)
//   sendrecv  grouped ncclSend / ncclRecv (any NCCL)
//   lsa       the kernels write each block into its peer's symmetric window (NCCL's device
//             API, built only against 2.28+ headers); only when asked for (--exchange lsa)
#include <string>
#include <string_view>
#include <vector>

namespace moe::ep {

// Every exchange name, in the order ep-step runs them.
std::vector<std::string_view> exchange_names();
// The exchanges ep-step runs when --exchange is not given (alltoall only where it loads).
std::vector<std::string_view> default_exchange_names();

// Whether this build has the lsa exchange, and why not (empty when it has).
bool lsa_exchange_built();
std::string_view lsa_exchange_not_built_reason();

// --exchange as given: each a known name, none twice. UsageError naming the bad one; an
// EnvironmentError (exit 3) for lsa in a build without it, with the reason.
void validate_exchange_names(const std::vector<std::string>& names);

// One line for `moebench list`: the default exchanges and what lsa needs.
std::string describe_exchange_axis();

}  // namespace moe::ep
