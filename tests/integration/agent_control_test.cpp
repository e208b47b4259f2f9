// The agent's control socket as its callers meet it: who may pull where,
// what a pull may replace, pulls larger than the cache, callers that go
// away, and an agent stopped mid-pull. Real tracker, real shoald processes,
// the real CLI, and another local user (nobody) where rights matter.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>

#include "integration/pull_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

int Threads(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  ::lstat(path.c_str(), &st);
  return st.st_mode & 07777;
}

// Lets `user` reach paths under `dir` (mkdtemp makes test folders 0700).
void OpenUp(const std::string& dir) {
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
}

// Runs the CLI as `nobody`, a user that owns nothing here.
ProcessResult ShoalAsNobody(const TestCluster& c, const std::string& token,
                            std::vector<std::string> args) {
  std::vector<std::string> argv = {"/usr/sbin/runuser",
                                   "-u",
                                   "nobody",
                                   "--",
                                   "/usr/bin/env",
                                   "SHOAL_TRACKER=" + c.tracker.rpc_address(),
                                   "SHOAL_TOKEN=" + token,
                                   CliBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

bool NoStagingLeft(const std::string& parent) {
  for (const auto& e : fs::directory_iterator(parent)) {
    if (e.path().filename().string().find(".shoal-") != std::string::npos) return false;
  }
  return true;
}

// Waits until `pred` holds, or `seconds` pass; returns whether it held.
template <typename Pred>
bool WaitFor(double seconds, Pred pred) {
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
  while (Clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return pred();
}

}  // namespace

TEST_CASE("the control socket and the cache are private to the agent by default",
          "[control][security]") {
  PullCluster c(1);
  CHECK(Mode(c.agents[0]->socket()) == 0660);
  CHECK(Mode(c.agents[0]->cache_dir()) == 0700);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 3);
  c.PublishUnseeded(ckpt, "team-a/m");
  auto pull = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "out", "--agent",
                                 c.agents[0]->socket()});
  INFO(pull.err);
  REQUIRE(pull.exit_code == 0);
  int chunk_files = 0;
  for (const auto& e : fs::recursive_directory_iterator(c.agents[0]->cache_dir() + "/chunks")) {
    if (e.is_directory()) {
      CHECK(Mode(e.path()) == 0700);
    } else {
      CHECK(Mode(e.path()) == 0600);
      ++chunk_files;
    }
  }
  CHECK(chunk_files > 0);
  // The chunk index (LevelDB) is as private as the chunks.
  const std::string index = c.agents[0]->cache_dir() + "/index";
  CHECK(Mode(index) == 0700);
  int index_files = 0;
  for (const auto& e : fs::directory_iterator(index)) {
    INFO(e.path());
    CHECK(Mode(e.path()) == 0600);
    ++index_files;
  }
  CHECK(index_files > 0);
  // Another user cannot even connect.
  OpenUp(c.tmp.path());
  OpenUp(c.tmp / "agents");
  auto denied = ShoalAsNobody(
      c, c.reader,
      {"pull", "team-a/m:latest", "--to", "/tmp/never", "--agent", c.agents[0]->socket()});
  CHECK(denied.exit_code != 0);
  CHECK_THAT(denied.err,
             Catch::Contains("cannot reach the agent") || Catch::Contains("ermission denied"));
  CHECK_FALSE(fs::exists("/tmp/never"));
}

