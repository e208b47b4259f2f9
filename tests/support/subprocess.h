// Running real Shoal binaries from tests: capture exit code, stdout, stderr.
#ifndef SHOAL_TESTS_SUPPORT_SUBPROCESS_H_
#define SHOAL_TESTS_SUPPORT_SUBPROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace shoal::testing {

struct ProcessResult {
  int exit_code = -1;  // or 128 + signal number
  std::string out;
  std::string err;
};

// One sample ("name" or "name{label=\"v\"}") from the Prometheus /metrics
// of the process whose HTTP server is on 127.0.0.1:`http_port`; 0 if absent.
// With `ca_file`, over HTTPS to "localhost", trusting that CA.
double ScrapeMetric(int http_port, const std::string& sample, const std::string& ca_file = "");

// Runs argv[0] with argv and waits for it. Extra environment entries
// ("KEY=value") are added to the inherited environment.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         const std::vector<std::string>& env = {});

// Starts argv in the background with stdout and stderr to `log_path`;
// returns its pid. The caller reaps it (WaitProcess) or kills it.
pid_t StartProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                   const std::string& log_path);
// What WaitProcess returns for a process that outlived its limit.
constexpr int kWaitTimedOut = -2;
// Waits up to `limit` for `pid`; returns its exit code, or 128 + signal.
// A process still running then has its threads' stacks written to stderr
// (what a hang looks like, in the test's output), is killed, and gives
// kWaitTimedOut.
int WaitProcess(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(150));
// Every thread's stack of `pid`, from gdb if installed, else each
// thread's name and kernel wait channel.
std::string ThreadStacks(pid_t pid);
// SIGTERM, then WaitProcess for `limit`: whether it exited in time.
bool TerminateProcess(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(30));

// A fresh temporary folder, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// True if every regular file under folder `a` exists under `b` with the
// same bytes (what a user checks after a pull).
bool SameTree(const std::string& a, const std::string& b);

// Writes `size` pseudo-random bytes from `seed` to `path`, creating folders.
void WriteRandomFile(const std::string& path, size_t size, unsigned seed);

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_SUPPORT_SUBPROCESS_H_
