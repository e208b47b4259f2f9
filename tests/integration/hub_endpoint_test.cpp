// The agent's hub face (--hub-listen): a client that follows the Hugging
// Face hub's protocol step by step (hub_client.py: revision, tree pages,
// HEAD without following redirects, GET resumed by Range) reads a published
// version and an imported one through an agent that holds neither, with a
// real tracker and peers. What a user checks: the bytes are the published
// ones; the commit and ETags are the same on every call and for every way
// of naming the version; an imported model answers exactly as the hub it
// came from; and each error is the one the hub's clients expect.
#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

constexpr char kHubToken[] = "hf_test_token";

// Two agents with the hub API; with `origin`, they may read the origin.
ClusterOptions TwoAgents(bool origin = true) {
  ClusterOptions o;
  o.agents = 2;
  o.agents_use_origin = origin;
  o.agent_flags = {"--hub-listen", "127.0.0.1:0", "--read-cache-ms", "0"};
  return o;
}

std::string Endpoint(const AgentProcess& agent) {
  return "http://127.0.0.1:" + std::to_string(agent.hub_port());
}

// hub_client.py's JSON, or the test fails with its error line (and the
// log of `agent`, if given).
std::string ReadThroughHub(const std::string& endpoint, const std::string& repo,
                           const std::string& revision, const std::string& token,
                           const std::string& out, std::vector<std::string> flags = {},
                           const AgentProcess* agent = nullptr) {
  std::vector<std::string> argv = {
      "/usr/bin/python3", SHOAL_HUB_CLIENT, "--endpoint", endpoint, "--repo", repo,
      "--revision",       revision,         "--token",    token,    "--out",  out};
  argv.insert(argv.end(), flags.begin(), flags.end());
  ProcessResult r = RunProcess(argv);
  INFO(repo << "@" << revision << ": " << r.err);
  INFO((r.exit_code != 0 && agent != nullptr ? agent->log() : std::string()));
  REQUIRE(r.exit_code == 0);
  return r.out;
}

// The value of "key": "..." in the client's JSON.
std::string Field(const std::string& json, const std::string& key) {
  const std::string at = "\"" + key + "\": \"";
  size_t from = json.find(at);
  if (from == std::string::npos) return "";
  from += at.size();
  return json.substr(from, json.find('"', from) - from);
}

// The "files" object of the client's JSON: every file's etag, size,
// SHA-256 and the commits the calls for it gave.
std::string Files(const std::string& json) {
  size_t from = json.find("\"files\": ");
  size_t to = json.find(", \"pages\": ");
  REQUIRE(from != std::string::npos);
  return json.substr(from, to - from);
}

// A checkpoint folder: a shard over several pieces, a config, a tokenizer
// in a folder and an empty file.
void MakeCheckpoint(const std::string& dir, int seed) {
  WriteRandomFile(dir + "/model-00001-of-00001.safetensors", (3 << 20) + 12345, seed);
  std::ofstream(dir + "/config.json") << "{\"model_type\": \"tiny\", \"seed\": " << seed << "}\n";
  WriteRandomFile(dir + "/tokenizer/tokenizer.json", 50000, seed + 1);
  std::ofstream(dir + "/tokenizer/added_tokens.json").flush();
}

void RequireSameTree(const std::string& a, const std::string& b) {
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), a).string();
    INFO(rel);
    REQUIRE(Slurp(b + "/" + rel) == Slurp(e.path().string()));
  }
}

