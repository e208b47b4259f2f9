#include "proto/record_codec.h"

#include <capnp/message.h>

#include <catch2/catch.hpp>
#include <vector>

#include "proto/capnp_views.h"

using namespace shoal;

namespace {

template <typename Tag>
Hash256<Tag> Id(uint8_t first) {
  Hash256<Tag> h;
  h.mutable_data()[0] = first;
  return h;
}

std::vector<kj::byte> Short(size_t n) { return std::vector<kj::byte>(n, 7); }

}  // namespace

TEST_CASE("a version record reads back as it was filled, tags and parent included", "[codec]") {
  VersionInfo v;
  v.ns = "team-a";
  v.name = "llama";
  v.id = Id<VersionIdTag>(1);
  v.created_by = "ci";
  v.created_at_ms = 1700000000123;
  v.parent = Id<VersionIdTag>(2);
  v.total_bytes = 5ull << 40;
  v.file_count = 12;
  v.tags = {"prod", "canary"};
  capnp::MallocMessageBuilder b;
  FillVersionInfo(v, b.initRoot<proto::VersionSummary>());
  Result<VersionInfo> back = ReadVersionInfo(b.getRoot<proto::VersionSummary>().asReader());
  REQUIRE(back.ok());
  CHECK(back->ns == "team-a");
  CHECK(back->name == "llama");
  CHECK(back->id == v.id);
  CHECK(back->created_by == "ci");
  CHECK(back->created_at_ms == 1700000000123);
  CHECK(back->parent == v.parent);
  CHECK(back->total_bytes == 5ull << 40);
  CHECK(back->file_count == 12);
  CHECK(back->tags == std::vector<std::string>{"prod", "canary"});

  v.parent.reset();
  capnp::MallocMessageBuilder orphan;
  FillVersionInfo(v, orphan.initRoot<proto::VersionSummary>());
  CHECK_FALSE(ReadVersionInfo(orphan.getRoot<proto::VersionSummary>().asReader())->parent);
}

TEST_CASE("a version's upload state reads back, and a tracker that sends none means durable",
          "[codec]") {
  VersionInfo v;
  v.id = Id<VersionIdTag>(1);
  v.state = VersionState::kFailed;
  v.state_detail = "its publisher stopped renewing the upload";
  capnp::MallocMessageBuilder b;
  FillVersionInfo(v, b.initRoot<proto::VersionSummary>());
  CHECK(Text(b.getRoot<proto::VersionSummary>().getState()) == "failed");
  Result<VersionInfo> back = ReadVersionInfo(b.getRoot<proto::VersionSummary>().asReader());
  REQUIRE(back.ok());
  CHECK(back->state == VersionState::kFailed);
  CHECK(back->state_detail == v.state_detail);

  b.getRoot<proto::VersionSummary>().setState("");
  CHECK(ReadVersionInfo(b.getRoot<proto::VersionSummary>().asReader())->state ==
        VersionState::kDurable);
  b.getRoot<proto::VersionSummary>().setState("archived");
  CHECK_THAT(ReadVersionInfo(b.getRoot<proto::VersionSummary>().asReader()).status().message(),
             Catch::Contains("unknown version state 'archived'"));
}

