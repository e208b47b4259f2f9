// Handing a published folder to this node's agent to seed, so peers read
// its chunks from here rather than from the origin.
#ifndef SHOAL_AGENT_CLI_PUBLISH_SEED_H_
#define SHOAL_AGENT_CLI_PUBLISH_SEED_H_

#include <string>

#include "shoal/status.h"

namespace shoal {

// Whether an agent listens at `socket` (the socket file exists).
bool AgentListens(const std::string& socket);

// Asks the agent at `socket` to seed `ref` from the files in `dir`, opened
// by this process (as the user who publishes: the agent reads nothing this
// user could not). Sets *chunks to the chunks the agent now caches. Runs
// its own event loop, so it may be called from any thread that has none.
Status SeedThroughAgent(const std::string& socket, const std::string& ref, const std::string& token,
                        const std::string& dir, uint64_t* chunks);

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_PUBLISH_SEED_H_
