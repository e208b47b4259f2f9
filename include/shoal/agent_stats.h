// AgentStats: what an agent reports of itself with each heartbeat (and to
// `shoal status` over its control socket), as a plain value. The tracker
// keeps the last report per agent and shows it under /v1/agents.
// proto/record_codec.h converts it to and from its Cap'n Proto form.
#ifndef SHOAL_AGENT_STATS_H_
#define SHOAL_AGENT_STATS_H_

#include <cstdint>

namespace shoal {

struct AgentStats {
  uint64_t cached_bytes = 0;       // bytes of chunks in the agent's cache
  uint64_t cached_chunks = 0;      // chunks in the agent's cache
  uint64_t bytes_from_peers = 0;   // since the agent started
  uint64_t bytes_from_origin = 0;  // since the agent started; only bytes the origin sent
  uint64_t bytes_to_peers = 0;     // since the agent started
  uint32_t torrents = 0;           // torrents the engine holds now
  uint32_t peers = 0;              // peers connected now
  // Since the agent started, counted as they arrive, so a fetch still
  // running moves it (bytes_from_origin counts a chunk once it is whole).
  uint64_t origin_bytes_read = 0;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_STATS_H_
