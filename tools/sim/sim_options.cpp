#include "sim/sim_options.h"

namespace shoal::sim {

Result<Scenario> ParseScenario(const std::string& name) {
  if (name == "cold") return Scenario::kCold;
  if (name == "staggered") return Scenario::kStaggered;
  if (name == "kills") return Scenario::kKills;
  if (name == "warm") return Scenario::kWarm;
  return Status::InvalidArgument("unknown scenario '" + name +
                                 "': use cold, staggered, kills or warm");
}

const char* ScenarioName(Scenario s) {
  switch (s) {
    case Scenario::kCold:
      return "cold";
    case Scenario::kStaggered:
      return "staggered";
    case Scenario::kKills:
      return "kills";
    case Scenario::kWarm:
      return "warm";
  }
  return "?";
}

Result<HandOnOwner> ParseHandOnOwner(const std::string& name) {
  if (name == "none") return HandOnOwner::kNone;
  if (name == "first") return HandOnOwner::kFirst;
  if (name == "only") return HandOnOwner::kOnly;
  return Status::InvalidArgument("unknown hand-on owner rule '" + name +
                                 "': use none, first or only");
}

const char* HandOnOwnerName(HandOnOwner h) {
  switch (h) {
    case HandOnOwner::kNone:
      return "none";
    case HandOnOwner::kFirst:
      return "first";
    case HandOnOwner::kOnly:
      return "only";
  }
  return "?";
}

Status SimOptions::Validate() const {
  if (nodes < 1) return Status::InvalidArgument("--nodes must be at least 1");
  if (nodes > 1000000) return Status::InvalidArgument("--nodes must be at most 1,000,000");
  if (chunks < 1) return Status::InvalidArgument("the model needs at least one piece");
  if (piece_bytes < 1) return Status::InvalidArgument("--piece-mib must be positive");
  if (!(node_bytes_per_s > 0) || !(origin_bytes_per_s > 0))
    return Status::InvalidArgument("--node-gbit and --origin-gbit must be positive");
  if (!(link_efficiency > 0 && link_efficiency <= 1))
    return Status::InvalidArgument("--link-efficiency must be in (0, 1]");
  if (origin_latency_ms < 0) return Status::InvalidArgument("--origin-latency-ms must be >= 0");
  if (kill_fraction < 0 || kill_fraction >= 1)
    return Status::InvalidArgument("--kill-fraction must be in [0, 1)");
  if (!(kill_at_tlb >= 0)) return Status::InvalidArgument("--kill-at-tlb must be >= 0");
  if (upload_slots < 1 || download_slots < 1)
    return Status::InvalidArgument("--upload-slots and --download-slots must be at least 1");
  if (!(pull_poll_ms > 0) || !(tracker_tick_ms > 0) || !(heartbeat_ms > 0))
    return Status::InvalidArgument(
        "--pull-poll-ms, --tracker-tick-ms and the heartbeat interval must be positive");
  if (origin_budget < 1 || fetches_per_agent < 1)
    return Status::InvalidArgument("--origin-budget and --fetches-per-agent must be at least 1");
  if (hand_on > 7)
    return Status::InvalidArgument(
        "--hand-on must be at most 7 (the tracker's 8 owners per chunk)");
  if (!(hand_on_weight >= 1 && hand_on_weight <= 1000))
    return Status::InvalidArgument("--hand-on-weight must be in [1, 1000]");
  return Status::OK();
}

}  // namespace shoal::sim