TEST_CASE("a pull replaces a folder only if it is an earlier pull of the same model, or when asked",
          "[control]") {
  PullCluster c(1);
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 4);
  c.PublishUnseeded(ckpt, "team-a/m");
  c.PublishUnseeded(MakeCheckpoint(c.tmp / "other", 5), "team-a/other");
  const std::string dest = c.tmp / "models";
  fs::create_directories(dest);
  WriteRandomFile(dest + "/notes.txt", 100, 9);
  auto pull = [&](const std::string& ref, std::vector<std::string> extra) {
    std::vector<std::string> args = {"pull", ref, "--to", dest, "--agent", c.agents[0]->socket()};
    args.insert(args.end(), extra.begin(), extra.end());
    return c.Shoal(c.reader, args);
  };

  auto refused = pull("team-a/m:latest", {});
  CHECK(refused.exit_code != 0);
  CHECK_THAT(refused.err,
             Catch::Contains("is not an earlier pull of team-a/m") && Catch::Contains("--replace"));
  CHECK(fs::exists(dest + "/notes.txt"));  // untouched
  CHECK(NoStagingLeft(c.tmp.path()));

  auto replaced = pull("team-a/m:latest", {"--replace"});
  INFO(replaced.err);
  REQUIRE(replaced.exit_code == 0);
  CHECK(SameTree(ckpt, dest));
  CHECK_FALSE(fs::exists(dest + "/notes.txt"));

  auto again = pull("team-a/m:latest", {});  // an earlier pull of the same model
  INFO(again.err);
  CHECK(again.exit_code == 0);
  CHECK(SameTree(ckpt, dest));

  auto other = pull("team-a/other:latest", {});
  CHECK(other.exit_code != 0);
  CHECK_THAT(other.err, Catch::Contains("holds a pull of team-a/m, not team-a/other"));
  CHECK(SameTree(ckpt, dest));
  CHECK(NoStagingLeft(c.tmp.path()));
}

TEST_CASE("a pull by another user cannot replace what that user could not, nor the agent's cache",
          "[control][security]") {
  PullCluster c(1, "1GiB", {}, {"--control-socket-mode", "0666"});
  std::string ckpt = MakeCheckpoint(c.tmp / "ckpt", 6);
  c.PublishUnseeded(ckpt, "team-a/m");
  OpenUp(c.tmp.path());
  OpenUp(c.tmp / "agents");
  const std::string sock = c.agents[0]->socket();

  // A root-owned folder holding another model, in a root-owned folder.
  const std::string victim = c.tmp / "victim";
  WriteRandomFile(victim + "/weights.bin", 4096, 1);
  OpenUp(victim);
  auto r1 = ShoalAsNobody(
      c, c.reader, {"pull", "team-a/m:latest", "--to", victim, "--replace", "--agent", sock});
  CHECK(r1.exit_code != 0);
  CHECK_THAT(r1.err, Catch::Contains("ermission denied"));
  CHECK(fs::exists(victim + "/weights.bin"));

  // A root-only file.
  const std::string secret = c.tmp / "secret.key";
  WriteRandomFile(secret, 64, 2);
  fs::permissions(secret, fs::perms::owner_read | fs::perms::owner_write);
  auto r2 = ShoalAsNobody(
      c, c.reader, {"pull", "team-a/m:latest", "--to", secret, "--replace", "--agent", sock});
  CHECK(r2.exit_code != 0);
  CHECK(fs::is_regular_file(secret));
  CHECK(fs::file_size(secret) == 64);

  // The agent's own cache.
  const std::string cache = c.agents[0]->cache_dir();
  auto r3 = ShoalAsNobody(c, c.reader,
                          {"pull", "team-a/m:latest", "--to", cache, "--replace", "--agent", sock});
  CHECK(r3.exit_code != 0);
  CHECK(fs::exists(cache + "/chunks"));
  CHECK(NoStagingLeft(c.tmp.path()));

  // Where nobody may write, nobody's pull works, and the files are nobody's.
  const std::string shared = c.tmp / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms::all | fs::perms::sticky_bit);
  auto ok = ShoalAsNobody(c, c.reader,
                          {"pull", "team-a/m:latest", "--to", shared + "/m", "--agent", sock});
  INFO(ok.err);
  REQUIRE(ok.exit_code == 0);
  CHECK(SameTree(ckpt, shared + "/m"));
  struct stat st {};
  ::stat((shared + "/m/config.json").c_str(), &st);
  CHECK(st.st_uid == 65534);
  // And the cache still serves: a pull as root reads nothing again.
  auto root =
      c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "root-copy", "--agent", sock});
  INFO(root.err);
  CHECK(root.exit_code == 0);
  CHECK_THAT(root.out, Catch::Contains("0 B from the origin"));
}

