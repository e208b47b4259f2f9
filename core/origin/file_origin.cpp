#include "shoal/file_origin.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <vector>

#include "shoal/posix_file.h"

namespace shoal {
namespace {

constexpr char kTempPrefix[] = ".shoal-tmp-";
constexpr size_t kBufferSize = 1 << 20;

// Refuses any key that could name something outside the root.
Status CheckKey(const std::string& key) {
  auto bad = [&](const char* why) {
    return Status::InvalidArgument("origin key '" + key.substr(0, 200) + "' " + why);
  };
  if (key.empty()) return bad("is empty");
  if (key.size() > 1024) return bad("is longer than 1024 bytes");
  if (key.find('\0') != std::string::npos) return bad("contains a NUL byte");
  if (key.find('\\') != std::string::npos) return bad("contains a backslash");
  if (key.front() == '/') return bad("is absolute");
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string::npos) end = key.size();
    std::string seg = key.substr(start, end - start);
    if (seg.empty()) return bad("has an empty path segment");
    if (seg == "." || seg == "..") return bad("has a '.' or '..' segment");
    if (seg.rfind(kTempPrefix, 0) == 0) return bad("uses the reserved temporary-file prefix");
    start = end + 1;
  }
  return Status::OK();
}

class FileOrigin final : public Origin {
 public:
  explicit FileOrigin(std::string root) : root_(std::move(root)) {}

  Status Get(const std::string& key, uint64_t offset, uint64_t length, ByteSink& sink) override {
    Status s = DoGet(key, offset, length, sink);
    if (!s.ok()) counters_.AddError(OriginOp::kGet);
    return s;
  }

  Status Put(const std::string& key, const uint8_t* data, size_t len) override {
    counters_.AddRequest(OriginOp::kPut);
    Status s = WriteAtomically(
        key, [&](int fd, const std::string& tmp) { return PwriteFull(fd, data, len, 0, tmp); });
    if (s.ok())
      counters_.AddBytes(OriginOp::kPut, len);
    else
      counters_.AddError(OriginOp::kPut);
    return s;
  }

  Status PutStream(const std::string& key, ByteSource& source) override {
    counters_.AddRequest(OriginOp::kPut);
    uint64_t total = 0;
    Status s = WriteAtomically(key, [&](int fd, const std::string& tmp) -> Status {
      std::vector<uint8_t> buf(kBufferSize);
      for (;;) {
        Result<size_t> n = source.Read(buf.data(), buf.size());
        if (!n.ok()) return n.status();
        if (*n == 0) return Status::OK();
        SHOAL_RETURN_IF_ERROR(PwriteFull(fd, buf.data(), *n, total, tmp));
        total += *n;
      }
    });
    if (s.ok())
      counters_.AddBytes(OriginOp::kPut, total);
    else
      counters_.AddError(OriginOp::kPut);
    return s;
  }

  Result<ObjectInfo> Head(const std::string& key) override {
    counters_.AddRequest(OriginOp::kHead);
    Status s = CheckKey(key);
    struct stat st;
    if (s.ok() && ::stat(Path(key).c_str(), &st) != 0) s = Status::FromErrno(Where(key), errno);
    if (s.ok() && !S_ISREG(st.st_mode)) s = Status::NotFound(Where(key) + " is not an object");
    if (!s.ok()) {
      counters_.AddError(OriginOp::kHead);
      return s;
    }
    return ObjectInfo{key, static_cast<uint64_t>(st.st_size), ""};
  }

