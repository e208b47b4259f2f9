#include "support/tracker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/subprocess.h"

namespace shoal::testing {

std::string TrackerBinary() { return SHOAL_TRACKER_PATH; }
std::string CliBinary() { return SHOAL_CLI_PATH; }

TrackerProcess::TrackerProcess(std::string data_dir, std::vector<std::string> args,
                               std::string secrets_dir)
    : data_dir_(std::move(data_dir)),
      args_(std::move(args)),
      secrets_dir_(std::move(secrets_dir)) {}

TrackerProcess::~TrackerProcess() {
  if (pid_ > 0) Stop();
}

void TrackerProcess::Start() {
  std::filesystem::create_directories(data_dir_);
  std::string port_file = data_dir_ + "/ports";
  std::filesystem::remove(port_file);
  // A restart keeps the ports, as a real tracker's fixed address would.
  std::vector<std::string> argv = {TrackerBinary(), "serve",
                                   "--data-dir",    data_dir_,
                                   "--rpc-listen",  "127.0.0.1:" + std::to_string(rpc_port_),
                                   "--http-listen", "127.0.0.1:" + std::to_string(http_port_),
                                   "--port-file",   port_file};
  if (!secrets_dir_.empty()) argv.insert(argv.end(), {"--secrets-dir", secrets_dir_});
  argv.insert(argv.end(), args_.begin(), args_.end());
  std::string log_path = data_dir_ + "/tracker.log";
  pid_ = ::fork();
  if (pid_ == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(port_file);
    if (in >> rpc_port_ >> http_port_) return;
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error("shoal-tracker exited at start: " + log());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Kill();
  throw std::runtime_error("shoal-tracker did not start in 15 s: " + log());
}

void TrackerProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

void TrackerProcess::Stop() {
  if (pid_ <= 0) return;
  // A process that ignores SIGTERM would be killed by systemd or the
  // kubelet after its grace period, its work lost: a failure here too.
  if (!TerminateProcess(pid_, std::chrono::seconds(60)))
    FAIL_CHECK("shoal-tracker did not exit within 60 s of SIGTERM");
  pid_ = -1;
}

void TrackerProcess::RestartWiped() {
  Kill();
  std::filesystem::remove_all(data_dir_);
  Start();
}

std::string TrackerProcess::log() const {
  std::ifstream in(data_dir_ + "/tracker.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TrackerProcess::peer_ca() const {
  std::ifstream in(secrets_dir() + "/peer-ca.pem");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TrackerProcess::MintToken(const std::string& ns, const std::string& role,
                                      const std::string& subject, const std::string& ttl) const {
  ProcessResult r = RunProcess({TrackerBinary(), "token", "create", "--data-dir", secrets_dir(),
                                "--ns", ns, "--role", role, "--subject", subject, "--ttl", ttl});
  if (r.exit_code != 0) throw std::runtime_error("token create failed: " + r.err);
  return r.out.substr(0, r.out.find('\n'));
}

double TrackerProcess::Metric(const std::string& sample) const {
  return ScrapeMetric(http_port_, sample, https_ca_);
}

}  // namespace shoal::testing