// The hub's test double (hub_server.py) serving `root`, for imports.
class FakeHub {
 public:
  FakeHub(const std::string& root, const std::string& dir) {
    const std::string port_file = dir + "/hub.ports";
    pid_ = StartProcess({"/usr/bin/python3", SHOAL_HUB_SERVER, "--root", root, "--port-file",
                         port_file, "--token", kHubToken},
                        {}, dir + "/hub.log");
    for (int i = 0; i < 200 && Slurp(port_file).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::istringstream(Slurp(port_file)) >> port_;
    REQUIRE(port_ > 0);
  }
  ~FakeHub() {
    ::kill(pid_, SIGTERM);
    WaitProcess(pid_);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
};

}  // namespace

TEST_CASE("a published version reads through the hub protocol, the same on every call") {
  TestCluster cluster(TwoAgents(/*origin=*/false));
  const std::string src = cluster.tmp.path() + "/ckpt";
  MakeCheckpoint(src, 7);
  ProcessResult pub = cluster.Publish(src, "team-a/hubmodel", 0);
  INFO(pub.out << pub.err);
  REQUIRE(pub.exit_code == 0);
  const std::string id = PublishedVersionId(pub);
  REQUIRE(id.size() == 64);

  // Agent 1 holds nothing and may not read the origin: the bytes come from
  // agent 0, the publisher's, as they are read.
  const std::string hub = Endpoint(*cluster.agents[1]);
  const std::string first =
      ReadThroughHub(hub, "team-a/hubmodel", "main", cluster.reader, cluster.tmp.path() + "/one",
                     {"--page-limit", "2", "--resume-at", "1000000"});
  RequireSameTree(src, cluster.tmp.path() + "/one");
  CHECK(Field(first, "sha") == id.substr(0, 40));
  CHECK(first.find("\"pages\": 1,") == std::string::npos);  // several tree pages
  CHECK(cluster.OriginBytes() == 0);

  // The same commit, ETags and bytes by tag, by version ID, by commit and
  // whole, now that the version is warm.
  for (const std::string& rev : {std::string("latest"), id, id.substr(0, 40)}) {
    const std::string again = ReadThroughHub(hub, "team-a/hubmodel", rev, cluster.reader,
                                             cluster.tmp.path() + "/again-" + rev.substr(0, 6));
    CHECK(Field(again, "sha") == id.substr(0, 40));
    CHECK(Files(again) == Files(first));
  }
}

TEST_CASE("an imported model answers as the hub it came from") {
  TempDir cli_cache;  // the import's resume records, not the user's
  ClusterOptions o = TwoAgents();
  o.cli_env = {"XDG_CACHE_HOME=" + cli_cache.path()};
  TestCluster cluster(o);
  const std::string root = cluster.tmp.path() + "/hub";
  const std::string repo = root + "/org/tiny-model";
  MakeCheckpoint(repo, 11);
  FakeHub origin_hub(root, cluster.tmp.path());
  ProcessResult imp =
      cluster.Shoal(cluster.writer, {"import", "hf://org/tiny-model", "--name", "team-a/tiny-model",
                                     "--tag", "latest", "--piece-size", "1048576", "--hf-endpoint",
                                     origin_hub.endpoint(), "--hf-token", kHubToken});
  INFO(imp.out << imp.err);
  REQUIRE(imp.exit_code == 0);

  const std::string there = ReadThroughHub(origin_hub.endpoint(), "org/tiny-model", "main",
                                           kHubToken, cluster.tmp.path() + "/from-hub");
  const std::string here =
      ReadThroughHub(Endpoint(*cluster.agents[1]), "team-a/tiny-model", "main", cluster.reader,
                     cluster.tmp.path() + "/from-shoal", {"--resume-at", "1000000"});
  RequireSameTree(repo, cluster.tmp.path() + "/from-shoal");
  // The hub's commit; its LFS SHA-256s and Git blob IDs as ETags.
  CHECK(Field(here, "sha") == Field(there, "sha"));
  CHECK(Files(here) == Files(there));

  // An agent that never answered for it finds the version by that commit.
  AgentProcess& fresh = cluster.AddAgent();
  const std::string by_commit =
      ReadThroughHub(Endpoint(fresh), "team-a/tiny-model", Field(there, "sha"), cluster.reader,
                     cluster.tmp.path() + "/by-commit", {}, &fresh);
  CHECK(Files(by_commit) == Files(there));
}

TEST_CASE("hub errors are the ones the hub's clients expect") {
  TestCluster cluster(TwoAgents());
  const std::string src = cluster.tmp.path() + "/ckpt";
  MakeCheckpoint(src, 3);
  ProcessResult pub = cluster.Publish(src, "team-a/hubmodel", 0);
  REQUIRE(pub.exit_code == 0);
  const std::string hub = Endpoint(*cluster.agents[1]);
  const std::vector<std::string> auth = {"-H", "Authorization: Bearer " + cluster.reader};
  auto get = [&](const std::string& path, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = auth;
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(hub + path);
    return cluster.Curl(args);
  };

  CurlAnswer a = get("/api/models/team-a/nope");
  CHECK(a.status == 404);
  CHECK(a.headers["x-error-code"] == "RepoNotFound");
  a = get("/api/models/team-a/hubmodel/revision/v9");
  CHECK(a.status == 404);
  CHECK(a.headers["x-error-code"] == "RevisionNotFound");
  a = get("/api/models/team-a/hubmodel/revision/refs%2Fpr%2F1");
  CHECK(a.status == 404);
  CHECK(a.headers["x-error-code"] == "RevisionNotFound");
  a = get("/team-a/hubmodel/resolve/main/missing.bin");
  CHECK(a.status == 404);
  CHECK(a.headers["x-error-code"] == "EntryNotFound");
  a = get("/team-a/hubmodel/resolve/main/..%2Fetc%2Fpasswd");
  CHECK(a.status == 400);
  a = get("/api/models/team-a/hubmodel/tree/main/no-such-folder");
  CHECK(a.status == 404);
  CHECK(a.headers["x-error-code"] == "EntryNotFound");
  // Calls the hub has and Shoal does not: a clean 404 the clients skip.
  a = get("/api/models/team-a/hubmodel/discussions");
  CHECK(a.status == 404);
  CHECK(a.body.find("error") != std::string::npos);
  // Ranges: 206 inside the file, 416 past its end.
  a = get("/team-a/hubmodel/resolve/main/config.json", {"-H", "Range: bytes=2-5"});
  CHECK(a.status == 206);
  CHECK(a.body == Slurp(src + "/config.json").substr(2, 4));
  CHECK(a.headers.count("x-xet-hash") == 0);
  a = get("/team-a/hubmodel/resolve/main/config.json", {"-H", "Range: bytes=99999-"});
  CHECK(a.status == 416);
  // paths-info as the Python client posts it (a form), and bad bodies.
  const std::string paths_info = "/api/models/team-a/hubmodel/paths-info/main";
  a = get(paths_info, {"--data", "paths=config.json&paths=tokenizer&paths=nope&expand=True"});
  CHECK(a.status == 200);
  CHECK(a.body.find("\"type\":\"file\"") != std::string::npos);
  CHECK(a.body.find("\"path\":\"config.json\"") != std::string::npos);
  CHECK(a.body.find("\"type\":\"directory\"") != std::string::npos);
  CHECK(a.body.find("nope") == std::string::npos);
  CHECK(a.body.find("\"lastCommit\":{\"id\":\"" + a.headers["x-repo-commit"]) != std::string::npos);
  a = get(paths_info, {"--data", "paths=..%2Fetc%2Fpasswd"});
  CHECK(a.status == 400);
  a = get(paths_info, {"-H", "Content-Type: application/json", "--data", "{\"paths\": ["});
  CHECK(a.status == 400);
  CHECK(a.body.find("not the JSON expected") != std::string::npos);
  a = get(paths_info);  // a GET of the POST call: not a call the agent has
  CHECK(a.status == 404);

  // No token, and a token of another team.
  a = cluster.Curl({hub + "/api/models/team-a/hubmodel"});
  CHECK(a.status == 401);
  CHECK(a.headers["x-error-code"] == "GatedRepo");
  const std::string other = cluster.tracker.MintToken("team-b", "read", "pod-b");
  a = cluster.Curl({"-H", "Authorization: Bearer " + other, hub + "/api/models/team-a/hubmodel"});
  CHECK(a.status == 403);
  CHECK(a.headers["x-error-code"] == "GatedRepo");

  // A tag that moves between calls: main names the new version, and the
  // commit a client already holds still reads the old bytes.
  a = get("/api/models/team-a/hubmodel");
  const std::string old_sha = a.headers["x-repo-commit"];
  REQUIRE(old_sha.size() == 40);
  std::ofstream(src + "/config.json") << "{\"model_type\": \"tiny\", \"moved\": true}\n";
  REQUIRE(cluster.Publish(src, "team-a/hubmodel", 0).exit_code == 0);
  a = get("/api/models/team-a/hubmodel");
  CHECK(a.headers["x-repo-commit"].size() == 40);
  CHECK(a.headers["x-repo-commit"] != old_sha);
  a = get("/team-a/hubmodel/resolve/main/config.json");
  CHECK(a.body == Slurp(src + "/config.json"));
  a = get("/team-a/hubmodel/resolve/" + old_sha + "/config.json");
  CHECK(a.status == 200);
  CHECK(a.body.find("moved") == std::string::npos);
  CHECK(a.headers["x-repo-commit"] == old_sha);
}

TEST_CASE("the hub's JavaScript client lists and downloads a Shoal model") {
  const std::string js = std::string(SHOAL_HUB_JS) + "/read_model.mjs";
  INFO("deploy/install-deps.sh --test installs @huggingface/hub into " << SHOAL_HUB_JS);
  REQUIRE(fs::exists(std::string(SHOAL_HUB_JS) + "/node_modules/@huggingface/hub/package.json"));
  TestCluster cluster(TwoAgents());
  const std::string src = cluster.tmp.path() + "/ckpt";
  MakeCheckpoint(src, 5);
  fs::remove(src + "/tokenizer/added_tokens.json");  // the client sizes files by Range 0-0
  REQUIRE(cluster.Publish(src, "team-a/hubmodel", 0).exit_code == 0);
  const std::string out = cluster.tmp.path() + "/js";
  // The client insists on the hub's token prefix: hf_ before a Shoal token.
  ProcessResult r = RunProcess({"/usr/bin/env", "node", js, Endpoint(*cluster.agents[1]),
                                "team-a/hubmodel", "main", "hf_" + cluster.reader, out});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("\"name\":\"team-a/hubmodel\"") != std::string::npos);
  CHECK(r.out.find("tokenizer/tokenizer.json") != std::string::npos);
  RequireSameTree(src, out);
  // paths-info: each file as the tree listed it, the folder, and nothing
  // for the path that is not there.
  const std::string files = r.out.substr(0, r.out.find("\"paths\":"));
  const std::string paths = r.out.substr(files.size());
  const std::string config = "{\"size\":" + std::to_string(fs::file_size(src + "/config.json"));
  CHECK(files.find("\"config.json\":" + config) != std::string::npos);
  CHECK(paths.find("\"config.json\":{\"type\":\"file\",\"size\":" +
                   std::to_string(fs::file_size(src + "/config.json"))) != std::string::npos);
  CHECK(paths.find("\"tokenizer\":{\"type\":\"directory\"") != std::string::npos);
  CHECK(paths.find("no/such/file") == std::string::npos);
  CHECK(paths.find("\"commit\":\"") != std::string::npos);
}

