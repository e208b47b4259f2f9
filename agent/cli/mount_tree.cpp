#include "cli/mount_tree.h"

namespace shoal {

Result<MountTree> MountTree::Build(const std::vector<std::string>& files,
                                   const std::vector<std::string>& empty_dirs) {
  MountTree t;
  t.nodes_.push_back(MountNode{MountTree::kRoot, "", true, -1, {}});
  for (const std::string& d : empty_dirs) {
    if (t.Folder(d) == 0)
      return Status::InvalidArgument("folder '" + d + "' is also a file in the version");
  }
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i];
    const size_t slash = path.rfind('/');
    const uint64_t parent = slash == std::string::npos ? kRoot : t.Folder(path.substr(0, slash));
    const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    if (parent == 0 || name.empty() || t.nodes_[parent - 1].children.count(name) != 0)
      return Status::InvalidArgument("file '" + path +
                                     "' clashes with another path of the version");
    t.nodes_.push_back(MountNode{parent, name, false, static_cast<int64_t>(i), {}});
    t.nodes_[parent - 1].children.emplace(name, t.nodes_.size());
  }
  return t;
}

uint64_t MountTree::Folder(const std::string& path) {
  uint64_t at = kRoot;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string name = path.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    auto it = nodes_[at - 1].children.find(name);
    if (it != nodes_[at - 1].children.end()) {
      if (!nodes_[it->second - 1].dir) return 0;
      at = it->second;
      continue;
    }
    nodes_.push_back(MountNode{at, name, true, -1, {}});
    const uint64_t ino = nodes_.size();
    nodes_[at - 1].children.emplace(name, ino);
    at = ino;
  }
  return at;
}

const MountNode* MountTree::Get(uint64_t ino) const {
  if (ino == 0 || ino > nodes_.size()) return nullptr;
  return &nodes_[ino - 1];
}

uint64_t MountTree::Lookup(uint64_t parent, const std::string& name) const {
  const MountNode* p = Get(parent);
  if (p == nullptr || !p->dir) return 0;
  auto it = p->children.find(name);
  return it == p->children.end() ? 0 : it->second;
}

}  // namespace shoal