TEST_CASE("records refuse version ids of the wrong size instead of dropping them", "[codec]") {
  auto bad = Short(7);
  capnp::MallocMessageBuilder b;
  auto v = b.initRoot<proto::VersionSummary>();
  v.setVersionId(kj::arrayPtr(bad.data(), bad.size()));
  Result<VersionInfo> version = ReadVersionInfo(v.asReader());
  CHECK(version.status().code() == Status::Code::kInvalidArgument);
  CHECK_THAT(version.status().message(), Catch::Contains("version id is not 32 bytes (got 7)"));

  ModelInfo m;
  m.ns = "team-a";
  m.name = "llama";
  m.tags = {{"prod", Id<VersionIdTag>(3)}};
  capnp::MallocMessageBuilder mb;
  auto model = mb.initRoot<proto::ModelSummary>();
  FillModelInfo(m, model);
  Result<ModelInfo> good = ReadModelInfo(model.asReader());
  REQUIRE(good.ok());
  CHECK_FALSE(good->latest);
  CHECK(good->tags == m.tags);
  model.getTags()[0].setVersionId(kj::arrayPtr(bad.data(), bad.size()));
  CHECK_THAT(ReadModelInfo(model.asReader()).status().message(),
             Catch::Contains("tag prod: a version id is not 32 bytes"));

  TagChange created{"team-a", "llama", "prod", std::nullopt, Id<VersionIdTag>(4), "ci", 5};
  capnp::MallocMessageBuilder tb;
  auto event = tb.initRoot<proto::TagEvent>();
  FillTagChange(created, event);
  Result<TagChange> read = ReadTagChange(event.asReader());
  REQUIRE(read.ok());
  CHECK_FALSE(read->from);
  CHECK(read->to == created.to);
  event.setFromVersion(kj::arrayPtr(bad.data(), bad.size()));
  CHECK_FALSE(ReadTagChange(event.asReader()).ok());
}

TEST_CASE("chunk id lists and need replies refuse a chunk id of the wrong size", "[codec]") {
  capnp::MallocMessageBuilder b;
  auto list = b.initRoot<proto::UploadPlan>().initUpload(2);
  SetChunkIds({Id<ChunkIdTag>(1), Id<ChunkIdTag>(2)}, list);
  Result<std::vector<ChunkId>> ids = ParseChunkIds(list.asReader());
  REQUIRE(ids.ok());
  CHECK(*ids == std::vector<ChunkId>{Id<ChunkIdTag>(1), Id<ChunkIdTag>(2)});
  auto bad = Short(31);
  list.set(1, kj::arrayPtr(bad.data(), bad.size()));
  CHECK_THAT(ParseChunkIds(list.asReader()).status().message(),
             Catch::Equals("a chunk id is not 32 bytes (got 31)"));

  NeedReply r;
  r.queued = 3;
  r.pending = 2;
  r.recent = 1;
  r.failed = {{Id<ChunkIdTag>(9), "origin said 404"}};
  capnp::MallocMessageBuilder nb;
  auto need = nb.initRoot<proto::Registry::NeedResults>();
  FillNeedReply(r, need);
  Result<NeedReply> back = ReadNeedReply(need.asReader());
  REQUIRE(back.ok());
  CHECK(back->queued == 3);
  CHECK(back->pending == 2);
  CHECK(back->recent == 1);
  CHECK(back->failed == r.failed);
  need.getFailed()[0].setChunk(kj::arrayPtr(bad.data(), bad.size()));
  CHECK_THAT(ReadNeedReply(need.asReader()).status().message(),
             Catch::Contains("failed chunk: a chunk id is not 32 bytes"));
}

TEST_CASE("an agent's stats read back as they were filled, every field distinct", "[codec]") {
  AgentStats s;
  s.cached_bytes = 1ull << 40;
  s.cached_chunks = 65537;
  s.bytes_from_peers = 3ull << 33;
  s.bytes_from_origin = 5ull << 20;
  s.bytes_to_peers = 7ull << 34;
  s.torrents = 18;
  s.peers = 299;
  s.origin_bytes_read = (5ull << 20) + 12345;
  capnp::MallocMessageBuilder b;
  FillAgentStats(s, b.initRoot<proto::AgentStats>());
  AgentStats back = ReadAgentStats(b.getRoot<proto::AgentStats>().asReader());
  CHECK(back.cached_bytes == 1ull << 40);
  CHECK(back.cached_chunks == 65537);
  CHECK(back.bytes_from_peers == 3ull << 33);
  CHECK(back.bytes_from_origin == 5ull << 20);
  CHECK(back.bytes_to_peers == 7ull << 34);
  CHECK(back.torrents == 18);
  CHECK(back.peers == 299);
  CHECK(back.origin_bytes_read == (5ull << 20) + 12345);
}
