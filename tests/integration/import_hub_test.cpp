// `shoal import hf://…` against a hub that speaks the Hugging Face hub API
// (tests/import/hub_server.py: tree pages, LFS files redirected to another
// host, a Bearer token), with a real tracker, a folder origin and an agent
// that pulls the result. What a user checks: the bytes pulled are the hub's,
// every file was read from the hub once, a second import reads nothing and
// commits the same version, and each bad answer ends the import with one
// line and no version.
#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

constexpr char kToken[] = "hf_test_token";

// The hub, serving `root` (folders org/name); stopped on destruction.
class Hub {
 public:
  Hub(const std::string& root, const std::string& dir, std::vector<std::string> flags = {}) {
    const std::string port_file = dir + "/hub.ports";
    fs::remove(port_file);  // an earlier hub's
    std::vector<std::string> argv = {"/usr/bin/python3", SHOAL_HUB_SERVER, "--root",  root,
                                     "--port-file",      port_file,        "--token", kToken};
    argv.insert(argv.end(), flags.begin(), flags.end());
    pid_ = StartProcess(argv, {}, dir + "/hub.log");
    for (int i = 0; i < 200 && Slurp(port_file).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::istringstream ports(Slurp(port_file));
    ports >> port_ >> cdn_port_;
    REQUIRE(port_ > 0);
  }
  ~Hub() {
    ::kill(pid_, SIGTERM);
    WaitProcess(pid_);
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // The plain web server beside the hub (its "CDN"): /cdn/org/name/path.
  std::string cdn() const { return "http://127.0.0.1:" + std::to_string(cdn_port_); }
  // Sends file bytes at about `rate` bytes a second from now on (0: at once).
  void Throttle(long rate) const {
    RunProcess({"/usr/bin/curl", "-sf", endpoint() + "/set-throttle?rate=" + std::to_string(rate)});
  }

  // Bytes of each file the hub and its CDN sent (one count for both).
  std::map<std::string, long> Served() const {
    std::map<std::string, long> out;
    {
      ProcessResult r = RunProcess({"/usr/bin/curl", "-sf", endpoint() + "/stats"});
      // {"a": 1, "b/c": 2}
      std::string s = r.out;
      size_t at = 0;
      while ((at = s.find('"', at)) != std::string::npos) {
        size_t end = s.find('"', at + 1);
        std::string key = s.substr(at + 1, end - at - 1);
        size_t colon = s.find(':', end);
        out[key] += std::stol(s.substr(colon + 1));
        at = s.find_first_of(",}", colon);
      }
    }
    return out;
  }

 private:
  pid_t pid_ = -1;
  int port_ = 0, cdn_port_ = 0;
};

// One agent; the CLI keeps its resume cache in `cache`, not the user's.
ClusterOptions OneAgent(const TempDir& cache) {
  ClusterOptions o;
  o.agents = 1;
  o.agents_use_origin = true;
  o.cli_env = {"XDG_CACHE_HOME=" + cache.path()};
  return o;
}

// A checkpoint as a hub holds one: two LFS shards (one over several
// pieces), a config and a tokenizer in a folder.
std::string MakeRepo(const std::string& root) {
  const std::string repo = root + "/org/tiny-model";
  WriteRandomFile(repo + "/model-00001-of-00002.safetensors", (3 << 20) + 12345, 1);
  WriteRandomFile(repo + "/model-00002-of-00002.safetensors", (1 << 20) + 7, 2);
  std::ofstream(repo + "/config.json") << "{\"model_type\": \"tiny\", \"hidden_size\": 64}\n";
  WriteRandomFile(repo + "/tokenizer/tokenizer.json", 50000, 3);
  return repo;
}

std::vector<std::string> ImportArgs(const Hub& hub, const std::string& name) {
  return {"import",        "hf://org/tiny-model",
          "--name",        name,
          "--tag",         "latest",
          "--piece-size",  "1048576",
          "--hf-endpoint", hub.endpoint(),
          "--hf-token",    kToken};
}

// The version ID on the "imported ns/model:<id>" line.
std::string ImportedId(const std::string& out) {
  size_t at = out.find("imported ");
  if (at == std::string::npos) return "";
  size_t colon = out.find(':', at);
  return out.substr(colon + 1, 64);
}

long FileSize(const std::string& path) { return static_cast<long>(fs::file_size(path)); }

// The repository's files as a URL list on the hub's second port, in path
// order: "URL path" a line.
void WriteUrlList(const Hub& hub, const std::string& repo, const std::string& list) {
  std::vector<std::string> rels;
  for (const auto& e : fs::recursive_directory_iterator(repo)) {
    if (e.is_regular_file()) rels.push_back(fs::relative(e.path(), repo).string());
  }
  std::sort(rels.begin(), rels.end());
  std::ofstream out(list);
  out << "# the checkpoint, one URL a file\n";
  for (const std::string& rel : rels) {
    out << hub.cdn() << "/cdn/org/tiny-model/" << rel << " " << rel << "\n";
  }
}

// What each file's count grew by from `before` to `after`.
std::map<std::string, long> Grown(std::map<std::string, long> after,
                                  const std::map<std::string, long>& before) {
  for (const auto& [k, v] : before) after[k] -= v;
  return after;
}

}  // namespace

TEST_CASE("a hub model is read once and pulls back byte for byte", "[import][hub]") {
  TempDir cache;
  TestCluster c(OneAgent(cache));
  const std::string repo = MakeRepo(c.tmp / "hub");
  Hub hub(c.tmp / "hub", c.tmp.path());

  ProcessResult first = c.Shoal(c.writer, ImportArgs(hub, "team-a/tiny"));
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  const std::string id = ImportedId(first.out);
  REQUIRE(id.size() == 64);
  CHECK_THAT(first.out, Catch::Contains("read 4 files"));

  // Each file came from the hub once: the source is read once.
  std::map<std::string, long> served = hub.Served();
  for (const auto& entry : fs::recursive_directory_iterator(repo)) {
    if (!entry.is_regular_file()) continue;
    const std::string rel = fs::relative(entry.path(), repo).string();
    INFO(rel);
    CHECK(served[rel] == FileSize(entry.path()));
  }

  // Pulled through an agent, checked against the BEP 52 hashes the import
  // computed, the files are the hub's.
  pid_t pull = c.StartPull(0, "team-a/tiny:latest", c.tmp / "out");
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(repo, c.tmp / "out"));

