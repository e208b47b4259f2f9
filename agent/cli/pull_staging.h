// PullStaging: the folder a pull is written into, beside its destination.
//
// The CLI makes it and every file in it with the rights of the user who
// runs it, hands the agent open descriptors to fill, and moves the finished
// folder into place itself, so a pull can replace only what its user could.
// An existing destination is replaced only if it is an earlier pull of the
// same model (marked by the extended attribute user.shoal.pull) or when
// asked to (--replace). Until Commit, destruction removes the folder, so a
// failed or interrupted pull leaves no partial files.
//
// Thread-safety: not thread-safe.
#ifndef SHOAL_AGENT_CLI_PULL_STAGING_H_
#define SHOAL_AGENT_CLI_PULL_STAGING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

class PullStaging {
 public:
  struct File {
    std::string path;  // relative, '/'-separated
    uint32_t mode = 0644;
    uint64_t size = 0;  // bytes the agent will write
  };

  // REQUIRES: `dest` is absolute and normalized. `model` is "ns/name".
  // InvalidArgument if the parent folder is missing or `dest` exists and
  // may not be replaced; the system's error if the folder cannot be made.
  static Result<std::unique_ptr<PullStaging>> Create(const std::string& dest,
                                                     const std::string& model, bool replace);
  ~PullStaging();
  PullStaging(const PullStaging&) = delete;
  PullStaging& operator=(const PullStaging&) = delete;

  // Makes `dirs` (parents first) and creates `files` empty. Each path must
  // be relative, with no empty, '.' or '..' part.
  Status Prepare(const std::vector<std::string>& dirs, const std::vector<File>& files);
  // Opens file `index` of Prepare's list for writing; the caller owns the
  // descriptor.
  Result<int> OpenFile(uint32_t index);
  // Writes file `index` of Prepare's list whole. InvalidArgument if there
  // is no such file or `len` is not the size Prepare gave it; NoSpace if
  // the filesystem is full.
  Status WriteWhole(uint32_t index, const uint8_t* data, size_t len);

  // Makes the files read-only with their published modes, marks the folder
  // as a pull of the model, and moves it to the destination, swapping out
  // an earlier pull (whose files are then removed).
  Status Commit();

  const std::string& dest() const { return dest_; }

 private:
  PullStaging(std::string dest, std::string model, bool replace, std::string path, int dir_fd);

  const std::string dest_, model_;
  const bool replace_;
  const std::string path_;  // the staging folder
  int dir_fd_;              // open on path_
  std::vector<File> files_;
  bool committed_ = false;
};

// Why `dest`, which exists, may not be replaced by a pull of `model`;
// empty if it may (an earlier pull of the same model).
std::string ReplaceRefusal(const std::string& dest, const std::string& model);

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_PULL_STAGING_H_