TEST_CASE("a version three times the cache pulls through it, each chunk read from the origin once",
          "[control][cache]") {
  PullCluster c(1, "64MiB");
  const std::string ckpt = c.tmp / "big";
  WriteRandomFile(ckpt + "/model-00001.safetensors", 128 * kMiB, 11);
  WriteRandomFile(ckpt + "/model-00002.safetensors", 64 * kMiB, 12);
  WriteRandomFile(ckpt + "/config.json", 900, 13);
  c.PublishUnseeded(ckpt, "team-a/big");
  auto pull = RunProcess({"/usr/bin/timeout", "150", CliBinary(), "pull", "team-a/big:latest",
                          "--to", c.tmp / "out", "--agent", c.agents[0]->socket()},
                         {"SHOAL_TOKEN=" + c.reader});
  INFO(pull.out << pull.err << c.agents[0]->log().substr(0, 4000));
  REQUIRE(pull.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out"));
  CHECK(c.agents[0]->Metric("shoal_agent_cache_bytes") <= 64.0 * kMiB);
  CHECK(c.agents[0]->Metric("shoal_agent_cache_evictions_total") > 0);
  const double unique = 192.0 * kMiB + 900;
  CHECK(c.OriginBytes() == unique);
  CHECK(c.agents[0]->Metric("shoal_agent_cache_pinned_bytes") == 0);
}

TEST_CASE("a pull into a full destination fails with one line and leaves no partial files",
          "[control][cache]") {
  PullCluster c(1);
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/model.safetensors", 24 * kMiB, 21);
  c.PublishUnseeded(ckpt, "team-a/m");
  const std::string small = c.tmp / "small";
  fs::create_directories(small);
  auto mounted = RunProcess({"/usr/bin/mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", small});
  if (mounted.exit_code != 0) {
    WARN("cannot mount a tmpfs here (" << mounted.err
                                       << "); the full-destination check did not run");
    return;
  }
  auto pull = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", small + "/m", "--agent",
                                 c.agents[0]->socket()});
  RunProcess({"/usr/bin/umount", small});  // after the checks below read nothing from it
  CHECK(pull.exit_code != 0);
  CHECK_THAT(pull.err, Catch::Contains("the destination is full"));
  CHECK(std::count(pull.err.begin(), pull.err.end(), '\n') <= 1);
  CHECK(c.agents[0]->Metric("shoal_agent_control_jobs") == 0);
}

TEST_CASE("a caller that goes away cancels its pull, and its thread and pins are released",
          "[control][cancel]") {
  PullCluster c(2);
  const std::string ckpt = c.tmp / "ckpt";
  for (int i = 0; i < 4; ++i)
    WriteRandomFile(ckpt + "/shard-" + std::to_string(i), 6 * kMiB, 30 + i);
  c.PublishUnseeded(ckpt, "team-a/m");
  // The other agent owns about half the chunks and answers nothing: the
  // pull waits on its orders for the tracker's takeover timeout.
  ::kill(c.agents[1]->pid(), SIGSTOP);
  const pid_t agent = c.agents[0]->pid();
  const int threads_before = Threads(agent);
  const std::string dest = c.tmp / "out";
  pid_t cli = c.StartPull(0, "team-a/m:latest", dest);
  REQUIRE(WaitFor(10, [&] { return c.agents[0]->Metric("shoal_agent_control_jobs") == 1; }));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  ::kill(cli, SIGTERM);
  int code = WaitProcess(cli);
  CHECK(code != 0);
  CHECK_THAT(Slurp(dest + ".log"), Catch::Contains("interrupted; nothing was written to " + dest));
  CHECK(WaitFor(5, [&] { return c.agents[0]->Metric("shoal_agent_control_jobs") == 0; }));
  CHECK(WaitFor(5, [&] { return Threads(agent) <= threads_before; }));
  CHECK(c.agents[0]->Metric("shoal_agent_cache_pinned_bytes") == 0);
  CHECK_FALSE(fs::exists(dest));
  CHECK(NoStagingLeft(c.tmp.path()));
  CHECK_THAT(c.agents[0]->log(), Catch::Contains("the caller went away"));
  ::kill(c.agents[1]->pid(), SIGCONT);
}

