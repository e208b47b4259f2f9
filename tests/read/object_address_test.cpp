#include "read/object_address.h"

#include <catch2/catch.hpp>

using namespace shoal;

TEST_CASE("plain paths name a model, a tag and a file or the manifest", "[read][address]") {
  auto a = ParsePlainPath("/v1/models/team-a/llama:latest/files/shards/model-00001.safetensors");
  REQUIRE(a.ok());
  CHECK(a->ns == "team-a");
  CHECK(a->name == "llama");
  CHECK(a->ref == "latest");
  CHECK(a->path == "shards/model-00001.safetensors");
  CHECK(!a->manifest);

  auto m = ParsePlainPath("/v1/models/team-a/llama:0123abcd/manifest");
  REQUIRE(m.ok());
  CHECK(m->manifest);
  CHECK(m->ref == "0123abcd");
}

TEST_CASE("plain paths with traversal or bad parts are refused", "[read][address]") {
  for (const char* bad :
       {"/v1/models/team-a/llama:latest/files/../../etc/passwd",
        "/v1/models/team-a/llama:latest/files/a/./b", "/v1/models/team-a/llama:latest/files//abs",
        "/v1/models/team-a/llama:latest/files/", "/v1/models/../llama:latest/files/x",
        "/v1/models/Team/llama:latest/files/x", "/v1/models/team-a/llama/files/x",
        "/v1/models/team-a/llama:lat$est/files/x", "/v1/models/team-a/llama:latest/other/x",
        "/v2/models/team-a/llama:latest/files/x"}) {
    INFO(bad);
    auto r = ParsePlainPath(bad);
    REQUIRE(!r.ok());
    CHECK(r.status().code() == Status::Code::kInvalidArgument);
  }
}

TEST_CASE("S3 paths split into bucket and key, and keys into model, tag and path",
          "[read][address]") {
  auto p = ParseS3Path("/team-a/llama/latest/config.json");
  REQUIRE(p.ok());
  CHECK(p->bucket == "team-a");
  CHECK(p->key == "llama/latest/config.json");
  auto bucket_only = ParseS3Path("/team-a");
  REQUIRE(bucket_only.ok());
  CHECK(bucket_only->key.empty());
  CHECK(!ParseS3Path("/").ok());

  auto k = ParseS3Key("team-a", "llama/latest/a/b.bin");
  REQUIRE(k.ok());
  CHECK(k->name == "llama");
  CHECK(k->ref == "latest");
  CHECK(k->path == "a/b.bin");
}

TEST_CASE("S3 keys that name no file are missing, and traversal is a bad request",
          "[read][address]") {
  CHECK(ParseS3Key("team-a", "llama").status().IsNotFound());
  CHECK(ParseS3Key("team-a", "llama/latest/").status().IsNotFound());
  CHECK(ParseS3Key("team-a", "llama/latest/../x").status().code() ==
        Status::Code::kInvalidArgument);
  CHECK(ParseS3Key("team-a", "../latest/x").status().code() == Status::Code::kInvalidArgument);
  CHECK(ParseS3Key("team-a", "llama/latest/a//b").status().code() ==
        Status::Code::kInvalidArgument);
}

TEST_CASE(
    "a Host of {bucket}.{endpoint} names the bucket, while IPs and plain hosts are path-style",
    "[read][address]") {
  const std::vector<std::string> suffixes = {"localhost"};
  CHECK(VirtualHostBucket("team-a.localhost:9000", suffixes) == "team-a");
  CHECK(VirtualHostBucket("team-a.s3.localhost:9000", suffixes) == "team-a");
  CHECK(VirtualHostBucket("Team-A.S3.Example.Internal", suffixes) == "team-a");
  CHECK(VirtualHostBucket("team-a.agents.internal", {"agents.internal"}) == "team-a");
  for (const char* plain :
       {"127.0.0.1:9000", "localhost:9000", "localhost", "[::1]:9000", "10.1.2.3",
        "shoal-agent.shoal.svc.cluster.local:9000", "s3.example.com", "agent.svc:80",
        "-dash.localhost", "", ".localhost"}) {
    INFO(plain);
    CHECK(VirtualHostBucket(plain, suffixes).empty());
  }
}

TEST_CASE("a virtual-host request's whole path is its key, and '/' on a plain host is the service",
          "[read][address]") {
  const std::vector<std::string> suffixes = {"localhost"};
  auto v = ParseS3Target("team-a.localhost:9000", "/llama/latest/config.json", suffixes);
  REQUIRE(v.ok());
  CHECK(v->bucket == "team-a");
  CHECK(v->key == "llama/latest/config.json");
  auto bucket = ParseS3Target("team-a.localhost:9000", "/", suffixes);
  REQUIRE(bucket.ok());
  CHECK(bucket->bucket == "team-a");
  CHECK(bucket->key.empty());

  auto path = ParseS3Target("127.0.0.1:9000", "/team-a/llama/latest/config.json", suffixes);
  REQUIRE(path.ok());
  CHECK(path->bucket == "team-a");
  CHECK(path->key == "llama/latest/config.json");
  auto service = ParseS3Target("localhost:9000", "/", suffixes);
  REQUIRE(service.ok());
  CHECK(service->bucket.empty());
  CHECK(!ParseS3Target("localhost:9000", "", suffixes).ok());
}
