#include "store/store_layout.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "shoal/posix_file.h"

namespace shoal {
namespace {

std::string TrimSlash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

// Names of the entries of `path`, without "." and "..".
Status ListDir(const std::string& path, std::vector<std::string>* names) {
  std::unique_ptr<DIR, DirCloser> d(::opendir(path.c_str()));
  if (!d) return Status::FromErrno("list folder " + path, errno);
  while (struct dirent* e = ::readdir(d.get())) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names->push_back(std::move(name));
  }
  return Status::OK();
}

bool IsHexPair(const std::string& s) {
  uint8_t b;
  return s.size() == 2 && hex::Decode(s, &b, 1) && hex::Encode(&b, 1) == s;
}

Status RemovePath(const std::string& path) {
  if (::unlink(path.c_str()) == 0 || errno == ENOENT) return Status::OK();
  if (errno == EISDIR || errno == EPERM) {
    std::vector<std::string> names;
    SHOAL_RETURN_IF_ERROR(ListDir(path, &names));
    for (const auto& n : names) SHOAL_RETURN_IF_ERROR(RemovePath(path + "/" + n));
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return Status::OK();
  }
  return Status::FromErrno("remove " + path, errno);
}

}  // namespace

StoreLayout::StoreLayout(std::string dir)
    : dir_(TrimSlash(std::move(dir))),
      chunks_dir_(dir_ + "/chunks"),
      tmp_dir_(dir_ + "/tmp"),
      index_dir_(dir_ + "/index") {}

std::string StoreLayout::ChunkFolder(const ChunkId& id) const {
  std::string hex = id.ToHex();
  return chunks_dir_ + "/" + hex.substr(0, 2) + "/" + hex.substr(2, 2);
}

std::string StoreLayout::ChunkPath(const ChunkId& id) const {
  std::string hex = id.ToHex();
  return chunks_dir_ + "/" + hex.substr(0, 2) + "/" + hex.substr(2, 2) + "/" + hex;
}

std::string StoreLayout::NewTempPath(const ChunkId& id, const char* kind) const {
  return tmp_dir_ + "/" + id.ToHex() + "." + std::to_string(temp_seq_.fetch_add(1)) + "." + kind;
}

Status StoreLayout::CreateFolders() const {
  // Private to the agent: whoever reads the cache reads every namespace's
  // chunks. A folder made beforehand (a hostPath, tmpfiles) is narrowed
  // too, where the agent owns it.
  SHOAL_RETURN_IF_ERROR(MakeDirs(dir_, 0700));
  struct stat st;
  if (::stat(dir_.c_str(), &st) == 0 && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0) {
    if (::chmod(dir_.c_str(), 0700) != 0)
      return Status::FromErrno("make " + dir_ + " private", errno);
  }
  SHOAL_RETURN_IF_ERROR(MakeDirs(chunks_dir_, 0700));
  return MakeDirs(tmp_dir_, 0700);
}

Status StoreLayout::ClearTemp(uint64_t* removed) const {
  std::vector<std::string> names;
  SHOAL_RETURN_IF_ERROR(ListDir(tmp_dir_, &names));
  for (const auto& n : names) {
    SHOAL_RETURN_IF_ERROR(RemovePath(tmp_dir_ + "/" + n));
    ++*removed;
  }
  return Status::OK();
}

Status StoreLayout::ScanChunks(std::vector<FoundChunk>* found, uint64_t* removed) const {
  std::vector<std::string> level1;
  SHOAL_RETURN_IF_ERROR(ListDir(chunks_dir_, &level1));
  for (const auto& a : level1) {
    std::string path_a = chunks_dir_ + "/" + a;
    struct stat st;
    if (!IsHexPair(a) || ::stat(path_a.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      SHOAL_RETURN_IF_ERROR(RemovePath(path_a));
      ++*removed;
      continue;
    }
    std::vector<std::string> level2;
    SHOAL_RETURN_IF_ERROR(ListDir(path_a, &level2));
    for (const auto& b : level2) {
      std::string path_b = path_a + "/" + b;
      if (!IsHexPair(b) || ::stat(path_b.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        SHOAL_RETURN_IF_ERROR(RemovePath(path_b));
        ++*removed;
        continue;
      }
      std::vector<std::string> files;
      SHOAL_RETURN_IF_ERROR(ListDir(path_b, &files));
      for (const auto& f : files) {
        std::string path = path_b + "/" + f;
        auto id = ChunkId::ParseHex(f);
        bool ok = id.ok() && id->ToHex() == f && f.compare(0, 2, a) == 0 &&
                  f.compare(2, 2, b) == 0 && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
        if (!ok) {
          SHOAL_RETURN_IF_ERROR(RemovePath(path));
          ++*removed;
          continue;
        }
        FoundChunk c;
        c.id = *id;
        c.size = static_cast<uint64_t>(st.st_size);
        c.mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
        found->push_back(c);
      }
    }
  }
  return Status::OK();
}

}  // namespace shoal