  // The version says where it came from.
  ProcessResult inspect = c.Shoal(c.reader, {"inspect", "team-a/tiny:" + id});
  INFO(inspect.out << inspect.err);
  REQUIRE(inspect.exit_code == 0);
  CHECK_THAT(inspect.out,
             Catch::Contains("imported from hf://org/tiny-model revision main commit "));
  CHECK_THAT(inspect.out, Catch::Contains("source config.json etag "));
  ProcessResult inspect_json = c.Shoal(c.reader, {"inspect", "team-a/tiny:" + id, "--json"});
  INFO(inspect_json.out << inspect_json.err);
  REQUIRE(inspect_json.exit_code == 0);
  CHECK_THAT(inspect_json.out, Catch::Contains("\"state\": \"durable\""));
  CHECK_THAT(inspect_json.out, Catch::Contains("\"tags\": [\"latest\"]"));
  CHECK_THAT(inspect_json.out, Catch::Contains("\"url\": \"hf://org/tiny-model\""));

  // Again, from another machine (an empty resume cache): nothing read,
  // nothing uploaded, the same version, found by its source commit.
  std::vector<std::string> argv = ImportArgs(hub, "team-a/tiny");
  argv.insert(argv.begin(), SHOAL_CLI_PATH);
  std::vector<std::string> env = c.CliEnv(c.writer);
  env.push_back("XDG_CACHE_HOME=" + (c.tmp / "other-machine"));
  ProcessResult again = RunProcess(argv, env);
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(ImportedId(again.out) == id);
  CHECK_THAT(again.out, Catch::Contains("(already existed)"));
  CHECK_THAT(again.out, Catch::Contains("read 0 files"));
  CHECK_THAT(again.out, Catch::Contains("uploaded 0 chunks"));
  CHECK(hub.Served() == served);

