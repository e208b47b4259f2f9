// CallerFiles: the files of a pull or a seed on the caller's side of the
// control socket.
//
// The agent never resolves a path the caller names. The caller (the shoal
// CLI, running as the user who asked) creates and opens the files itself and
// hands their descriptors over the socket, so the agent writes and reads
// with the caller's rights, not its own: a pull cannot replace what its
// caller could not, and a seed cannot read what its caller could not.
//
// Thread-safety: each object serves one job on one thread.
#ifndef SHOAL_AGENT_DAEMON_CALLER_FILES_H_
#define SHOAL_AGENT_DAEMON_CALLER_FILES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct DestFileSpec {
  std::string path;  // relative, '/'-separated, validated by the manifest
  uint64_t size = 0;
  uint32_t mode = 0644;  // as published
};

// Where a pull writes: a staging folder the caller made and later moves
// into place.
class PullDestination {
 public:
  virtual ~PullDestination() = default;
  // Lays out every folder and every file (empty), before any byte is
  // written. Called once.
  virtual Status Prepare(const std::vector<std::string>& dirs,
                         const std::vector<DestFileSpec>& files) = 0;
  // The most files one OpenFiles call may open.
  static constexpr size_t kMaxOpenBatch = 64;
  // Opens files of Prepare's list for writing, by index (at most
  // kMaxOpenBatch), and returns their descriptors in the same order. They
  // belong to the agent, which closes them. Unavailable once the caller has
  // gone away.
  virtual Result<std::vector<int>> OpenFiles(const std::vector<uint32_t>& indexes) = 0;

  // The most files, and bytes, one WriteFiles call may carry.
  static constexpr size_t kMaxWriteFiles = 1024;
  static constexpr size_t kMaxWriteBytes = 4u << 20;
  struct WholeFile {
    uint32_t index = 0;  // in Prepare's list
    std::string data;    // the whole file: exactly its size
  };
  // Has the caller write files of Prepare's list whole (at most
  // kMaxWriteFiles and kMaxWriteBytes). Unavailable once the caller has
  // gone away; NoSpace if its filesystem is full.
  virtual Status WriteFiles(const std::vector<WholeFile>& files) = 0;
};

// Where a seed reads from: the folder the version was published from.
class SeedFiles {
 public:
  virtual ~SeedFiles() = default;
  // Opens `path` (relative) for reading. The descriptor belongs to the agent.
  virtual Result<int> OpenFile(const std::string& path) = 0;
};

// Checks that `fd`, received from a caller, is a regular file open for
// writing (pull) or reading (seed), so no FIFO, socket or device can stall
// or misdirect a job. Closes `fd` and fails with PermissionDenied otherwise.
Result<int> CheckReceivedFile(int fd, bool for_write, const std::string& what);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_CALLER_FILES_H_