  Result<ListPage> List(const std::string& prefix, const std::string& token,
                        uint32_t max_keys) override {
    counters_.AddRequest(OriginOp::kList);
    if (max_keys == 0 || max_keys > 1000) {
      counters_.AddError(OriginOp::kList);
      return Status::InvalidArgument("List: max_keys must be between 1 and 1000");
    }
    // Walk only the deepest folder the prefix is sure to be under.
    size_t slash = prefix.find_last_of('/');
    std::string base = slash == std::string::npos ? "" : prefix.substr(0, slash);
    if (!base.empty() && !CheckKey(base).ok()) return ListPage{};
    std::vector<ObjectInfo> found;
    Walk(base, prefix, token, &found);
    std::sort(found.begin(), found.end(),
              [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
    ListPage page;
    if (found.size() > max_keys) {
      found.resize(max_keys);
      page.next_token = found.back().key;
    }
    page.objects = std::move(found);
    return page;
  }

  Status Delete(const std::string& key) override {
    counters_.AddRequest(OriginOp::kDelete);
    Status s = CheckKey(key);
    if (s.ok() && ::unlink(Path(key).c_str()) != 0 && errno != ENOENT) {
      s = Status::FromErrno("delete " + Where(key), errno);
    }
    if (!s.ok()) counters_.AddError(OriginOp::kDelete);
    return s;
  }

  OriginCounters counters() const override { return counters_.Snapshot(); }
  std::string Describe() const override { return "file://" + root_; }

 private:
  std::string Path(const std::string& key) const { return root_ + "/" + key; }
  std::string Where(const std::string& key) const { return "file://" + root_ + "/" + key; }

  Status DoGet(const std::string& key, uint64_t offset, uint64_t length, ByteSink& sink) {
    counters_.AddRequest(OriginOp::kGet);
    SHOAL_RETURN_IF_ERROR(CheckKey(key));
    ScopedFd fd(::open(Path(key).c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return Status::FromErrno(Where(key), errno);
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return Status::FromErrno("stat " + Where(key), errno);
    const uint64_t size = static_cast<uint64_t>(st.st_size);
    if (length == kToEnd) length = offset >= size ? 0 : size - offset;
    if (offset > size || length > size - offset) {
      return Status::InvalidArgument("range " + std::to_string(offset) + "+" +
                                     std::to_string(length) + " reaches past the end of " +
                                     Where(key) + " (" + std::to_string(size) + " bytes)");
    }
    const std::string where = Where(key);
    std::vector<uint8_t> buf(std::min<uint64_t>(kBufferSize, std::max<uint64_t>(length, 1)));
    uint64_t pos = offset, left = length;
    while (left > 0) {
      const size_t want = static_cast<size_t>(std::min<uint64_t>(buf.size(), left));
      Result<size_t> got = PreadFull(fd.get(), buf.data(), want, pos, where);
      if (!got.ok()) return got.status();
      if (*got < want) return Status::IOError(where + " shrank while being read");
      SHOAL_RETURN_IF_ERROR(sink.Write(buf.data(), want));
      counters_.AddBytes(OriginOp::kGet, want);
      pos += want;
      left -= want;
    }
    return Status::OK();
  }

  // Writes through `fill` into a temporary file beside the target, fsyncs it,
  // renames it over the target and fsyncs the folder.
  template <typename Fill>
  Status WriteAtomically(const std::string& key, Fill fill) {
    SHOAL_RETURN_IF_ERROR(CheckKey(key));
    const std::string path = Path(key);
    const std::string dir = path.substr(0, path.find_last_of('/'));
    SHOAL_RETURN_IF_ERROR(MakeDirs(dir));
    const std::string tmp = dir + "/" + kTempPrefix + std::to_string(::getpid()) + "-" +
                            std::to_string(next_tmp_.fetch_add(1));
    ScopedFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.get() < 0) return Status::FromErrno("create " + tmp, errno);
    Status s = fill(fd.get(), tmp);
    if (s.ok() && ::fsync(fd.get()) != 0) s = Status::FromErrno("fsync " + tmp, errno);
    if (s.ok() && ::close(fd.release()) != 0) s = Status::FromErrno("close " + tmp, errno);
    if (s.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
      s = Status::FromErrno("rename to " + path, errno);
    }
    if (!s.ok()) {
      ::unlink(tmp.c_str());
      return s;
    }
    ScopedFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.get() >= 0) ::fsync(dfd.get());
    return Status::OK();
  }

  void Walk(const std::string& rel_dir, const std::string& prefix, const std::string& after,
            std::vector<ObjectInfo>* out) const {
    const std::string dir = rel_dir.empty() ? root_ : root_ + "/" + rel_dir;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return;
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || name.rfind(kTempPrefix, 0) == 0) continue;
      std::string key = rel_dir.empty() ? name : rel_dir + "/" + name;
      struct stat st;
      if (::stat((dir + "/" + name).c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        // Descend only where keys with the prefix can be.
        std::string as_dir = key + "/";
        if (as_dir.compare(0, std::min(as_dir.size(), prefix.size()), prefix, 0,
                           std::min(as_dir.size(), prefix.size())) == 0) {
          Walk(key, prefix, after, out);
        }
      } else if (S_ISREG(st.st_mode) && key.rfind(prefix, 0) == 0 && key > after) {
        out->push_back(ObjectInfo{key, static_cast<uint64_t>(st.st_size), ""});
      }
    }
    ::closedir(d);
  }

  // Constant after construction.
  const std::string root_;
  // Thread-safe on their own.
  std::atomic<uint64_t> next_tmp_{0};
  OriginCounterSet counters_;
};

}  // namespace

Result<std::unique_ptr<Origin>> NewFileOrigin(const std::string& root) {
  if (root.empty() || root.front() != '/') {
    return Status::InvalidArgument("file origin folder '" + root + "' must be an absolute path");
  }
  std::string clean = root;
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  SHOAL_RETURN_IF_ERROR(MakeDirs(clean));
  return std::unique_ptr<Origin>(new FileOrigin(clean));
}

}  // namespace shoal
