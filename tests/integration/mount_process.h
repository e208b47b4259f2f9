// A `shoal mount` process as the mount tests run it: started on one
// agent's control socket, waited for until the kernel lists the folder as
// mounted, and torn down even when a check failed midway.
#ifndef SHOAL_TESTS_INTEGRATION_MOUNT_PROCESS_H_
#define SHOAL_TESTS_INTEGRATION_MOUNT_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/agent_process.h"
#include "support/subprocess.h"
#include "support/tracker_process.h"

namespace shoal::testing {

// True if `dir` is a mount point, as /proc/self/mountinfo lists them.
inline bool Mounted(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    if (point == dir) return true;
  }
  return false;
}

// Starts `shoal mount ref dir --agent <agent's socket> flags...` reading
// with `token`, logging to `log`, and waits up to 20 s for the folder to
// be mounted. Returns its pid; the caller checks Mounted(dir).
inline pid_t StartMount(const AgentProcess& agent, const std::string& ref, const std::string& dir,
                        const std::string& token, const std::string& log,
                        const std::vector<std::string>& flags = {}) {
  std::vector<std::string> argv = {CliBinary(), "mount", ref, dir, "--agent", agent.socket()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  const pid_t pid = StartProcess(argv, {"SHOAL_TOKEN=" + token}, log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!Mounted(dir) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return pid;
}

// Ends a mount a failed check left behind: the process, then the mount.
inline void ForceUnmount(pid_t pid, const std::string& dir) {
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    WaitProcess(pid);
  }
  if (Mounted(dir)) RunProcess({"/usr/bin/fusermount3", "-u", "-z", dir});
}

}  // namespace shoal::testing

#endif  // SHOAL_TESTS_INTEGRATION_MOUNT_PROCESS_H_
