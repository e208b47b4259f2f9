#include "support/test_cluster.h"

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace shoal::testing {

namespace {

std::string OriginUrl(const ClusterOrigin& spec, const std::string& folder) {
  return spec.url.empty() ? "file://" + folder : spec.url;
}

std::vector<std::string> Join(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool IsFleet(const ClusterOptions& o) { return o.trackers > 1 || !o.registry.empty(); }

// serve's flags besides the origin's, for every tracker of the cluster.
std::vector<std::string> FleetFlags(const ClusterOptions& o) {
  std::vector<std::string> flags = o.tracker_flags;
  if (!o.registry.empty()) flags.insert(flags.end(), {"--registry", o.registry});
  return flags;
}

std::string SecretsDir(const ClusterOptions& o, const TempDir& tmp) {
  return IsFleet(o) ? std::string(tmp / "secrets") : std::string();
}

}  // namespace

std::string PublishedVersionId(const ProcessResult& r) {
  const size_t at = r.out.find("published ");
  if (at == std::string::npos) return "";
  const size_t colon = r.out.find(':', at);
  if (colon == std::string::npos || colon + 65 > r.out.size()) return "";
  return r.out.substr(colon + 1, 64);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TestCluster::TestCluster(ClusterOptions options)
    : origin_spec(options.origin),
      origin(tmp / "origin"),
      origin_url(OriginUrl(options.origin, tmp / "origin")),
      tracker(tmp / "tracker", Join(OriginFlags(), FleetFlags(options)), SecretsDir(options, tmp)),
      options_(std::move(options)) {
  if (origin_spec.url.empty()) {
    std::filesystem::create_directories(origin);
  } else {
    // Inherited by every process the test starts.
    ::setenv("AWS_ACCESS_KEY_ID", origin_spec.access_key.c_str(), 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", origin_spec.secret_key.c_str(), 1);
  }
  trackers.push_back(&tracker);
  for (int i = 1; i < options_.trackers; ++i) {
    more_trackers_.push_back(std::make_unique<TrackerProcess>(
        tmp / ("tracker" + std::to_string(i)), Join(OriginFlags(), FleetFlags(options_)),
        SecretsDir(options_, tmp)));
    trackers.push_back(more_trackers_.back().get());
  }
  // In order: the first creates the fleet's secrets, the rest load them.
  for (TrackerProcess* t : trackers) t->Start();
  agent_token = tracker.MintToken("*", "read", "agents");
  writer = tracker.MintToken("team-a", "write", "trainer");
  reader = tracker.MintToken("team-a", "read", "pod");
  for (int i = 0; i < options_.agents; ++i) AddAgent();
}

TestCluster::~TestCluster() {
  agents.clear();
  more_trackers_.clear();
}

AgentProcess& TestCluster::AddAgent(std::vector<std::string> flags) {
  const std::string name = "agent" + std::to_string(agents.size());
  std::vector<std::string> all = {"--tracker", TrackerList(),  "--token",
                                  agent_token, "--cache-size", options_.cache_size};
  if (options_.agents_use_origin) all = Join(all, OriginFlags());
  if (options_.rack_labels) {
    all.insert(all.end(), {"--label", "rack=r" + std::to_string(agents.size() % 2)});
  }
  all = Join(Join(all, options_.agent_flags), flags);
  agents.push_back(std::make_unique<AgentProcess>(tmp / "agents", name, all));
  agents.back()->Start();
  return *agents.back();
}

std::vector<std::string> TestCluster::OriginFlags() const {
  std::vector<std::string> flags = {"--origin", origin_url};
  if (!origin_spec.url.empty()) {
    flags.insert(flags.end(),
                 {"--s3-endpoint", origin_spec.endpoint, "--s3-region", origin_spec.region});
  }
  return flags;
}

std::string TestCluster::TrackerList() const {
  std::string list;
  for (const TrackerProcess* t : trackers) list += (list.empty() ? "" : ",") + t->rpc_address();
  return list;
}

std::vector<std::string> TestCluster::CliEnv(const std::string& token) const {
  std::vector<std::string> env = {"SHOAL_TRACKER=" + TrackerList(), "SHOAL_TOKEN=" + token,
                                  "SHOAL_ORIGIN=" + origin_url};
  if (!origin_spec.url.empty()) {
    env.insert(
        env.end(),
        {"SHOAL_S3_ENDPOINT=" + origin_spec.endpoint, "AWS_ACCESS_KEY_ID=" + origin_spec.access_key,
         "AWS_SECRET_ACCESS_KEY=" + origin_spec.secret_key, "AWS_REGION=" + origin_spec.region});
  }
  env.insert(env.end(), options_.cli_env.begin(), options_.cli_env.end());
  return env;
}

ProcessResult TestCluster::Shoal(const std::string& token, std::vector<std::string> args) const {
  args.insert(args.begin(), CliBinary());
  return RunProcess(args, CliEnv(token));
}

ProcessResult TestCluster::Publish(const std::string& dir, const std::string& name, int seeder,
                                   const std::string& piece_size) const {
  std::vector<std::string> args = {"publish", dir,      "--name",       name,
                                   "--tag",   "latest", "--piece-size", piece_size};
  if (seeder >= 0) {
    args.insert(args.end(), {"--agent", agents[static_cast<size_t>(seeder)]->socket()});
  } else {
    args.push_back("--no-seed");
  }
  return Shoal(writer, args);
}

void TestCluster::PublishOk(const std::string& dir, const std::string& name, int seeder,
                            const std::string& piece_size) const {
  ProcessResult r = Publish(dir, name, seeder, piece_size);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
}

void TestCluster::PublishUnseeded(const std::string& dir, const std::string& name) const {
  PublishOk(dir, name, -1);
  // The tracker's ring for fetch orders takes in joins within a heartbeat
  // or two.
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
}

pid_t TestCluster::StartPull(int agent, const std::string& ref, const std::string& dest) const {
  return StartProcess({CliBinary(), "pull", ref, "--to", dest, "--agent",
                       agents[static_cast<size_t>(agent)]->socket()},
                      {"SHOAL_TOKEN=" + reader}, dest + ".log");
}

double TestCluster::OriginBytes() const {
  double total = 0;
  for (const auto& a : agents) total += a->Metric("shoal_agent_origin_bytes_total");
  return total;
}

std::string TestCluster::FileUrl(int agent, const std::string& model,
                                 const std::string& path) const {
  return "http://127.0.0.1:" + std::to_string(agents[static_cast<size_t>(agent)]->http_port()) +
         "/v1/models/team-a/" + model + ":latest/files/" + path;
}

CurlAnswer TestCluster::Curl(std::vector<std::string> args, int max_seconds) const {
  std::string out = tmp / ("curl-" + std::to_string(++curls_));
  std::vector<std::string> argv = {
      "/usr/bin/curl", "-s", "--max-time",  std::to_string(max_seconds), "-o", out, "-D",
      out + ".h",      "-w", "%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = RunProcess(argv);
  CurlAnswer a;
  a.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  a.exit_code = r.exit_code;
  a.status = std::atoi(r.out.c_str());
  a.body = Slurp(out);
  std::istringstream headers(Slurp(out + ".h"));
  for (std::string line; std::getline(headers, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t colon = line.find(':');
    if (line.rfind("HTTP/", 0) == 0) a.headers.clear();  // only the last response's
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& ch : name) ch = char(std::tolower(static_cast<unsigned char>(ch)));
    size_t value = line.find_first_not_of(' ', colon + 1);
    a.headers[name] = value == std::string::npos ? "" : line.substr(value);
  }
  return a;
}

}  // namespace shoal::testing
