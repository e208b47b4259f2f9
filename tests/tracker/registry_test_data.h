// Versions for registry tests: a manifest of `files` small files made at
// `at_ms` (distinct times give distinct versions), stored as the tracker
// would store it, and an audit entry by `subject`; and a second handle on
// one engine, as another tracker of a fleet has.
#ifndef SHOAL_TESTS_TRACKER_REGISTRY_TEST_DATA_H_
#define SHOAL_TESTS_TRACKER_REGISTRY_TEST_DATA_H_

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "registry/registry_store.h"
#include "shoal/manifest_codec.h"

namespace shoal::tracker::testdata {

// Another handle on one engine, as a second tracker sharing etcd has; it
// may also report a small value limit, as etcd's is.
class SharedKv final : public KvStore {
 public:
  SharedKv(KvStore& kv, size_t max_value) : kv_(kv), max_value_(max_value) {}
  Result<std::optional<std::string>> Get(const std::string& k) override { return kv_.Get(k); }
  Result<std::vector<KvPair>> Scan(const std::string& b, const std::string& e, size_t n,
                                   bool rev) override {
    return kv_.Scan(b, e, n, rev);
  }
  Status Apply(const KvBatch& batch) override { return kv_.Apply(batch); }
  size_t max_batch_ops() const override { return 128; }
  size_t max_value_bytes() const override { return max_value_; }
  Status Ping() override { return kv_.Ping(); }
  std::string Describe() const override { return "shared " + kv_.Describe(); }

 private:
  KvStore& kv_;
  const size_t max_value_;
};

inline Manifest SomeManifest(int files, int64_t at_ms) {
  Manifest m;
  m.ns = "team-a";
  m.name = "llama";
  m.created_by = "ci";
  m.created_at_ms = at_ms;
  m.piece_size = 1 << 20;
  for (int i = 0; i < files; ++i) {
    FileEntry f;
    f.path = "shard-" + std::to_string(i) + ".safetensors";
    f.size = 1000 + static_cast<uint64_t>(i);
    uint8_t root[32] = {};
    root[0] = static_cast<uint8_t>(i);
    root[1] = static_cast<uint8_t>(i >> 8);
    root[2] = static_cast<uint8_t>(at_ms);
    root[31] = 7;
    f.pieces_root = PiecesRoot::FromBytes(root);
    m.files.push_back(f);
  }
  m.Canonicalize();
  return m;
}

inline StoredVersion Stored(const Manifest& m) {
  StoredVersion v;
  v.manifest_bytes = EncodeManifest(m).value();
  v.id = ComputeVersionId(v.manifest_bytes);
  v.signature = std::string(64, 's');
  v.signer_key_id = "key-1";
  v.created_at_ms = m.created_at_ms;
  return v;
}

inline AuditEntry By(const std::string& subject) {
  return AuditEntry{0, 1, subject, "t1", "test", "", ""};
}

// Commits `n` versions of `files` files each through `store`; their IDs.
inline std::vector<VersionId> CommitVersions(RegistryStore& store, int n, int files) {
  std::vector<VersionId> ids;
  for (int i = 0; i < n; ++i) {
    Manifest m = SomeManifest(files, 1000 + i);
    StoredVersion v = Stored(m);
    REQUIRE(store.CommitVersion(m, v, {}, By("ci")).value());
    ids.push_back(v.id);
  }
  return ids;
}

// Two trackers at once: `a` and `b` each move team-a/llama:prod `moves`
// times, in turn over `ids`. Every move must succeed.
inline void MoveProdAtOnce(RegistryStore& a, RegistryStore& b, const std::vector<VersionId>& ids,
                           int moves) {
  std::vector<Status> failures[2];
  auto mover = [&](RegistryStore& s, size_t offset) {
    for (int i = 0; i < moves; ++i) {
      TagChange c{"team-a",
                  "llama",
                  "prod",
                  std::nullopt,
                  ids[(static_cast<size_t>(i) + offset) % ids.size()],
                  "ci",
                  i};
      auto moved = s.SetTag(c, By("ci"));
      if (!moved.ok()) failures[offset].push_back(moved.status());
    }
  };
  std::thread ta(mover, std::ref(a), 0), tb(mover, std::ref(b), 1);
  ta.join();
  tb.join();
  for (const auto& list : failures) {
    for (const Status& f : list) FAIL_CHECK(f.message());
  }
}

// Each move in `history` starts where the one before it ended.
inline void CheckUnbroken(const std::vector<TagChange>& history) {
  for (size_t i = 1; i < history.size(); ++i) {
    INFO("event " << i);
    REQUIRE(history[i].from.has_value());
    CHECK(*history[i].from == *history[i - 1].to);
  }
}

}  // namespace shoal::tracker::testdata

#endif  // SHOAL_TESTS_TRACKER_REGISTRY_TEST_DATA_H_
