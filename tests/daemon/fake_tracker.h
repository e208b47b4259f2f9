// FakeTracker: an in-process stand-in for shoal-tracker's RPC, for unit
// tests of the agent daemon's parts (TrackerLink, PullJob).
//
// It listens on 127.0.0.1 (an ephemeral port, or the one it is given, so a
// fake started after another on the same port plays a tracker that came
// back) and serves Cap'n Proto RPC on a kj event loop on a thread of its
// own. A connection's bootstrap is its Gateway:
//   - registerAgent: records the registration, keeps the agent's control
//     capability (the last one is what OrderFetch calls), and answers a
//     session with Options::agent_id, the current ring epoch and
//     Options::heartbeat_ms, and no peer CA (plain peers).
//   - authenticate: records the token and answers a Registry for any token
//     (identity "fake-reader", read role, every namespace).
//   - publicKey: the fake's own Ed25519 key (a ManifestSigner made for it).
// A session answers heartbeat (the new epoch; the ring's changes since the
// agent's ringSeen unless SetHeartbeatDeltas(false); the revocations after
// the agent's revocationsSeen, all of them when its source differs, as the
// real tracker does) and ring (the changes since sinceEpoch; for
// sinceEpoch 0 or one ahead of the fake, a snapshot of the ring at epoch 1
// and every change since). renewPeerCert, announce and announceBatch are unimplemented:
// they fail, as a call the fake does not serve should.
// A Registry answers resolve (a version Publish()ed, by tag or full hex,
// signed, or tampered as SetTamper says; NotFound otherwise) and need (as
// SetNeedAnswer says: queued, every chunk failed, or the fake goes away
// mid-call, as a tracker that dies). Its other methods are unimplemented.
//
// The ring starts as Options::ring at epoch 1; each JoinRing or LeaveRing
// is one change and one epoch more.
//
// Thread-safety: every public method may be called from any thread. The
// records are copies taken under a lock. Stop() (or the destructor) closes
// the listener and every connection and joins the fake's thread; the fake
// serves nothing after it. OrderFetch blocks its caller until the agent
// answers, so the agent's event loop must run on another thread.
#ifndef SHOAL_TESTS_DAEMON_FAKE_TRACKER_H_
#define SHOAL_TESTS_DAEMON_FAKE_TRACKER_H_

#include <capnp/capability.h>
#include <kj/async.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "shoal/chunk_id.h"
#include "shoal/hash_ring.h"
#include "shoal/manifest.h"
#include "shoal/manifest_signer.h"
#include "shoal/token_revocations.h"
#include "shoal/version_id.h"

namespace shoal {
namespace testing {

// What one registerAgent carried.
struct FakeRegistration {
  std::string token, name, zone, peer_key;
  uint16_t peer_port = 0;
  uint64_t cache_bytes = 0;
  std::vector<std::string> labels;
};

// What one heartbeat carried.
struct FakeHeartbeat {
  uint64_t revocations_seen = 0, revocations_source = 0, ring_seen = 0;
};

// What one need carried.
struct FakeNeed {
  std::string ns, name;
  VersionId version;
  std::vector<ChunkId> chunks;
};

// The agent's answer to a fetch order: its results, or the error it threw.
struct FakeOrderResult {
  bool ok = false;
  uint32_t fetched = 0;
  uint64_t bytes = 0;
  std::string error;
};

enum class NeedAnswer {
  kQueue,   // every chunk queued; no owner ever delivers
  kFail,    // every chunk in `failed`, with the error given
  kVanish,  // the fake stops (listener and connections closed) instead of answering
};

enum class ManifestTamper {
  kNone,
  kOtherKey,  // signed by a key other than the one publicKey serves
  kBytes,     // a manifest byte changed after signing: it no longer hashes to its ID
};

class FakeTracker {
 public:
  struct Options {
    uint16_t port = 0;  // 0: any free port
    std::string agent_id = "agent-1";
    uint32_t heartbeat_ms = 100;
    std::vector<RingMember> ring;  // the ring at epoch 1
  };

  // Listens and serves; throws std::runtime_error if it cannot listen.
  explicit FakeTracker(Options options);
  ~FakeTracker();
  FakeTracker(const FakeTracker&) = delete;
  FakeTracker& operator=(const FakeTracker&) = delete;

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // Closes the listener and every connection; idempotent.
  void Stop();
  // False once stopped (by Stop() or NeedAnswer::kVanish).
  bool running() const;

