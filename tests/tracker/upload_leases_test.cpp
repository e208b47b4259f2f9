// Upload leases in the registry, as a fleet shares them, over LevelDB: two
// stores on one engine stand for two trackers. Claims, expiry, release, a
// claim that loses a race part-way, and chunk GC sparing a leased chunk.
#include "storage/upload_leases.h"

#include <catch2/catch.hpp>
#include <functional>

#include "common/tracker_metrics.h"
#include "kv/kv_store.h"
#include "kv/leveldb_kv.h"
#include "registry/registry_store.h"
#include "shoal/file_origin.h"
#include "shoal/origin.h"
#include "shoal/sha256.h"
#include "shoal/utc_time.h"
#include "storage/chunk_gc.h"
#include "support/subprocess.h"

namespace shoal::tracker {
namespace {

// A second tracker's handle on one engine, with etcd's batch limit; counts
// its calls (round trips, on etcd) and can run a rival's write just before
// one of its batches applies.
class FleetKv final : public KvStore {
 public:
  explicit FleetKv(KvStore& kv) : kv_(kv) {}
  Result<std::optional<std::string>> Get(const std::string& k) override {
    ++calls;
    return kv_.Get(k);
  }
  Result<std::vector<KvPair>> Scan(const std::string& b, const std::string& e, size_t n,
                                   bool rev) override {
    ++calls;
    return kv_.Scan(b, e, n, rev);
  }
  Status Apply(const KvBatch& batch) override {
    ++calls;
    if (before_apply) {
      auto rival = std::move(before_apply);
      before_apply = nullptr;
      rival();
    }
    return kv_.Apply(batch);
  }
  size_t max_batch_ops() const override { return 128; }
  size_t max_value_bytes() const override { return 1 << 20; }
  Status Ping() override { return kv_.Ping(); }
  std::string Describe() const override { return "fleet " + kv_.Describe(); }

  int calls = 0;
  std::function<void()> before_apply;  // run once, before the next Apply

