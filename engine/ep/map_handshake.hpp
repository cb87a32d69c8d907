#pragma once
// The expert-map handshake when a sharded layer is built: every rank sends its map's
// description and fingerprint through the rendezvous and every rank compares all of them with
// rank 0's. Ranks that disagree would each compute a different set of experts for the same rows
// and return wrong tokens without any error, so the build is refused on every rank at once
// (each gets the whole table), with a message naming the ranks and their maps: never a hang.
#include "common/errors.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/rendezvous.hpp"

namespace moe::ep {

// Ranks disagree on the map: a launch configuration error (exit 2).
class MapDisagreement : public UsageError {
 public:
  using UsageError::UsageError;
};

// Throws MapDisagreement when any rank's map differs from rank 0's, or when a map is for a
// different rank count than the rendezvous has.
void agree_on_expert_map(Rendezvous& rendezvous, const ExpertMap& map);

}  // namespace moe::ep
