#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <thread>
#include <vector>

extern char** environ;

namespace shoal::testing {

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env) {
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe failed");
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    for (const std::string& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ProcessResult r;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open = 2;
  char buf[65536];
  while (open > 0) {
    ::poll(fds, 2, -1);
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

pid_t StartProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& log_path) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    for (const std::string& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

int WaitProcess(pid_t pid, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string stacks = ThreadStacks(pid);
      std::fprintf(stderr, "process %d still runs after %lld s; its threads:\n%s\n",
                   static_cast<int>(pid), static_cast<long long>(limit.count()), stacks.c_str());
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      return kWaitTimedOut;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ThreadStacks(pid_t pid) {
  const std::string id = std::to_string(pid);
  if (::access("/usr/bin/gdb", X_OK) == 0) {
    ProcessResult r =
        RunProcess({"/usr/bin/gdb", "-p", id, "-batch", "-nx", "-ex", "thread apply all bt"});
    return r.out + r.err;
  }
  std::string out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + id + "/task", ec)) {
    std::ifstream comm(task.path() / "comm"), wchan(task.path() / "wchan");
    std::string name, wait;
    std::getline(comm, name);
    std::getline(wchan, wait);
    out += task.path().filename().string() + " " + name + " waits in " + wait + "\n";
  }
  return out;
}

bool TerminateProcess(pid_t pid, std::chrono::seconds limit) {
  ::kill(pid, SIGTERM);
  return WaitProcess(pid, limit) != kWaitTimedOut;
}

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "shoal-test.XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

namespace {

// True if both files hold the same bytes; compared a block at a time.
bool SameFile(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code ea, eb;
  const auto size_a = std::filesystem::file_size(a, ea), size_b = std::filesystem::file_size(b, eb);
  if (ea || eb || size_a != size_b) return false;
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  if (!fa || !fb) return false;
  constexpr size_t kBlock = 1 << 20;
  std::vector<char> ba(kBlock), bb(kBlock);
  while (fa && fb) {
    fa.read(ba.data(), kBlock);
    fb.read(bb.data(), kBlock);
    if (fa.gcount() != fb.gcount() ||
        std::memcmp(ba.data(), bb.data(), static_cast<size_t>(fa.gcount())) != 0) {
      return false;
    }
  }
  return fa.eof() && fb.eof();
}

}  // namespace

bool SameTree(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  for (const auto& e : fs::recursive_directory_iterator(a)) {
    if (!e.is_regular_file()) continue;
    fs::path other = fs::path(b) / fs::relative(e.path(), a);
    if (!fs::is_regular_file(other) || !SameFile(e.path(), other)) return false;
  }
  return true;
}

void WriteRandomFile(const std::string& path, size_t size, unsigned seed) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::mt19937_64 rng(seed);
  std::string data(size, '\0');
  for (size_t i = 0; i + 8 <= size; i += 8) {
    uint64_t v = rng();
    std::memcpy(&data[i], &v, 8);
  }
  for (size_t i = size - size % 8; i < size; ++i) data[i] = static_cast<char>(rng());
  std::ofstream(path, std::ios::binary).write(data.data(), static_cast<std::streamsize>(size));
}

double ScrapeMetric(int http_port, const std::string& sample, const std::string& ca_file) {
  if (http_port == 0) return 0;
  std::vector<std::string> curl = {"/usr/bin/curl", "-s", "--max-time", "5"};
  if (ca_file.empty()) {
    curl.push_back("http://127.0.0.1:" + std::to_string(http_port) + "/metrics");
  } else {
    curl.insert(curl.end(), {"--cacert", ca_file,
                             "https://localhost:" + std::to_string(http_port) + "/metrics"});
  }
  ProcessResult r = RunProcess(curl);
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(sample + " ", 0) == 0) return std::stod(line.substr(sample.size() + 1));
  }
  return 0;
}

}  // namespace shoal::testing
