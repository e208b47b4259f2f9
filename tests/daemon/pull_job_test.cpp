// PullJob against a fake tracker (fake_tracker.h), with a real transfer
// engine on 127.0.0.1, a real chunk store and a real file-system origin in a
// temporary folder, and the agent's ChunkFetcher. The pull writes into a
// real folder. What the tracker answers is the fake's to choose: it dies
// mid-pull, reports chunks no owner could fetch, serves a manifest that
// does not verify, or queues chunks no owner ever delivers.
#include "daemon/pull_job.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "core/forwarding_origin.h"
#include "core/store_test_support.h"
#include "daemon/fake_tracker.h"
#include "fetch/chunk_fetcher.h"
#include "p2p/p2p_test_support.h"
#include "shoal/origin.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

constexpr uint32_t kPieceSize = 16384;

// A real origin that counts the GETs it served.
class CountingOrigin final : public testing::ForwardingOrigin {
 public:
  using ForwardingOrigin::ForwardingOrigin;
  Status Get(const std::string& key, uint64_t offset, uint64_t length, ByteSink& sink) override {
    gets_++;
    return ForwardingOrigin::Get(key, offset, length, sink);
  }
  std::string Describe() const override { return "counting " + ForwardingOrigin::Describe(); }
  int gets() const { return gets_.load(); }

 private:
  std::atomic<int> gets_{0};
};

// The caller's staging folder, written with plain file calls.
class FolderDestination final : public PullDestination {
 public:
  explicit FolderDestination(std::string dir) : dir_(std::move(dir)) {}

