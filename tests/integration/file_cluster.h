// A small cluster for read and peer-port tests that need no S3: a real
// tracker on a folder origin, real agents with the flags a test chooses,
// the real CLI to publish, and curl to read, all on 127.0.0.1.
#ifndef SHOAL_TESTS_INTEGRATION_FILE_CLUSTER_H_
#define SHOAL_TESTS_INTEGRATION_FILE_CLUSTER_H_

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "support/agent_process.h"
#include "support/subprocess.h"
#include "support/tracker_process.h"

namespace shoal::testing {

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What curl saw: the last status line's code, its headers (names lower
// case), the body bytes, curl's exit code and how long it took.
struct CurlAnswer {
  int status = 0;
  std::map<std::string, std::string> headers;
  std::string body;
  int exit_code = -1;
  double seconds = 0;
};

struct FileCluster {
  TempDir tmp;
  std::string origin = tmp / "origin";
  TrackerProcess tracker;
  std::string agent_token, writer, reader;
  std::vector<std::unique_ptr<AgentProcess>> agents;

  FileCluster()
      : tracker(tmp / "tracker",
                {"--origin", "file://" + (tmp / "origin"), "--announce-interval", "1s"}) {
    std::filesystem::create_directories(origin);
    tracker.Start();
    agent_token = tracker.MintToken("*", "read", "agents");
    writer = tracker.MintToken("team-a", "write", "trainer");
    reader = tracker.MintToken("team-a", "read", "pod");
  }

  // Starts an agent with `flags` after the tracker and token flags. Pass
  // {"--origin", "file://" + origin} for one that may read the origin.
  AgentProcess& AddAgent(std::vector<std::string> flags) {
    std::vector<std::string> all = {"--tracker", tracker.rpc_address(), "--token",
                                    agent_token, "--cache-size",        "256MiB"};
    all.insert(all.end(), flags.begin(), flags.end());
    agents.push_back(std::make_unique<AgentProcess>(tmp / "agents",
                                                    "agent" + std::to_string(agents.size()), all));
    agents.back()->Start();
    return *agents.back();
  }

  // `shoal publish dir --name name --tag latest`, seeded by agent `seeder`
  // (its chunks then live in that agent's cache), or by nobody (-1).
  void Publish(const std::string& dir, const std::string& name, int seeder) {
    std::vector<std::string> args = {CliBinary(), "publish",      dir,      "--name", name, "--tag",
                                     "latest",    "--piece-size", "1048576"};
    if (seeder >= 0) {
      args.insert(args.end(), {"--agent", agents[size_t(seeder)]->socket()});
    } else {
      args.push_back("--no-seed");
    }
    ProcessResult r = RunProcess(args, {"SHOAL_TRACKER=" + tracker.rpc_address(),
                                        "SHOAL_TOKEN=" + writer, "SHOAL_ORIGIN=file://" + origin});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
  }

  std::string FileUrl(int agent, const std::string& model, const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(agents[size_t(agent)]->http_port()) +
           "/v1/models/team-a/" + model + ":latest/files/" + path;
  }

  // curl with `args`, at most `max_seconds`.
  CurlAnswer Curl(std::vector<std::string> args, int max_seconds = 60) const {
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

 private:
  mutable int curls_ = 0;
};

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_INTEGRATION_FILE_CLUSTER_H_
