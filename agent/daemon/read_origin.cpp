#include "daemon/read_origin.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "client/tracker_client.h"
#include "shoal/log.h"
#include "shoal/missing_chunk_policy.h"

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

// How often the store is checked while waiting.
constexpr auto kPoll = std::chrono::milliseconds(2);

bool AllStored(ChunkStore& store, const std::vector<ChunkId>& chunks) {
  for (const ChunkId& c : chunks) {
    if (!store.Contains(c)) return false;
  }
  return true;
}

}  // namespace

ReadFetcher::OriginRequest OwnerPacedOrigin(const AgentOptions& options, ChunkStore& store) {
  return [&options, &store](const std::string& ns, const std::string& name,
                            const VersionId& version,
                            const std::vector<ChunkId>& chunks) -> Status {
    // One connection per fetcher thread: a TrackerClient stays on the
    // thread that made it.
    thread_local std::unique_ptr<TrackerClient> tracker;
    const MissingChunkPolicy policy(options.MissingChunks());
    Status asked = Status::OK();  // the tracker's failure, if that ended the wait
    const Clock::time_point start = Clock::now();
    std::optional<Clock::time_point> last_ask;
    while (!policy.ReadOwnersLate(start, Clock::now())) {
      if (AllStored(store, chunks)) return Status::OK();
      if (policy.AskDue(last_ask, Clock::now())) {
        if (tracker == nullptr) {
          auto c = TrackerClient::Connect(options.tracker, options.token);
          if (!c.ok()) {
            asked = c.status();
            break;
          }
          tracker = std::move(c).value();
        }
        auto r = tracker->Need(ns, name, version, chunks);
        if (!r.ok()) {
          asked = r.status();
          tracker.reset();
          break;
        }
        if (!r->failed.empty()) {
          return Status::Unavailable("no owner could fetch chunk " +
                                     r->failed.front().first.ShortHex() +
                                     " from the origin: " + r->failed.front().second);
        }
        last_ask = Clock::now();
      }
      std::this_thread::sleep_for(kPoll);
    }
    if (asked.ok()) {
      asked =
          Status::Unavailable("owners did not deliver within " +
                              std::to_string(MissingChunkPolicy::kReadOwnerWaitMs / 1000) + " s");
    }
    Log(LogLevel::kWarn, "read.owners_unavailable",
        {{"model", ns + "/" + name},
         {"chunks", static_cast<int64_t>(chunks.size())},
         {"why", asked.ToString()}});
    // Unavailable either way: the fetcher then reads the origin itself.
    return Status::Unavailable("chunks of " + ns + "/" + name +
                               " not delivered by their owners: " + asked.ToString());
  };
}

}  // namespace shoal