  Status Prepare(const std::vector<std::string>& dirs,
                 const std::vector<DestFileSpec>& files) override {
    prepared_ = true;
    ::mkdir(dir_.c_str(), 0755);
    for (const std::string& d : dirs) ::mkdir((dir_ + "/" + d).c_str(), 0755);
    for (const DestFileSpec& f : files) {
      int fd = ::open((dir_ + "/" + f.path).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      if (fd < 0) return Status::FromErrno("create " + f.path, errno);
      ::close(fd);
    }
    files_ = files;
    return Status::OK();
  }

  Result<std::vector<int>> OpenFiles(const std::vector<uint32_t>& indexes) override {
    std::vector<int> fds;
    for (uint32_t i : indexes) {
      int fd = ::open((dir_ + "/" + files_.at(i).path).c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return Status::FromErrno("open " + files_.at(i).path, errno);
      fds.push_back(fd);
    }
    return fds;
  }

  Status WriteFiles(const std::vector<WholeFile>& files) override {
    for (const WholeFile& w : files) {
      std::vector<uint8_t> data(w.data.begin(), w.data.end());
      WriteWholeFile(dir_ + "/" + files_.at(w.index).path, data);
    }
    return Status::OK();
  }

  bool prepared() const { return prepared_; }

 private:
  const std::string dir_;
  std::vector<DestFileSpec> files_;
  bool prepared_ = false;
};

// A version of two larger files (5 and 3 chunks) and, if asked, a small one
// (one chunk, in a bundle).
struct Model {
  Manifest manifest;
  std::vector<TestFile> files;
  size_t chunks = 0;
  uint64_t bytes = 0;
};

Model MakeModel(bool small_file) {
  Model m;
  m.files = {MakeFile(1, 70000, kPieceSize, "config/big.bin"),
             MakeFile(2, 40000, kPieceSize, "weights.bin")};
  if (small_file) m.files.push_back(MakeFile(3, 3000, kPieceSize, "README.md"));
  m.manifest.ns = "team-a";
  m.manifest.name = "llama";
  m.manifest.created_by = "ci";
  m.manifest.created_at_ms = 1795975200000;
  m.manifest.piece_size = kPieceSize;
  for (const TestFile& f : m.files) {
    m.manifest.files.push_back(f.entry);
    m.chunks += f.chunks.size();
    m.bytes += f.data.size();
  }
  m.manifest.Canonicalize();
  return m;
}

std::unique_ptr<CountingOrigin> FolderOrigin(const std::string& dir) {
  OriginOptions o;
  o.url = "file://" + dir;
  auto inner = OpenOrigin(o);
  if (!inner.ok()) throw std::runtime_error("origin: " + inner.status().ToString());
  return std::make_unique<CountingOrigin>(std::move(inner).value());
}

// One agent's pull machinery around a fake tracker that serves `model`.
struct PullRig {
  explicit PullRig(bool small_file = false) : model(MakeModel(small_file)) {
    for (const TestFile& f : model.files) {
      for (uint64_t i = 0; i < f.chunks.size(); ++i) {
        REQUIRE(origin->Put(ChunkKey(f.chunks[i]), f.data.data() + i * kPieceSize, f.PieceBytes(i))
                    .ok());
      }
    }
    version = fake.Publish(model.manifest);
    options.tracker.address = fake.address();
    options.cache_dir = agent.dir.path() + "/cache";
    options.origin_fallback_ms = 300;  // the swarm-form wait, too
    options.stall_timeout_ms = 8000;   // a pull that hangs fails instead
    request.ref = "team-a/llama";
    request.token = "reader-token";
    request.dest = &dest;
    request.dest_label = dest_dir;
    request.cancelled = &cancelled;
  }

  Result<PullResult> Pull() { return RunPull(ctx, request, nullptr); }

  // Whether every file in the destination has the bytes it was published with.
  bool Identical() const {
    for (const TestFile& f : model.files) {
      if (ReadWholeFile(dest_dir + "/" + f.entry.path) != f.data) return false;
    }
    return true;
  }

  FakeTracker fake{FakeTracker::Options{}};
  Agent agent;
  Model model;
  std::unique_ptr<CountingOrigin> origin = FolderOrigin(agent.dir.path() + "/origin");
  std::unique_ptr<ChunkFetcher> fetcher =
      std::make_unique<ChunkFetcher>(origin.get(), *agent.store, agent.engine.get());
  VersionId version;
  AgentOptions options;
  PullCounters counters;
  // This agent alone on the last ring it saw: every chunk's owner.
  std::shared_ptr<const HashRing> ring =
      std::make_shared<const HashRing>(std::vector<RingMember>{{"agent-1", 1}}, 1);
  PullContext ctx{.options = options,
                  .store = *agent.store,
                  .engine = *agent.engine,
                  .origin = origin.get(),
                  .fetcher = fetcher.get(),
                  .announce_url = "",
                  .counters = counters,
                  .ring = [this] { return ring; },
                  .self_id = "agent-1"};
  std::string dest_dir = agent.dir.path() + "/dest";
  FolderDestination dest{dest_dir};
  std::atomic<bool> cancelled{false};
  PullRequest request;
};

}  // namespace

TEST_CASE(
    "a tracker that dies mid-pull leaves the local rule: each chunk is read from the origin "
    "once",
    "[pull]") {
  PullRig rig(/*small_file=*/true);
  rig.fake.SetNeedAnswer(NeedAnswer::kVanish);

  Result<PullResult> got = rig.Pull();
  INFO((got.ok() ? std::string("ok") : got.status().ToString()));
  REQUIRE(got.ok());
  CHECK(rig.Identical());
  CHECK(got->version == rig.version);
  CHECK(got->file_count == 3);
  CHECK(got->total_bytes == rig.model.bytes);
  CHECK(got->bytes_from_origin == rig.model.bytes);
  CHECK(got->bytes_from_peers == 0);
  CHECK(got->bytes_cached == 0);

  // Each chunk was read from the origin once, by this agent as its owner.
  CHECK(rig.origin->gets() == static_cast<int>(rig.model.chunks));
  CHECK(rig.counters.origin_chunks.load() == rig.model.chunks);
  CHECK(rig.counters.owner_fetches.load() == rig.model.chunks);

  // The tracker resolved the name with the caller's token, was asked for
  // chunks once and went away.
  CHECK(rig.fake.authentications() == std::vector<std::string>{"reader-token"});
  CHECK(rig.fake.resolves() == std::vector<std::string>{"team-a/llama:latest"});
  auto needs = rig.fake.needs();
  REQUIRE(needs.size() == 1);
  CHECK(needs[0].version == rig.version);
  CHECK_FALSE(needs[0].chunks.empty());
  CHECK_FALSE(rig.fake.running());
}

TEST_CASE("chunks no owner could fetch fail the pull with one error naming their count and one",
          "[pull]") {
  PullRig rig;
  rig.fake.SetNeedAnswer(NeedAnswer::kFail, "origin answered 404");

  Result<PullResult> got = rig.Pull();
  REQUIRE_FALSE(got.ok());
  auto needs = rig.fake.needs();
  REQUIRE(needs.size() == 1);
  REQUIRE_FALSE(needs[0].chunks.empty());
  const Status& s = got.status();
  CHECK(s.code() == Status::Code::kUnavailable);
  CHECK_THAT(s.message(),
             Catch::StartsWith(std::to_string(needs[0].chunks.size()) +
                               " chunks of team-a/llama:latest could not be "
                               "fetched from the origin by any owner; chunk " +
                               needs[0].chunks[0].ShortHex() + ": origin answered 404"));
  // While the tracker answers, chunks are its owners' to fetch, not this agent's.
  CHECK(rig.origin->gets() == 0);
  CHECK(rig.counters.pulls.load() == 0);
}

TEST_CASE("a manifest that does not verify fails the pull before anything is written", "[pull]") {
  PullRig rig;
  std::string why;
  SECTION("signed with another key") {
    rig.fake.SetTamper(ManifestTamper::kOtherKey);
    why = "signature does not verify";
  }
  SECTION("bytes changed after signing") {
    rig.fake.SetTamper(ManifestTamper::kBytes);
    why = "do not hash to version";
  }

  Result<PullResult> got = rig.Pull();
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == Status::Code::kCorruption);
  CHECK_THAT(got.status().message(), Catch::Contains(why));
  CHECK_THAT(got.status().message(),
             Catch::Contains("manifest from tracker " + rig.fake.address()));
  CHECK(rig.fake.resolves().size() == 1);
  CHECK(rig.fake.needs().empty());
  CHECK_FALSE(rig.dest.prepared());
  CHECK(FilesUnder(rig.dest_dir).empty());
  CHECK(rig.agent.store->Stats().chunks == 0);
  CHECK(rig.origin->gets() == 0);
}

TEST_CASE("a pull waiting on owners asks again, reads no origin itself, and ends when cancelled",
          "[pull]") {
  PullRig rig;
  rig.fake.SetNeedAnswer(NeedAnswer::kQueue);
  auto pull = std::async(std::launch::async, [&rig] { return rig.Pull(); });

  // Queued chunks no owner delivers are asked for again (every 3 s).
  REQUIRE(Eventually([&] { return rig.fake.needs().size() >= 2; }, std::chrono::seconds(8)));
  CHECK(rig.origin->gets() == 0);
  CHECK(pull.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);

  const auto asked = std::chrono::steady_clock::now();
  rig.cancelled = true;
  REQUIRE(pull.wait_for(std::chrono::seconds(2)) == std::future_status::ready);
  CHECK(std::chrono::steady_clock::now() - asked < std::chrono::milliseconds(1000));
  Result<PullResult> got = pull.get();
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == Status::Code::kUnavailable);
  CHECK_THAT(got.status().message(),
             Catch::Contains("pull of team-a/llama:latest cancelled: the caller went away"));
  CHECK(rig.origin->gets() == 0);
}
