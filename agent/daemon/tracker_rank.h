// RankTrackers: the order in which an agent ranks its fleet's trackers.
//
// The first is the agent's home (tracker_fleet.h): the tracker it
// heartbeats at the full rate and follows the ring through. Rendezvous
// hashing of the node name and each address spreads the homes of a fleet's
// agents evenly over its trackers, and moves only the agents of a tracker
// added or removed.
//
// Thread-safety: a pure function.
#ifndef SHOAL_AGENT_DAEMON_TRACKER_RANK_H_
#define SHOAL_AGENT_DAEMON_TRACKER_RANK_H_

#include <cstddef>
#include <string>
#include <vector>

namespace shoal {

// Indices into `addresses`, the home first. Empty for no addresses.
std::vector<size_t> RankTrackers(const std::string& node,
                                 const std::vector<std::string>& addresses);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_TRACKER_RANK_H_
