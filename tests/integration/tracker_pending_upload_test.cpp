// Versions pullable before they are durable, end to end: a real
// shoal-tracker on a folder origin, the publisher's side of the RPC through
// the real TrackerClient (commit pending, renew, finish), and what the real
// CLI and the HTTP view then show.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "client/tracker_client.h"
#include "shoal/file_origin.h"
#include "shoal/manifest_builder.h"
#include "shoal/manifest_codec.h"
#include "shoal/origin.h"
#include "support/test_cluster.h"

using namespace shoal;
using namespace shoal::testing;

namespace {

constexpr uint32_t kPieceSize = 16384;
constexpr size_t kFileBytes = 100000;  // 7 chunks of 16 KiB

// A checkpoint of one file, hashed for team-a/m as the writer ("trainer")
// would publish it.
struct Checkpoint {
  std::string file;
  Manifest manifest;
  std::string bytes;  // canonical manifest bytes
  VersionId id;
};

Checkpoint MakeCheckpoint(const TestCluster& c, const std::string& name, unsigned seed) {
  Checkpoint ck;
  const std::string dir = c.tmp / name;
  ck.file = dir + "/w.bin";
  WriteRandomFile(ck.file, kFileBytes, seed);
  BuildOptions options;
  options.hash.piece_size = kPieceSize;
  options.ns = "team-a";
  options.name = "m";
  options.created_by = "trainer";
  ck.manifest = BuildManifest(dir, options).value();
  ck.bytes = EncodeManifest(ck.manifest).value();
  ck.id = ComputeVersionId(ck.bytes);
  return ck;
}

// Puts every chunk of the checkpoint into the cluster's folder origin, as
// the publish's upload does.
void UploadChunks(const TestCluster& c, const Checkpoint& ck) {
  auto origin = NewFileOrigin(c.origin).value();
  std::ifstream in(ck.file, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<ChunkId> ids = ck.manifest.files.at(0).ChunkIds();
  for (size_t i = 0; i < ids.size(); ++i) {
    const size_t at = i * kPieceSize, len = std::min<size_t>(kPieceSize, data.size() - at);
    REQUIRE(
        PutChunkIfAbsent(*origin, ids[i], reinterpret_cast<const uint8_t*>(data.data()) + at, len)
            .ok());
  }
}

std::unique_ptr<TrackerClient> Connect(const TestCluster& c, const std::string& token) {
  TrackerEndpoint tracker;
  tracker.address = c.tracker.rpc_address();
  return TrackerClient::Connect(tracker, token).value();
}

CommitOptions Pending() {
  CommitOptions o;
  o.pending = true;
  return o;
}

double Ops(const TestCluster& c, const std::string& op) {
  return c.tracker.Metric("shoal_tracker_registry_ops_total{op=\"" + op + "\"}");
}

}  // namespace

TEST_CASE("a version committed before its upload resolves as uploading, and its tag waits",
          "[tracker][upload]") {
  TestCluster c;
  Checkpoint ck = MakeCheckpoint(c, "ckpt", 1);
  auto t = Connect(c, c.writer);
  const std::string ref = "team-a/m:" + ck.id.ToHex();

  SignedVersion v = t->Commit(ck.bytes, {"prod"}, Pending()).value();
  CHECK(v.created);
  CHECK(v.id == ck.id);
  CHECK(v.state == VersionState::kUploading);
  SignedVersion resolved = t->Resolve("team-a", "m", ck.id.ToHex()).value();
  CHECK(resolved.state == VersionState::kUploading);
  CHECK(resolved.manifest.files.size() == 1);
  Result<SignedVersion> tagged = t->Resolve("team-a", "m", "prod");
  CHECK_THAT(tagged.status().message(), Catch::Contains("no tag 'prod'"));
  CHECK_THAT(c.Shoal(c.reader, {"inspect", ref}).out, Catch::Contains("state: uploading"));
  CHECK_THAT(c.Shoal(c.reader, {"ls", "team-a/m"}).out,
             Catch::Contains("uploading (by trainer since "));

  // A puller's need waits for the publisher's agent: no fetch is ordered
  // from an origin that may not have the chunks yet.
  const std::vector<ChunkId> chunks = ck.manifest.files.at(0).ChunkIds();
  NeedReply need = t->Need("team-a", "m", ck.id, chunks).value();
  CHECK(need.pending == chunks.size());
  CHECK(need.queued == 0);
  CHECK(need.failed.empty());

  // The publisher keeps it uploading; finishing is refused while the
  // origin lacks its chunks.
  CHECK(t->RenewUpload("team-a", "m", ck.id).value() == 60000);
  Result<VersionState> early = t->FinishUpload("team-a", "m", ck.id, "");
  CHECK(early.status().code() == Status::Code::kNotFound);
  CHECK_THAT(early.status().message(), Catch::Contains("7 of 7 chunks"));
  CHECK_FALSE(t->Resolve("team-a", "m", "prod").ok());

  UploadChunks(c, ck);
  CHECK(t->FinishUpload("team-a", "m", ck.id, "").value() == VersionState::kDurable);
  SignedVersion prod = t->Resolve("team-a", "m", "prod").value();
  CHECK(prod.id == ck.id);
  CHECK(prod.state == VersionState::kDurable);
  CHECK_THAT(c.Shoal(c.reader, {"tag", "team-a/m", "prod", "--history"}).out,
             Catch::Contains("(none) -> " + ck.id.ShortHex()));
  CHECK_THAT(c.Shoal(c.reader, {"inspect", ref}).out, !Catch::Contains("state:"));
  CHECK_THAT(c.Shoal(c.reader, {"ls", "team-a/m"}).out, !Catch::Contains("uploading"));

  // Finishing again is harmless, and there is nothing left to renew.
  CHECK(t->FinishUpload("team-a", "m", ck.id, "").value() == VersionState::kDurable);
  CHECK(t->RenewUpload("team-a", "m", ck.id).value() == 0);
  CHECK(Ops(c, "publish_pending") == 1);
  CHECK(Ops(c, "upload_durable") == 1);
}

TEST_CASE("an upload its publisher stops renewing fails, and the version resolves no more",
          "[tracker][upload]") {
  ClusterOptions options;
  options.tracker_flags = {"--publish-lease", "1s"};
  TestCluster c(options);
  Checkpoint ck = MakeCheckpoint(c, "ckpt", 2);
  auto t = Connect(c, c.writer);
  const std::string ref = "team-a/m:" + ck.id.ToHex();
  REQUIRE(t->Commit(ck.bytes, {"prod"}, Pending()).value().state == VersionState::kUploading);
  CHECK(t->RenewUpload("team-a", "m", ck.id).value() == 1000);

  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  Result<SignedVersion> lapsed = t->Resolve("team-a", "m", ck.id.ToHex());
  CHECK(lapsed.status().code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(lapsed.status().message(),
             Catch::Contains(ck.id.ShortHex() + " failed before it was durable: its publisher "
                                                "(trainer) stopped renewing the upload"));
  CHECK(t->RenewUpload("team-a", "m", ck.id).status().code() == Status::Code::kFailedPrecondition);
  // A pull under way hears why, for every chunk it still needs.
  NeedReply need = t->Need("team-a", "m", ck.id, ck.manifest.files.at(0).ChunkIds()).value();
  REQUIRE(need.failed.size() == 7);
  CHECK_THAT(need.failed.front().second, Catch::Contains("failed before it was durable"));
  CHECK(need.queued == 0);
  auto shown = c.Shoal(c.reader, {"inspect", ref});
  CHECK(shown.exit_code == 1);
  CHECK_THAT(shown.err, Catch::Contains("failed before it was durable"));
  CHECK(std::count(shown.err.begin(), shown.err.end(), '\n') == 1);
  CHECK_THAT(c.Shoal(c.reader, {"ls", "team-a/m"}).out, Catch::Contains("failed (its publisher"));
  auto curl = [&](const std::string& path) {
    return RunProcess({"/usr/bin/curl", "-s", "-w", "\n%{http_code}",
                       "-HAuthorization: Bearer " + c.reader,
                       "http://127.0.0.1:" + std::to_string(c.tracker.http_port()) + path})
        .out;
  };
  CHECK_THAT(curl("/v1/models/team-a/m/versions"), Catch::Contains("\"state\":\"failed\""));
  CHECK_THAT(curl("/v1/models/team-a/m/versions/" + ck.id.ToHex() + "/manifest"),
             Catch::EndsWith("409"));

  // Publishing it again takes it over; a failure its publisher reports
  // fails it with that reason.
  REQUIRE(t->Commit(ck.bytes, {"prod"}, Pending()).value().state == VersionState::kUploading);
  CHECK(t->Resolve("team-a", "m", ck.id.ToHex()).ok());
  CHECK(t->FinishUpload("team-a", "m", ck.id, "PUT chunks/3fa2: connection reset").value() ==
        VersionState::kFailed);
  CHECK_THAT(t->Resolve("team-a", "m", ck.id.ToHex()).status().message(),
             Catch::Contains("failed before it was durable: PUT chunks/3fa2: connection reset; "
                             "publish it again"));
  CHECK(Ops(c, "upload_failed") == 1);
}
