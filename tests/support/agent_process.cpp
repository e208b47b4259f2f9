#include "support/agent_process.h"

#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/subprocess.h"

namespace shoal::testing {

std::string AgentBinary() { return SHOAL_AGENT_PATH; }

AgentProcess::AgentProcess(std::string dir, std::string name, std::vector<std::string> args)
    : dir_(std::move(dir)), name_(std::move(name)), args_(std::move(args)) {
  socket_ = dir_ + "/" + name_ + ".sock";
  cache_dir_ = dir_ + "/" + name_ + "-cache";
}

AgentProcess::~AgentProcess() { Stop(); }

void AgentProcess::Start() {
  std::filesystem::create_directories(dir_);
  std::string ports = dir_ + "/" + name_ + ".ports";
  std::filesystem::remove(ports);
  std::vector<std::string> argv = {
      AgentBinary(), "--name",           name_,         "--cache-dir",
      cache_dir_,    "--peer-listen",    "127.0.0.1:0", "--http-listen",
      "127.0.0.1:0", "--control-socket", socket_,       "--port-file",
      ports};
  argv.insert(argv.end(), args_.begin(), args_.end());
  pid_ = StartProcess(argv, {}, dir_ + "/" + name_ + ".log");
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(ports);
    if (in >> peer_port_ >> http_port_ >> https_port_ >> hub_port_ &&
        Metric("shoal_agent_tracker_registered") == 1)
      return;
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("shoald exited at start: " + log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Kill();
  throw std::runtime_error("shoald did not start and register in 15 s: " + log());
}

void AgentProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void AgentProcess::Stop() {
  if (pid_ <= 0) return;
  // A process that ignores SIGTERM would be killed by systemd or the
  // kubelet after its grace period, its work lost: a failure here too.
  if (!TerminateProcess(pid_))
    FAIL_CHECK("shoald " << name_ << " did not exit within 30 s of SIGTERM");
  pid_ = -1;
}

double AgentProcess::Metric(const std::string& sample) const {
  return ScrapeMetric(http_port_, sample);
}

std::string AgentProcess::log() const {
  std::ifstream in(dir_ + "/" + name_ + ".log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace shoal::testing
