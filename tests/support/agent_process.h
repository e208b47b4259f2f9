// A real shoald process for integration tests, with its own cache folder,
// control socket and ports on 127.0.0.1.
#ifndef SHOAL_TESTS_SUPPORT_AGENT_PROCESS_H_
#define SHOAL_TESTS_SUPPORT_AGENT_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace shoal::testing {

class AgentProcess {
 public:
  AgentProcess(std::string dir, std::string name, std::vector<std::string> args);
  ~AgentProcess();  // SIGTERM, then waits
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  // Starts shoald and waits until it listens and has registered. Throws on failure.
  void Start();
  void Kill();  // SIGKILL, as a crash would
  void Stop();  // SIGTERM

  const std::string& socket() const { return socket_; }
  const std::string& cache_dir() const { return cache_dir_; }
  int http_port() const { return http_port_; }
  pid_t pid() const { return pid_; }
  int peer_port() const { return peer_port_; }    // its BitTorrent listen port
  int https_port() const { return https_port_; }  // 0 without --https-listen
  int hub_port() const { return hub_port_; }      // 0 without --hub-listen
  // A counter or gauge from /metrics (0 if absent).
  double Metric(const std::string& sample) const;
  std::string log() const;

 private:
  std::string dir_, name_, socket_, cache_dir_;
  std::vector<std::string> args_;
  pid_t pid_ = -1;
  int peer_port_ = 0, http_port_ = 0, https_port_ = 0, hub_port_ = 0;
};

std::string AgentBinary();

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_AGENT_PROCESS_H_