  // For scripts: one JSON document, with where the version came from.
  std::vector<std::string> json_args = ImportArgs(hub, "team-a/tiny");
  json_args.push_back("--json");
  ProcessResult json = c.Shoal(c.writer, json_args);
  INFO(json.out << json.err);
  REQUIRE(json.exit_code == 0);
  CHECK(json.out.front() == '{');
  CHECK(std::count(json.out.begin(), json.out.end(), '\n') == 1);
  CHECK_THAT(json.out, Catch::Contains("\"version\":\"" + id + "\""));
  CHECK_THAT(json.out, Catch::Contains("\"created\":false,\"state\":\"durable\""));
  CHECK_THAT(json.out, Catch::Contains("\"read_bytes\":0"));
  CHECK_THAT(json.out,
             Catch::Contains("\"source\":{\"url\":\"hf://org/tiny-model\",\"revision\":\"main\""));

  // The same folder published: the same file hashes, so the same chunks,
  // and nothing to upload; its JSON has no source.
  ProcessResult pub = c.Shoal(c.writer, {"publish", repo, "--name", "team-a/published",
                                         "--piece-size", "1048576", "--no-seed", "--json"});
  INFO(pub.out << pub.err);
  REQUIRE(pub.exit_code == 0);
  CHECK_THAT(pub.out, Catch::Contains("\"created\":true,\"state\":\"durable\""));
  CHECK_THAT(pub.out, Catch::Contains("\"uploaded_chunks\":0,"));
  CHECK(pub.out.find("\"source\"") == std::string::npos);
}

TEST_CASE("an import killed half-way reads only the files it had not finished", "[import]") {
  const bool web = GENERATE(false, true);  // the hub's API, or the same files as web URLs
  INFO((web ? "web URLs" : "hub"));
  TempDir cache;
  TestCluster c(OneAgent(cache));
  const std::string repo = MakeRepo(c.tmp / "hub");
  // The bytes trickle out at 1 MB/s: the small first file is done well
  // before the import is killed in the first shard.
  Hub hub(c.tmp / "hub", c.tmp.path(), {"--throttle", "1000000"});
  std::vector<std::string> argv = {SHOAL_CLI_PATH};
  if (web) {
    WriteUrlList(hub, repo, c.tmp / "urls.txt");
    argv.insert(argv.end(), {"import", "--from-list", c.tmp / "urls.txt", "--name", "team-a/tiny",
                             "--tag", "latest", "--piece-size", "1048576"});
  } else {
    for (const std::string& a : ImportArgs(hub, "team-a/tiny")) argv.push_back(a);
  }
  argv.insert(argv.end(), {"--parallel", "1"});  // files in path order, one at a time
  pid_t pid = StartProcess(argv, c.CliEnv(c.writer), c.tmp / "import.log");
  for (int i = 0; i < 300; ++i) {
    std::map<std::string, long> s = hub.Served();
    if (s["config.json"] > 0 && s["model-00001-of-00002.safetensors"] > (1 << 20)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(pid, SIGKILL);
  WaitProcess(pid);

  hub.Throttle(0);
  const std::map<std::string, long> before = hub.Served();
  ProcessResult r = RunProcess(argv, c.CliEnv(c.writer));
  INFO(r.out << r.err << Slurp(c.tmp / "import.log"));
  REQUIRE(r.exit_code == 0);
  // config.json was finished before the kill: the rerun did not ask for it.
  std::map<std::string, long> reread = Grown(hub.Served(), before);
  CHECK(reread["config.json"] == 0);
  CHECK(reread["model-00002-of-00002.safetensors"] ==
        FileSize(repo + "/model-00002-of-00002.safetensors"));
  CHECK_THAT(r.out, Catch::Contains("taken from an earlier import"));
  pid_t pull = c.StartPull(0, "team-a/tiny:latest", c.tmp / "out");
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(repo, c.tmp / "out"));
}

TEST_CASE("bad hub answers end the import with one line and no version", "[import][hub]") {
  TempDir cache;
  TestCluster c(OneAgent(cache));
  MakeRepo(c.tmp / "hub");
  struct Case {
    std::vector<std::string> hub_flags;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {{"--lie-sha", "model-00002-of-00002.safetensors"}, "not the"},
      {{"--truncate", "config.json"}, "config.json"},
      {{"--extra-path", "../evil"}, "contains '..'"},
      {{"--ftp-redirect", "config.json"}, "only http and https"},
  };
  for (const Case& k : cases) {
    Hub hub(c.tmp / "hub", c.tmp.path(), k.hub_flags);
    std::vector<std::string> args = ImportArgs(hub, "team-a/bad");
    args.push_back("--no-resume");  // the files good in one case are read in the next
    ProcessResult r = c.Shoal(c.writer, args);
    INFO(k.hub_flags[0] << ": " << r.out << r.err);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Catch::Contains(k.expected));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  // Without the token the hub's refusal is named, with what to do.
  Hub hub(c.tmp / "hub", c.tmp.path());
  std::vector<std::string> args = ImportArgs(hub, "team-a/bad");
  args.resize(args.size() - 2);  // no --hf-token
  ProcessResult r = c.Shoal(c.writer, args);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("HF_TOKEN"));
  CHECK_THAT(r.err, Catch::Contains("GatedRepo"));
  // A token the hub does not let in: 403, named as such.
  std::vector<std::string> wrong = args;
  wrong.push_back("--hf-token");
  wrong.push_back("hf_someone_else");
  r = c.Shoal(c.writer, wrong);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("GatedRepo") && Catch::Contains("the token is refused"));
  // An unknown revision.
  args.push_back("--hf-token");
  args.push_back(kToken);
  args[1] = "hf://org/tiny-model@v9";
  r = c.Shoal(c.writer, args);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("RevisionNotFound"));
  // Nothing was committed.
  ProcessResult ls = c.Shoal(c.reader, {"ls", "team-a/bad", "--json"});
  INFO(ls.out << ls.err);
  CHECK((ls.exit_code != 0 || ls.out.find("versionId") == std::string::npos));
}

