// The hub face's paths-info call: its target, both body forms the hub's
// clients send, bad bodies, and the answer's entries.
#include <catch2/catch.hpp>

#include "read/hub_api.h"

using namespace shoal;

namespace {

Manifest Checkpoint() {
  Manifest m;
  m.ns = "team-a";
  m.name = "llama";
  m.created_at_ms = 1767225600000;  // 2026-01-01
  FileEntry config;
  config.path = "config.json";
  config.size = 42;
  config.pieces_root.mutable_data()[0] = 0xcd;
  FileEntry tok;
  tok.path = "tokenizer/tokenizer.json";
  tok.size = 1000;
  tok.pieces_root.mutable_data()[0] = 0xef;
  m.files = {config, tok};
  m.empty_dirs = {"logs"};
  return m;
}

const std::string kCommit(40, 'a');

}  // namespace

TEST_CASE("paths-info is a POST under the model's API path", "[read][hub]") {
  auto r = ParseHubTarget("/api/models/team-a/llama/paths-info/main");
  REQUIRE(r.ok());
  CHECK(r->kind == HubRequest::Kind::kPathsInfo);
  CHECK(r->revision == "main");
  r = ParseHubTarget("/api/models/team-a/llama/paths-info/refs%2Fpr%2F1");
  REQUIRE(r.ok());
  CHECK(r->revision == "refs/pr/1");
  CHECK(ParseHubTarget("/api/models/team-a/llama/paths-info")->kind == HubRequest::Kind::kUnknown);
}

TEST_CASE("paths-info reads the JavaScript client's JSON and the Python client's form",
          "[read][hub]") {
  auto js = ParseHubPathsBody("application/json",
                              R"({"paths":["config.json","tokenizer/"],"expand":true})");
  REQUIRE(js.ok());
  CHECK(js->paths == std::vector<std::string>{"config.json", "tokenizer"});
  CHECK(js->expand);
  js = ParseHubPathsBody("application/json; charset=utf-8", R"({"paths":["a b.txt"]})");
  REQUIRE(js.ok());
  CHECK(js->paths == std::vector<std::string>{"a b.txt"});
  CHECK_FALSE(js->expand);

  auto form = ParseHubPathsBody("application/x-www-form-urlencoded",
                                "paths=config.json&paths=a+b%2Fc.txt&expand=True");
  REQUIRE(form.ok());
  CHECK(form->paths == std::vector<std::string>{"config.json", "a b/c.txt"});
  CHECK(form->expand);
  // requests sends no Content-Type for an empty form; nothing is asked.
  form = ParseHubPathsBody("", "");
  REQUIRE(form.ok());
  CHECK(form->paths.empty());
}

TEST_CASE("a bad paths-info body is one clear error", "[read][hub]") {
  struct Bad {
    const char* type;
    std::string body;
    const char* says;
  };
  std::string many = "paths=a";
  for (size_t i = 0; i < kHubMaxPaths; ++i) many += "&paths=a";
  for (const Bad& b : std::vector<Bad>{
           {"application/json", "{\"paths\": [", "not the JSON expected"},
           {"application/json", "{\"paths\": \"config.json\"}", "not the JSON expected"},
           {"application/x-www-form-urlencoded", "paths=%zz", "malformed %-escape"},
           {"application/x-www-form-urlencoded", "paths=../etc/passwd", ".."},
           {"application/json", "{\"paths\": [\"/etc/passwd\"]}", ""},
           {"application/x-www-form-urlencoded", many, "at most 10000 paths"},
       }) {
    INFO(b.body.substr(0, 60));
    auto r = ParseHubPathsBody(b.type, b.body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kInvalidArgument);
    CHECK(r.status().message().find(b.says) != std::string::npos);
  }
}

TEST_CASE("paths-info answers the files and folders asked, in order, once each", "[read][hub]") {
  Manifest m = Checkpoint();
  HubPathsQuery q;
  q.paths = {"tokenizer", "missing.bin", "config.json", "logs", "config.json", "tokenizer/tok"};
  std::string json = HubPathsInfo(m, q, kCommit);
  CHECK(json == "[" + HubFolderEntryJson("tokenizer") + "," + HubFileEntryJson(m.files[0]) + "," +
                    HubFolderEntryJson("logs") + "]");
  CHECK(json.find("\"type\":\"file\",\"oid\":\"cd") != std::string::npos);
  CHECK(json.find("\"size\":42,\"path\":\"config.json\"") != std::string::npos);
  CHECK(json.find("lastCommit") == std::string::npos);

  q.paths = {"tokenizer/tokenizer.json"};
  q.expand = true;
  json = HubPathsInfo(m, q, kCommit);
  CHECK(json.find("\"path\":\"tokenizer/tokenizer.json\"") != std::string::npos);
  CHECK(json.find("\"lastCommit\":{\"id\":\"" + kCommit + "\"") != std::string::npos);
  CHECK(json.find("\"date\":\"2026-01-01T00:00:00.000Z\"") != std::string::npos);
  CHECK(json.find("\"securityFileStatus\":{\"status\":\"unscanned\"}}]") != std::string::npos);

  q.paths = {"nothing", "here"};
  CHECK(HubPathsInfo(m, q, kCommit) == "[]");
}