TEST_CASE("SIGTERM stops an agent within seconds mid-pull, and it restarts with a consistent cache",
          "[control][cancel]") {
  PullCluster c(2);
  const std::string ckpt = c.tmp / "ckpt";
  for (int i = 0; i < 4; ++i)
    WriteRandomFile(ckpt + "/shard-" + std::to_string(i), 6 * kMiB, 40 + i);
  c.PublishUnseeded(ckpt, "team-a/m");
  ::kill(c.agents[1]->pid(), SIGSTOP);
  pid_t cli = c.StartPull(0, "team-a/m:latest", c.tmp / "out");
  REQUIRE(WaitFor(10, [&] { return c.agents[0]->Metric("shoal_agent_control_jobs") == 1; }));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const pid_t agent = c.agents[0]->pid();
  auto start = Clock::now();
  ::kill(agent, SIGTERM);
  bool exited = WaitFor(8, [&] { return ::waitpid(agent, nullptr, WNOHANG) == agent; });
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("agent stopped %.2f s after SIGTERM with a pull running\n", seconds);
  CHECK(exited);
  if (!exited) c.agents[0]->Kill();
  CHECK(WaitProcess(cli) != 0);
  CHECK(NoStagingLeft(c.tmp.path()));
  ::kill(c.agents[1]->pid(), SIGCONT);
  c.agents[0]->Start();
  auto again = c.Shoal(c.reader, {"pull", "team-a/m:latest", "--to", c.tmp / "out", "--agent",
                                  c.agents[0]->socket()});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out"));
}

TEST_CASE(
    "a cache on a nearly full disk still pulls a larger version, evicting what was written out",
    "[control][cache]") {
  PullCluster c(0);
  const std::string ckpt = c.tmp / "ckpt";
  WriteRandomFile(ckpt + "/model.safetensors", 96 * kMiB, 51);
  c.PublishUnseeded(ckpt, "team-a/m");
  AgentProcess agent(c.tmp / "agents", "small-disk",
                     {"--tracker", c.tracker.rpc_address(), "--token", c.agent_token, "--origin",
                      "file://" + c.origin, "--cache-size", "1GiB", "--stall-timeout-ms", "10000"});
  fs::create_directories(agent.cache_dir());
  // The budget says 1 GiB; the disk under it holds 40 MiB.
  auto mounted =
      RunProcess({"/usr/bin/mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", agent.cache_dir()});
  if (mounted.exit_code != 0) {
    WARN("cannot mount a tmpfs here (" << mounted.err << "); the full-disk check did not run");
    return;
  }
  agent.Start();
  auto pull = RunProcess({"/usr/bin/timeout", "120", CliBinary(), "pull", "team-a/m:latest", "--to",
                          c.tmp / "out", "--agent", agent.socket()},
                         {"SHOAL_TOKEN=" + c.reader});
  std::string log = agent.log();
  agent.Stop();
  RunProcess({"/usr/bin/umount", agent.cache_dir()});
  INFO(pull.out << pull.err << log.substr(0, 3000));
  REQUIRE(pull.exit_code == 0);
  CHECK(SameTree(ckpt, c.tmp / "out"));
}
