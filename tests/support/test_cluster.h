// A real Shoal cluster for integration tests: one shoal-tracker process (or
// a fleet of them sharing an etcd registry and one secrets folder) and any
// number of shoald processes on 127.0.0.1, all on one origin (a fresh
// folder, or an S3 bucket prefix), plus the real CLI and curl to drive it.
// Each cluster lives in its own temporary folder and stops its processes
// on destruction.
//
// Thread-safety: one test thread uses a cluster; Curl() may be called from
// several threads at once.
#ifndef SHOAL_TESTS_SUPPORT_TEST_CLUSTER_H_
#define SHOAL_TESTS_SUPPORT_TEST_CLUSTER_H_

#include <sys/types.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/agent_process.h"
#include "support/subprocess.h"
#include "support/tracker_process.h"

namespace shoal::testing {

// Where the cluster keeps its versions.
struct ClusterOrigin {
  std::string url;  // "s3://bucket/prefix"; empty: the folder `origin` in the cluster
  // For an S3 url: where the bucket is and the keys every process signs with.
  std::string endpoint, region, access_key, secret_key;
};

struct ClusterOptions {
  ClusterOrigin origin;
  // Flags for `shoal-tracker serve`, after its origin flags.
  std::vector<std::string> tracker_flags = {"--announce-interval", "1s"};
  // Trackers started, in order. More than one (or a `registry`) makes a
  // fleet: every tracker gets --registry and --secrets-dir <tmp>/secrets,
  // and the CLI and agents get every tracker's RPC address.
  int trackers = 1;
  std::string registry;  // --registry, e.g. "etcd://127.0.0.1:2379/test/x/"; "": LevelDB each
  int agents = 0;        // started by the constructor, in order
  std::string cache_size = "256MiB";  // each agent's --cache-size
  // Agents may read the origin only when a test says so, so that tests of
  // the peer-only paths cannot pass by reading it.
  bool agents_use_origin = false;
  bool rack_labels = false;  // agent i gets --label rack=r<i % 2>
  // Flags every agent gets after the tracker, token, cache and origin flags.
  std::vector<std::string> agent_flags;
  // Environment the CLI gets besides CliEnv's ("SHOAL_TRACKER_CA=...").
  std::vector<std::string> cli_env;
};

// What curl saw: the last status line's code, its headers (names lower
// case), the body bytes, curl's exit code and how long it took.
struct CurlAnswer {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  int exit_code = -1;
  double seconds = 0;
};

class TestCluster {
 public:
  // Starts the tracker(s) in order, mints the tokens below, then starts
  // `options.agents` agents. With an S3 origin, the test process's
  // AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set to the origin's
  // keys, so every process the test starts inherits them.
  // Throws (or fails the test) if a process does not start.
  explicit TestCluster(ClusterOptions options = {});
  ~TestCluster();  // agents stop first, then the trackers
  TestCluster(const TestCluster&) = delete;
  TestCluster& operator=(const TestCluster&) = delete;

  // Starts one more agent, named "agent<index>", with the cluster's agent
  // flags followed by `flags`, and waits until it has registered.
  AgentProcess& AddAgent(std::vector<std::string> flags = {});

  // --origin, and for S3 the endpoint and region (the keys come from the
  // environment).
  std::vector<std::string> OriginFlags() const;
  // Every tracker's RPC address, comma-separated, in order: what the CLI's
  // SHOAL_TRACKER and the agents' --tracker get.
  std::string TrackerList() const;
  // The environment the CLI needs to reach this cluster's tracker and
  // origin with `token`.
  std::vector<std::string> CliEnv(const std::string& token) const;
  // Runs `shoal args...` with CliEnv(token).
  ProcessResult Shoal(const std::string& token, std::vector<std::string> args) const;

  // `shoal publish dir --name name --tag latest --piece-size piece_size` as
  // the writer, seeded by agent `seeder` (its chunks then live in that
  // agent's cache), or by nobody (-1).
  ProcessResult Publish(const std::string& dir, const std::string& name, int seeder,
                        const std::string& piece_size = "1048576") const;
  // The same, and the test fails (with the CLI's output) unless it worked.
  void PublishOk(const std::string& dir, const std::string& name, int seeder,
                 const std::string& piece_size = "1048576") const;
  // Publishes `dir` without seeding it, then waits until the tracker's
  // ring holds every agent, so each chunk's owner is settled.
  void PublishUnseeded(const std::string& dir, const std::string& name) const;

  // Starts `shoal pull ref --to dest` through agent `agent` as the reader,
  // logging to dest + ".log"; the caller waits for the pid.
  pid_t StartPull(int agent, const std::string& ref, const std::string& dest) const;
  // Bytes all agents have read from the origin, by their /metrics.
  double OriginBytes() const;

  // http://127.0.0.1:<agent's HTTP port>/v1/models/team-a/<model>:latest/files/<path>
  std::string FileUrl(int agent, const std::string& model, const std::string& path) const;
  // curl with `args`, at most `max_seconds`.
  CurlAnswer Curl(std::vector<std::string> args, int max_seconds = 60) const;

  TempDir tmp;
  const ClusterOrigin origin_spec;
  const std::string origin;      // the origin folder (unused with S3)
  const std::string origin_url;  // "file://<origin>" or the S3 url
  TrackerProcess tracker;        // the first (or only) tracker
  // Every tracker, `tracker` first; each lives as long as the cluster.
  std::vector<TrackerProcess*> trackers;
  // agent_token may read everything ("*", read, agents); writer may write
  // team-a (trainer); reader may read team-a (pod).
  std::string agent_token, writer, reader;
  std::vector<std::unique_ptr<AgentProcess>> agents;

 private:
  const ClusterOptions options_;
  std::vector<std::unique_ptr<TrackerProcess>> more_trackers_;  // trackers 2..N
  mutable std::atomic<int> curls_{0};
};

// The bytes of the file at `path` ("" if it cannot be read).
std::string Slurp(const std::string& path);

// The version ID (64 hex digits) `shoal publish` printed in `r`'s output
// ("published ns/model:<id>"); "" if it printed none.
std::string PublishedVersionId(const ProcessResult& r);

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_TEST_CLUSTER_H_
