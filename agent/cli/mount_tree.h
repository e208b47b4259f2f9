// MountTree: the folders and files of a mounted version, by inode number,
// as FUSE asks for them. Built once from the manifest's paths; immutable.
//
// Inode 1 is the mount's root. Thread-safety: const after Build, so any
// number of threads may read it.
#ifndef SHOAL_AGENT_CLI_MOUNT_TREE_H_
#define SHOAL_AGENT_CLI_MOUNT_TREE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "shoal/status.h"

namespace shoal {

struct MountNode {
  uint64_t parent = 1;
  std::string name;  // "" for the root
  bool dir = false;
  int64_t file = -1;                         // index in the version's files; -1 for a folder
  std::map<std::string, uint64_t> children;  // folders only: name to inode
};

class MountTree {
 public:
  static constexpr uint64_t kRoot = 1;

  // The tree of `files` (paths relative, '/'-separated, in the version's
  // order) and `empty_dirs`. InvalidArgument if a path is both a file and
  // a folder.
  static Result<MountTree> Build(const std::vector<std::string>& files,
                                 const std::vector<std::string>& empty_dirs);

  // The node of `ino`, or null.
  const MountNode* Get(uint64_t ino) const;
  // The inode of `name` in folder `parent`, or 0.
  uint64_t Lookup(uint64_t parent, const std::string& name) const;
  uint64_t size() const { return nodes_.size(); }

 private:
  // The inode of folder `path`, made with its parents if missing; 0 if a
  // file is in the way.
  uint64_t Folder(const std::string& path);

  std::vector<MountNode> nodes_;  // inode i at nodes_[i - 1]
};

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_MOUNT_TREE_H_
