#include "read/hub_api.h"

#include <catch2/catch.hpp>

#include "shoal/sha256.h"

using namespace shoal;

namespace {

Manifest Checkpoint() {
  Manifest m;
  m.ns = "team-a";
  m.name = "llama";
  m.created_at_ms = 1767225600000;  // 2026-01-01
  FileEntry shard;
  shard.path = "model-00001.safetensors";
  shard.size = 3000000;
  shard.pieces_root.mutable_data()[0] = 0xab;
  FileEntry config;
  config.path = "config.json";
  config.size = 42;
  config.pieces_root.mutable_data()[0] = 0xcd;
  FileEntry tok;
  tok.path = "tokenizer/tokenizer.json";
  tok.size = 1000;
  FileEntry deep;
  deep.path = "tokenizer/extra/vocab.txt";
  deep.size = 10;
  m.files = {config, shard, deep, tok};
  return m;
}

}  // namespace

TEST_CASE("hub paths name a repository, a revision and a file", "[read][hub]") {
  auto r = ParseHubTarget("/api/models/team-a/llama");
  REQUIRE(r.ok());
  CHECK(r->kind == HubRequest::Kind::kModel);
  CHECK(r->org == "team-a");
  CHECK(r->name == "llama");
  CHECK(r->revision == "main");

  r = ParseHubTarget("/api/models/team-a/llama/revision/refs%2Fpr%2F1");
  REQUIRE(r.ok());
  CHECK(r->kind == HubRequest::Kind::kModel);
  CHECK(r->revision == "refs/pr/1");

  r = ParseHubTarget("/api/models/team-a/llama/tree/prod/tokenizer/extra");
  REQUIRE(r.ok());
  CHECK(r->kind == HubRequest::Kind::kTree);
  CHECK(r->revision == "prod");
  CHECK(r->path == "tokenizer/extra");

  r = ParseHubTarget("/team-a/llama/resolve/main/shards/model%2000001.safetensors");
  REQUIRE(r.ok());
  CHECK(r->kind == HubRequest::Kind::kResolve);
  CHECK(r->path == "shards/model 00001.safetensors");

  for (const char* other : {"/api/models/team-a/llama/discussions", "/api/spaces/a/b",
                            "/api/whoami-v2", "/team-a/llama/blob/main/x", "/"}) {
    INFO(other);
    auto u = ParseHubTarget(other);
    REQUIRE(u.ok());
    CHECK(u->kind == HubRequest::Kind::kUnknown);
  }
  for (const char* bad :
       {"/team-a/llama/resolve/main/../../etc/passwd", "/team-a/llama/resolve/main/a%2F..%2Fb",
        "/team-a/llama/resolve/main/%zz", "/api/models/team-a/llama/tree/main/../x"}) {
    INFO(bad);
    CHECK(!ParseHubTarget(bad).ok());
  }
}

TEST_CASE("hub revisions map to Shoal refs", "[read][hub]") {
  CHECK(*RefOfRevision("main") == "latest");
  CHECK(*RefOfRevision("prod") == "prod");
  CHECK(!RefOfRevision("refs/pr/1").ok());
  CHECK(NamespaceOfOrg({{"meta-llama", "team-a"}}, "meta-llama") == "team-a");
  CHECK(NamespaceOfOrg({{"meta-llama", "team-a"}}, "team-b") == "team-b");
}

TEST_CASE("a version's commit is its imported commit, else its ID's first 40 digits",
          "[read][hub]") {
  Manifest m = Checkpoint();
  VersionId v;
  v.mutable_data()[0] = 0x12;
  CHECK(HubCommit(m, v) == v.ToHex().substr(0, 40));
  CHECK(IsCommitSha(HubCommit(m, v)));
  m.source.commit = "0123456789abcdef0123456789abcdef01234567";
  CHECK(HubCommit(m, v) == m.source.commit);
  m.source.commit = "sha256:abc";  // an OCI digest is no hub commit
  CHECK(HubCommit(m, v) == v.ToHex().substr(0, 40));
}