TEST_CASE("web URLs from a list become a version, each read once", "[import][web]") {
  TempDir cache;
  TestCluster c(OneAgent(cache));
  const std::string repo = MakeRepo(c.tmp / "hub");
  Hub hub(c.tmp / "hub", c.tmp.path());
  const std::string list = c.tmp / "urls.txt";
  WriteUrlList(hub, repo, list);
  ProcessResult r = c.Shoal(c.writer, {"import", "--from-list", list, "--name", "team-a/web",
                                       "--tag", "latest", "--piece-size", "1048576"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, long> served = hub.Served();
  for (const auto& e : fs::recursive_directory_iterator(repo)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), repo).string();
    INFO(rel);
    CHECK(served[rel] == FileSize(e.path()));
  }
  pid_t pull = c.StartPull(0, "team-a/web:latest", c.tmp / "out");
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(repo, c.tmp / "out"));

  // Again: the servers' ETags say nothing changed; nothing read or uploaded.
  ProcessResult again = c.Shoal(c.writer, {"import", "--from-list", list, "--name", "team-a/web",
                                           "--tag", "latest", "--piece-size", "1048576"});
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("(already existed)"));
  CHECK_THAT(again.out, Catch::Contains("read 0 files"));
  CHECK_THAT(again.out, Catch::Contains("uploaded 0 chunks"));

  // A list may give each file's SHA-256: bytes that disagree end the import.
  std::ofstream(list) << hub.cdn() << "/cdn/org/tiny-model/config.json config.json sha256:"
                      << std::string(64, 'a') << "\n";
  ProcessResult bad =
      c.Shoal(c.writer, {"import", "--from-list", list, "--name", "team-a/web2", "--no-resume"});
  CHECK(bad.exit_code != 0);
  CHECK_THAT(bad.err, Catch::Contains("config.json") && Catch::Contains("SHA-256"));
}
