// NeedReply: the tracker's answer to an agent asking for chunks no peer
// offered it (Registry.need in proto/tracker.capnp), as a plain value.
// proto/record_codec.h converts it to and from its Cap'n Proto form.
#ifndef SHOAL_NEED_REPLY_H_
#define SHOAL_NEED_REPLY_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shoal/chunk_id.h"

namespace shoal {

struct NeedReply {
  uint32_t queued = 0;   // newly queued for an owner to fetch from the origin
  uint32_t pending = 0;  // queued or in flight already
  uint32_t recent = 0;   // delivered within the grace period; their seeders are being found
  std::vector<std::pair<ChunkId, std::string>> failed;  // no owner could fetch them, and why
};

}  // namespace shoal

#endif  // SHOAL_NEED_REPLY_H_