  // --- The ring ---
  void JoinRing(const std::string& id, uint64_t weight);
  void LeaveRing(const std::string& id);
  uint64_t epoch() const;
  // Whether heartbeat replies carry the ring's changes (default true);
  // without, the agent learns only the new epoch and must call ring().
  void SetHeartbeatDeltas(bool on);

  // --- Revocations (the fake's list, numbered from its own source) ---
  void Revoke(const Revocation& r);
  uint64_t revocation_source() const { return revocation_source_; }

  // --- The registry ---
  // Signs `m` and serves it for `tag` and for its version ID's hex.
  VersionId Publish(const Manifest& m, const std::string& tag = "latest");
  void SetTamper(ManifestTamper tamper);
  void SetNeedAnswer(NeedAnswer answer, std::string error = "");

  // --- The agent's control ---
  // Sends AgentControl.fetch on the last registered agent's control and
  // waits for its answer; an error if none is registered or the fake stopped.
  FakeOrderResult OrderFetch(const std::string& ns, const std::string& name,
                             const VersionId& version, const std::vector<ChunkId>& chunks,
                             bool takeover);

  // --- Records ---
  std::vector<FakeRegistration> registrations() const;
  std::vector<FakeHeartbeat> heartbeats() const;
  std::vector<uint64_t> ring_calls() const;          // each ring()'s sinceEpoch
  std::vector<std::string> authentications() const;  // each authenticate's token
  std::vector<std::string> resolves() const;         // "ns/name:ref" per resolve
  std::vector<FakeNeed> needs() const;

 private:
  class GatewayImpl;
  class SessionImpl;
  class RegistryImpl;
  struct LoopState;
  struct Published {
    VersionId id;
    std::string bytes, signature;
  };

  void Serve();
  // The Gateway a new connection bootstraps.
  capnp::Capability::Client NewGateway(LoopState& loop);
  // Fills the ring's changes after `since` into `out` (a RingDelta or
  // ring()'s results); false if the fake cannot say (since 0 or unknown).
  // REQUIRES: mu_ held.
  template <typename Builder>
  bool FillChangesLocked(uint64_t since, Builder out) const;

  const Options options_;
  const std::unique_ptr<ManifestSigner> signer_, other_signer_;
  const uint64_t revocation_source_;
  RevocationList revocations_;
  uint16_t port_ = 0;  // set before the constructor returns

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool ready_ = false, running_ = false;  // protected by mu_
  std::string listen_error_;              // protected by mu_
  // The fake's loop, its stop and its state, while it runs; the state is
  // touched on the loop only.
  kj::Own<const kj::Executor> executor_;                  // protected by mu_
  kj::Own<kj::CrossThreadPromiseFulfiller<void>> stop_;   // protected by mu_
  LoopState* loop_ = nullptr;                             // protected by mu_
  std::vector<std::pair<uint64_t, RingChange>> changes_;  // protected by mu_; by epoch, from 2
  bool heartbeat_deltas_ = true;                          // protected by mu_
  std::map<std::string, Published> versions_;             // protected by mu_; by "ns/name:ref"
  ManifestTamper tamper_ = ManifestTamper::kNone;         // protected by mu_
  NeedAnswer need_answer_ = NeedAnswer::kQueue;           // protected by mu_
  std::string need_error_;                                // protected by mu_
  std::vector<FakeRegistration> registrations_;           // protected by mu_
  std::vector<FakeHeartbeat> heartbeats_;                 // protected by mu_
  std::vector<uint64_t> ring_calls_;                      // protected by mu_
  std::vector<std::string> authentications_, resolves_;   // protected by mu_
  std::vector<FakeNeed> needs_;                           // protected by mu_
  std::thread thread_;                                    // last: started once the rest is set
};

// A fresh Ed25519 manifest signer whose key lives only in memory (its key
// file is made in a temporary folder and removed at once).
std::unique_ptr<ManifestSigner> NewTestSigner();

}  // namespace testing
}  // namespace shoal

#endif  // SHOAL_TESTS_DAEMON_FAKE_TRACKER_H_
