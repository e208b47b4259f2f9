// `shoal import oci://…` from Debian's docker-registry (the CNCF
// distribution registry), started per test with basic auth, holding
// ModelPack artifacts pushed by tests/integration/oci_push.py through the
// distribution API: one .raw layer per file, or one .tar layer. The bytes
// pull back identical, a second import uploads nothing, a byte corrupted in
// the registry's storage is caught by the layer's digest, and a registry
// that wants credentials says so.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

constexpr char kUser[] = "trainer";
constexpr char kPassword[] = "s3cret-pw";

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

// docker-registry on a free port with htpasswd (bcrypt) basic auth.
class Registry {
 public:
  explicit Registry(const std::string& dir) : dir_(dir) {
    fs::create_directories(dir);
    port_ = FreePort();
    ProcessResult pw = RunProcess({"/usr/bin/htpasswd", "-Bbn", kUser, kPassword});
    REQUIRE(pw.exit_code == 0);
    std::ofstream(dir + "/htpasswd") << pw.out;
    std::ofstream(dir + "/config.yml")
        << "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: " << dir
        << "/data\nhttp:\n  addr: 127.0.0.1:" << port_
        << "\nauth:\n  htpasswd:\n    realm: shoal-test\n    path: " << dir << "/htpasswd\n";
    pid_ = StartProcess({"/usr/bin/docker-registry", "serve", dir + "/config.yml"}, {},
                        dir + "/registry.log");
    for (int i = 0; i < 100; ++i) {
      ProcessResult r = RunProcess(
          {"/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", url() + "/v2/"});
      if (r.out == "401") return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL("docker-registry did not start: " << Slurp(dir + "/registry.log"));
  }
  ~Registry() {
    ::kill(pid_, SIGTERM);
    WaitProcess(pid_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string host() const { return "127.0.0.1:" + std::to_string(port_); }

  // Pushes `folder` as repo:tag; returns the manifest digest.
  std::string Push(const std::string& repo, const std::string& tag, const std::string& folder,
                   bool tar = false) {
    std::vector<std::string> argv = {
        "/usr/bin/python3", SHOAL_OCI_PUSH, url(),        repo,     tag, folder,
        "--user",           kUser,          "--password", kPassword};
    if (tar) argv.push_back("--tar");
    ProcessResult r = RunProcess(argv);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r.out.substr(0, r.out.find('\n'));
  }

  // The file the registry keeps a blob in.
  std::string BlobFile(const std::string& digest) const {
    const std::string hex = digest.substr(7);
    return dir_ + "/data/docker/registry/v2/blobs/sha256/" + hex.substr(0, 2) + "/" + hex + "/data";
  }

 private:
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

std::string MakeModel(const std::string& dir) {
  WriteRandomFile(dir + "/model.safetensors", (2 << 20) + 4321, 21);
  std::ofstream(dir + "/config.json") << "{\"model_type\": \"tiny\"}\n";
  WriteRandomFile(dir + "/tokenizer/tokenizer.json", 30000, 22);
  return dir;
}

ClusterOptions OneAgent(const TempDir& cache) {
  ClusterOptions o;
  o.agents = 1;
  o.agents_use_origin = true;
  o.cli_env = {"XDG_CACHE_HOME=" + cache.path()};
  return o;
}

std::vector<std::string> ImportArgs(const std::string& source, const std::string& name) {
  return {"import",
          source,
          "--name",
          name,
          "--tag",
          "latest",
          "--piece-size",
          "1048576",
          "--oci-plain-http",
          "--oci-username",
          kUser,
          "--oci-password",
          kPassword};
}

}  // namespace

TEST_CASE("a ModelPack artifact becomes a version, read once, by tag or digest", "[import][oci]") {
  TempDir cache;
  TestCluster c(OneAgent(cache));
  Registry reg(c.tmp / "registry");
  const std::string model = MakeModel(c.tmp / "model");
  const std::string digest = reg.Push("models/tiny", "v1", model);

  const std::string source = "oci://" + reg.host() + "/models/tiny:v1";
  ProcessResult r = c.Shoal(c.writer, ImportArgs(source, "team-a/oci"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("read 3 files"));
  CHECK_THAT(r.out, Catch::Contains("(commit " + digest + ")"));
  pid_t pull = c.StartPull(0, "team-a/oci:latest", c.tmp / "out");
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(model, c.tmp / "out"));

  // By digest, with no resume cache: the same files, found in the version
  // imported from the same manifest, and nothing uploaded.
  std::vector<std::string> argv =
      ImportArgs("oci://" + reg.host() + "/models/tiny@" + digest, "team-a/oci");
  argv.insert(argv.begin(), SHOAL_CLI_PATH);
  std::vector<std::string> env = c.CliEnv(c.writer);
  env.push_back("XDG_CACHE_HOME=" + (c.tmp / "other-machine"));
  ProcessResult again = RunProcess(argv, env);
  INFO(again.out << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_THAT(again.out, Catch::Contains("uploaded 0 chunks"));
}

TEST_CASE("a tar layer's members are imported in place", "[import][oci]") {
  TempDir cache;
  TestCluster c(OneAgent(cache));
  Registry reg(c.tmp / "registry");
  const std::string model = MakeModel(c.tmp / "model");
  reg.Push("models/tarred", "v1", model, /*tar=*/true);
  ProcessResult r =
      c.Shoal(c.writer, ImportArgs("oci://" + reg.host() + "/models/tarred:v1", "team-a/tarred"));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("read 3 files"));
  pid_t pull = c.StartPull(0, "team-a/tarred:latest", c.tmp / "out");
  REQUIRE(WaitProcess(pull) == 0);
  CHECK(SameTree(model, c.tmp / "out"));
}

TEST_CASE("a corrupt byte in the registry and missing credentials end the import",
          "[import][oci]") {
  TempDir cache;
  TestCluster c(OneAgent(cache));
  Registry reg(c.tmp / "registry");
  const std::string model = MakeModel(c.tmp / "model");
  reg.Push("models/tiny", "v1", model);
  const std::string source = "oci://" + reg.host() + "/models/tiny:v1";

  // Without credentials: the registry's 401, and what to pass.
  std::vector<std::string> args = ImportArgs(source, "team-a/bad");
  args.resize(args.size() - 4);
  ProcessResult r = c.Shoal(c.writer, args);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("--oci-username"));

  // One byte of the weights flipped where the registry keeps them.
  const std::string bytes = Slurp(model + "/model.safetensors");
  const std::string hex =
      RunProcess({"/usr/bin/sha256sum", model + "/model.safetensors"}).out.substr(0, 64);
  const std::string blob = reg.BlobFile("sha256:" + hex);
  REQUIRE(fs::exists(blob));
  {
    std::fstream f(blob, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(1 << 20);
    f.put(static_cast<char>(bytes[1 << 20] ^ 0x40));
  }
  r = c.Shoal(c.writer, ImportArgs(source, "team-a/bad"));
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("model.safetensors") && Catch::Contains("SHA-256"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  ProcessResult ls = c.Shoal(c.reader, {"ls", "team-a/bad", "--json"});
  CHECK((ls.exit_code != 0 || ls.out.find("versionId") == std::string::npos));
}