TEST_CASE("files with a known SHA-256 are LFS files whose ETag is that SHA-256", "[read][hub]") {
  FileEntry f;
  f.path = "model.safetensors";
  f.size = 11;
  f.sha256 = Sha256::Of("hello world", 11);
  HubFileId id = HubFileIdOf(f);
  CHECK(id.lfs);
  CHECK(id.sha256 == "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9");
  CHECK(id.ETag() == "\"" + id.sha256 + "\"");
  // The Git blob ID of the file's LFS pointer, as the hub's tree shows it.
  CHECK(id.oid.size() == 40);

  // A file a hub kept in Git keeps its blob ID.
  f.source_etag = "95d09f2b10159347eece71399a7e2e907ea3df4f";
  id = HubFileIdOf(f);
  CHECK(!id.lfs);
  CHECK(id.ETag() == "\"95d09f2b10159347eece71399a7e2e907ea3df4f\"");

  FileEntry empty;
  empty.path = "empty";
  CHECK(HubFileIdOf(empty).lfs);
  CHECK(HubFileIdOf(empty).sha256 ==
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");

  FileEntry published;
  published.path = "a";
  published.size = 5;
  published.pieces_root.mutable_data()[0] = 0xab;
  CHECK(!HubFileIdOf(published).lfs);
  CHECK(HubFileIdOf(published).oid == published.pieces_root.ToHex().substr(0, 40));
}

TEST_CASE("the model answer lists every file, with sizes and LFS pointers on request",
          "[read][hub]") {
  Manifest m = Checkpoint();
  m.files[1].sha256 = Sha256::Of("x", 1);
  VersionId v;
  std::string plain = HubModelJson("team-a/llama", m, v, false);
  CHECK(plain.find("\"id\":\"team-a/llama\"") != std::string::npos);
  CHECK(plain.find("\"sha\":\"" + v.ToHex().substr(0, 40) + "\"") != std::string::npos);
  CHECK(plain.find("{\"rfilename\":\"tokenizer/extra/vocab.txt\"}") != std::string::npos);
  CHECK(plain.find("\"size\"") == std::string::npos);
  std::string blobs = HubModelJson("team-a/llama", m, v, true);
  CHECK(blobs.find("\"size\":3000000,\"lfs\":{\"sha256\":\"" + m.files[1].sha256->ToHex()) !=
        std::string::npos);
  CHECK(blobs.find("\"lastModified\":\"2026-01-01T00:00:00.000Z\"") != std::string::npos);
}

TEST_CASE("the tree lists a folder's children, or everything under it, in pages", "[read][hub]") {
  Manifest m = Checkpoint();
  auto top = HubTree(m, "", false, "", 100);
  REQUIRE(top.ok());
  CHECK(top->entries == 3);  // config.json, model-00001.safetensors, tokenizer/
  CHECK(top->json.find("{\"type\":\"directory\"") != std::string::npos);
  CHECK(top->json.find("vocab.txt") == std::string::npos);
  CHECK(top->cursor.empty());

  auto all = HubTree(m, "", true, "", 100);
  REQUIRE(all.ok());
  CHECK(all->entries == 6);  // 4 files, tokenizer/ and tokenizer/extra/

  auto sub = HubTree(m, "tokenizer", false, "", 100);
  REQUIRE(sub.ok());
  CHECK(sub->entries == 2);  // tokenizer/extra/, tokenizer/tokenizer.json
  CHECK(sub->json.find("\"path\":\"tokenizer/extra\"") != std::string::npos);

  // Pages of two, joined, are the whole listing.
  std::string joined;
  std::string cursor;
  size_t pages = 0, entries = 0;
  do {
    auto page = HubTree(m, "", true, cursor, 2);
    REQUIRE(page.ok());
    ++pages;
    entries += page->entries;
    joined += page->json;
    cursor = page->cursor;
  } while (!cursor.empty());
  CHECK(pages == 3);
  CHECK(entries == 6);

  CHECK(HubTree(m, "nope", false, "", 100).status().code() == Status::Code::kNotFound);
  CHECK(HubTree(m, "", false, "!!!", 100).status().code() == Status::Code::kInvalidArgument);
}

namespace {
const std::string kPathsCommit(40, 'a');
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
  m.empty_dirs = {"logs"};
  HubPathsQuery q;
  q.paths = {"tokenizer", "missing.bin", "config.json", "logs", "config.json", "tokenizer/tok"};
  std::string json = HubPathsInfo(m, q, kPathsCommit);
  CHECK(json == "[" + HubFolderEntryJson("tokenizer") + "," + HubFileEntryJson(m.files[0]) + "," +
                    HubFolderEntryJson("logs") + "]");
  CHECK(json.find("\"type\":\"file\",\"oid\":\"cd") != std::string::npos);
  CHECK(json.find("\"size\":42,\"path\":\"config.json\"") != std::string::npos);
  CHECK(json.find("lastCommit") == std::string::npos);

  q.paths = {"tokenizer/tokenizer.json"};
  q.expand = true;
  json = HubPathsInfo(m, q, kPathsCommit);
  CHECK(json.find("\"path\":\"tokenizer/tokenizer.json\"") != std::string::npos);
  CHECK(json.find("\"lastCommit\":{\"id\":\"" + kPathsCommit + "\"") != std::string::npos);
  CHECK(json.find("\"date\":\"2026-01-01T00:00:00.000Z\"") != std::string::npos);
  CHECK(json.find("\"securityFileStatus\":{\"status\":\"unscanned\"}}]") != std::string::npos);

  q.paths = {"nothing", "here"};
  CHECK(HubPathsInfo(m, q, kPathsCommit) == "[]");
}
