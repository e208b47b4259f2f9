// AnnounceRelay: where the agent's libtorrent announces, and how those
// announces reach a fleet of trackers.
//
// libtorrent announces to a loopback-only HTTP listener whose URL holds a
// random key. Only what changes reaches a tracker (swarm_reports.h): the
// changes of a short tick go together in one AgentSession.announceBatch
// over a registered session, the rest is answered from the tracker's last
// reply. Announces thus never carry a token in a URL, share the agent's
// connections to the trackers, and are encrypted whenever those are
// (--tracker-ca).
//
// With several trackers, each torrent's swarm lives on one of them: the
// tracker ranked first for its info-hash (rendezvous hashing over the
// trackers this agent is registered with). Every agent ranks alike, so a
// swarm's peers meet on one tracker, and adding a tracker moves only the
// swarms it now ranks first for. When a tracker is lost or comes back,
// SessionsChanged() sends every torrent's state again, to wherever it now
// belongs; what the old tracker held goes with that agent's session there.
//
// Thread-safety: Start, Stop, SessionsChanged and the sending run on the
// kj event loop's thread; announces arrive on the listener's thread.
#ifndef SHOAL_AGENT_DAEMON_ANNOUNCE_RELAY_H_
#define SHOAL_AGENT_DAEMON_ANNOUNCE_RELAY_H_

#include <capnp/capability.h>
#include <kj/async-io.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/swarm_reports.h"
#include "proto/task_error_log.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/server/http_server.h"
#include "shoal/status.h"

namespace shoal {

// One tracker a batch may go to: its address (what the rank hashes) and
// its session, if registered now (owned by its link; used at once, on the
// event loop).
struct SwarmRoute {
  std::string address;
  proto::AgentSession::Client* session = nullptr;
};

// The index in `routes` of the tracker ranked first for `info_hash` among
// those with a session; -1 if none has one.
int RankFirst(const std::string& info_hash, const std::vector<SwarmRoute>& routes);

class AnnounceRelay {
 public:
  // `routes` is asked, on the event loop, where batches may go now. The
  // relay listens on `host` (see relay_host.h); its path holds a random key,
  // so only the engine it was given to can announce to it.
  AnnounceRelay(kj::AsyncIoContext& io, std::string zone, std::string host,
                std::function<std::vector<SwarmRoute>()> routes);

  // Listens on the host (a free port). On the event loop's thread.
  Status Start();
  // Answers every pending announce with a failure and stops listening; on
  // the event loop's thread, before the loop goes.
  void Stop();
  // A session began or ended: send every torrent's state again.
  void SessionsChanged();

  // The URL torrents announce to (with the zone); empty until Start.
  std::string url() const;
  uint64_t answered_locally() const { return reports_.answered_locally(); }
  uint64_t changes_sent() const { return reports_.changes_sent(); }

 private:
  // Takes one relayed announce to reports_. Any thread.
  void Announce(const HttpRequest& req, AnnounceDone done);
  void Wake();  // any thread
  // Waits to be woken, lets more changes gather for a moment, sends them
  // in batches, and again.
  kj::Promise<void> Loop();
  void SendQueued();

  kj::AsyncIoContext& io_;
  const std::string zone_;
  const std::string host_;
  const std::function<std::vector<SwarmRoute>()> routes_;
  // Declared before the batches in flight, which refer to it.
  SwarmReports reports_;
  int64_t last_batch_ms_ = 0;  // event loop only
  std::unique_ptr<HttpServer> server_;
  kj::Own<TaskErrorLog> errors_;
  kj::Own<kj::TaskSet> sends_;  // batches in flight; event loop only
  kj::Promise<void> loop_ = nullptr;
  mutable std::mutex mu_;
  std::string url_;                                      // protected by mu_
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> wake_;  // protected; null while awake
  bool stopped_ = false;                                 // protected by mu_
};

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_ANNOUNCE_RELAY_H_