 private:
  KvStore& kv_;
};

std::vector<ChunkId> Chunks(int n, int seed = 0) {
  std::vector<ChunkId> out;
  for (int i = 0; i < n; ++i) {
    std::string s = std::to_string(seed) + "/" + std::to_string(i);
    out.push_back(ChunkId::From(Sha256::Of(s.data(), s.size())));
  }
  return out;
}

size_t Count(const std::vector<bool>& v) {
  size_t n = 0;
  for (bool b : v) n += b ? 1 : 0;
  return n;
}

// Two trackers' registries over one LevelDB.
struct TwoTrackers {
  shoal::testing::TempDir tmp;
  std::unique_ptr<LevelDbKv> engine = LevelDbKv::Open(tmp / "kv").value();
  FleetKv* kv_b = new FleetKv(*engine);
  RegistryStore a{std::make_unique<FleetKv>(*engine), nullptr};
  RegistryStore b{std::unique_ptr<KvStore>(kv_b), nullptr};
  std::unique_ptr<UploadLeases> leases_a = NewSharedUploadLeases(a);
  std::unique_ptr<UploadLeases> leases_b = NewSharedUploadLeases(b);
};

constexpr int64_t kTtl = 60000;

}  // namespace

TEST_CASE("a chunk leased through one tracker is refused through another until released",
          "[leases]") {
  TwoTrackers t;
  auto ids = Chunks(3);
  CHECK(Count(t.leases_a->Claim(ids, "pub-1", 1000, kTtl).value()) == 3);
  CHECK(Count(t.leases_b->Claim(ids, "pub-2", 2000, kTtl).value()) == 0);
  // The holder renews its own, through either tracker.
  CHECK(Count(t.leases_b->Claim(ids, "pub-1", 2000, kTtl).value()) == 3);
  CHECK(t.leases_b->Leased(2000, false).value().size() == 3);
  CHECK(t.leases_a->held_here(2000) == 3);
  CHECK(t.leases_b->held_here(2000) == 3);

  REQUIRE(t.leases_a->Release({ids[0]}).ok());
  CHECK(t.leases_a->held_here(2000) == 2);
  auto second = t.leases_b->Claim(ids, "pub-2", 3000, kTtl).value();
  CHECK(second == std::vector<bool>{true, false, false});
}

TEST_CASE("an expired lease goes to the next claimer and is dropped when GC reads it", "[leases]") {
  TwoTrackers t;
  auto ids = Chunks(2);
  REQUIRE(Count(t.leases_a->Claim(ids, "crashed", 1000, kTtl).value()) == 2);
  const int64_t later = 1000 + kTtl;  // the leases end here
  CHECK(t.leases_a->held_here(later) == 0);
  CHECK(Count(t.leases_b->Claim({ids[0]}, "pub-2", later, kTtl).value()) == 1);
  CHECK(t.leases_a->Leased(later, false).value() == std::unordered_set<ChunkId>{ids[0]});

  size_t keys = 0;
  auto count_keys = [&] {
    keys = 0;
    REQUIRE(VisitPrefix(*t.engine, "L|", [&](const KvPair&) { return ++keys, true; }).ok());
    return keys;
  };
  CHECK(count_keys() == 2);  // the crashed publisher's other lease is still stored
  REQUIRE(t.leases_a->Leased(later, true).ok());
  CHECK(count_keys() == 1);  // ... and is gone once read with drop_expired
}

TEST_CASE("claiming hundreds of chunks takes a few reads and batches", "[leases]") {
  TwoTrackers t;
  auto ids = Chunks(300);
  std::vector<ChunkId> theirs(ids.begin() + 100, ids.begin() + 150);
  REQUIRE(Count(t.leases_a->Claim(theirs, "pub-1", 1000, kTtl).value()) == 50);

  t.kv_b->calls = 0;
  auto held = t.leases_b->Claim(ids, "pub-2", 1000, kTtl).value();
  CHECK(Count(held) == 250);
  for (size_t i = 100; i < 150; ++i) CHECK_FALSE(held[i]);
  // One scan of the leases and four batches of 64 claims.
  CHECK(t.kv_b->calls <= 6);
}

TEST_CASE("a claim that loses a race part-way keeps what it won", "[leases]") {
  TwoTrackers t;
  auto ids = Chunks(200);
  // Another tracker claims two chunks after b read the leases and before its
  // first batch (chunks 0..63) applies.
  t.kv_b->before_apply = [&] {
    REQUIRE(Count(t.leases_a->Claim({ids[10], ids[40]}, "pub-1", 1000, kTtl).value()) == 2);
  };
  auto held = t.leases_b->Claim(ids, "pub-2", 1000, kTtl).value();
  CHECK(Count(held) == 198);
  CHECK_FALSE(held[10]);
  CHECK_FALSE(held[40]);
  CHECK(t.leases_a->Leased(1000, false).value().size() == 200);
  // pub-2 holds the rest: pub-1 gets none of them.
  CHECK(Count(t.leases_a->Claim(ids, "pub-1", 1000, kTtl).value()) == 2);
}

TEST_CASE("chunk GC through one tracker spares a chunk leased through another", "[leases][gc]") {
  TwoTrackers t;
  auto origin = NewFileOrigin(t.tmp / "origin").value();
  auto ids = Chunks(2);
  for (const ChunkId& id : ids) {
    REQUIRE(origin->Put(ChunkKey(id), reinterpret_cast<const uint8_t*>("data"), 4).ok());
  }
  // Indexed long ago and used by no version: garbage unless leased.
  REQUIRE(t.a.AddChunks({{ids[0], 4}, {ids[1], 4}}, 1).ok());
  REQUIRE(Count(t.leases_b->Claim({ids[0]}, "pub-2", NowMs(), kTtl).value()) == 1);

  TrackerMetrics metrics;
  GcResult r = RunChunkGc(t.a, *origin, *t.leases_a, metrics, false, 0).value();
  CHECK(r.swept == 1);
  CHECK(r.young == 1);
  CHECK(origin->Head(ChunkKey(ids[0])).ok());
  CHECK_FALSE(origin->Head(ChunkKey(ids[1])).ok());

  REQUIRE(t.leases_b->Release({ids[0]}).ok());
  r = RunChunkGc(t.a, *origin, *t.leases_a, metrics, false, 0).value();
  CHECK(r.swept == 1);
  CHECK_FALSE(origin->Head(ChunkKey(ids[0])).ok());
}

TEST_CASE("a lone tracker keeps its leases in memory", "[leases]") {
  shoal::testing::TempDir tmp;
  RegistryStore store(LevelDbKv::Open(tmp / "kv").value(), nullptr);
  auto leases = NewUploadLeases("", store);
  auto ids = Chunks(2);
  CHECK(Count(leases->Claim(ids, "pub-1", 1000, kTtl).value()) == 2);
  CHECK(Count(leases->Claim(ids, "pub-2", 1000, kTtl).value()) == 0);
  CHECK(Count(leases->Claim(ids, "pub-2", 1000 + kTtl, kTtl).value()) == 2);
  REQUIRE(leases->Release({ids[0]}).ok());
  CHECK(leases->Leased(1000 + kTtl, true).value() == std::unordered_set<ChunkId>{ids[1]});
  CHECK(leases->held_here(1000 + kTtl) == 1);
  // Nothing reached the registry: a restart frees every lease.
  CHECK(store.LeasedUploads(1000, false).value().empty());
}

}  // namespace shoal::tracker