TEST_CASE("another cluster imports a model through an agent's hub API") {
  TestCluster here(TwoAgents(/*origin=*/false));
  const std::string src = here.tmp.path() + "/ckpt";
  MakeCheckpoint(src, 9);
  ProcessResult pub = here.Publish(src, "team-a/hubmodel", 0);
  REQUIRE(pub.exit_code == 0);
  const std::string id = PublishedVersionId(pub);

  TempDir cli_cache;
  ClusterOptions o = TwoAgents();
  o.cli_env = {"XDG_CACHE_HOME=" + cli_cache.path()};
  TestCluster there(o);
  const std::vector<std::string> import = {"import",        "hf://team-a/hubmodel@main",
                                           "--name",        "team-a/copied",
                                           "--tag",         "latest",
                                           "--piece-size",  "1048576",
                                           "--hf-endpoint", Endpoint(*here.agents[1]),
                                           "--hf-token",    here.reader};
  ProcessResult first = there.Shoal(there.writer, import);
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  // The source's commit is the published version's.
  CHECK(first.out.find("commit " + id.substr(0, 40)) != std::string::npos);
  const std::string copy = ReadThroughHub(Endpoint(*there.agents[1]), "team-a/copied", "main",
                                          there.reader, there.tmp.path() + "/copy");
  RequireSameTree(src, there.tmp.path() + "/copy");
  // Read again, through the first cluster's hub: the same files answer the
  // same way in both clusters.
  const std::string original = ReadThroughHub(Endpoint(*here.agents[1]), "team-a/hubmodel", "main",
                                              here.reader, here.tmp.path() + "/original");
  CHECK(Field(copy, "sha") == Field(original, "sha"));
  CHECK(Files(copy) == Files(original));
  // A second import finds the same version: nothing is uploaded again.
  ProcessResult second = there.Shoal(there.writer, import);
  INFO(second.out << second.err);
  REQUIRE(second.exit_code == 0);
  CHECK(second.out.find("uploaded 0 chunks") != std::string::npos);
}
