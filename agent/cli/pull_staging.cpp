#include "cli/pull_staging.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "shoal/posix_file.h"

namespace shoal {
namespace fs = std::filesystem;
namespace {

constexpr const char* kMarker = "user.shoal.pull";

bool SafeRelative(const std::string& path) {
  if (path.empty() || path.front() == '/') return false;
  size_t start = 0;
  for (;;) {
    size_t slash = path.find('/', start);
    std::string part =
        path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

std::string MarkerOf(const std::string& path) {
  char buf[512];
  ssize_t n = ::lgetxattr(path.c_str(), kMarker, buf, sizeof(buf));
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

mode_t Umask() {
  mode_t m = ::umask(0);
  ::umask(m);
  return m;
}

}  // namespace

std::string ReplaceRefusal(const std::string& dest, const std::string& model) {
  std::string marker = MarkerOf(dest);
  if (marker == model) return "";
  if (!marker.empty()) return dest + " holds a pull of " + marker + ", not " + model;
  return dest + " exists and is not an earlier pull of " + model;
}

PullStaging::PullStaging(std::string dest, std::string model, bool replace, std::string path,
                         int dir_fd)
    : dest_(std::move(dest)),
      model_(std::move(model)),
      replace_(replace),
      path_(std::move(path)),
      dir_fd_(dir_fd) {}

Result<std::unique_ptr<PullStaging>> PullStaging::Create(const std::string& dest,
                                                         const std::string& model, bool replace) {
  fs::path d(dest);
  std::error_code ec;
  if (!fs::is_directory(d.parent_path(), ec)) {
    return Status::InvalidArgument("destination's folder " + d.parent_path().string() +
                                   " does not exist");
  }
  struct stat st;
  if (::lstat(dest.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dest + " exists and is not a folder");
    std::string why = ReplaceRefusal(dest, model);
    if (!why.empty() && !replace)
      return Status::InvalidArgument(why + "; pass --replace to replace it");
  }
  std::string tmpl = (d.parent_path() / ("." + d.filename().string() + ".shoal-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    return Status::FromErrno("create a staging folder beside " + dest, errno);
  int fd = ::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    Status s = Status::FromErrno("open " + tmpl, errno);
    ::rmdir(tmpl.c_str());
    return s;
  }
  return std::unique_ptr<PullStaging>(new PullStaging(dest, model, replace, tmpl, fd));
}

PullStaging::~PullStaging() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
  if (committed_) return;
  std::error_code ec;
  // The agent wrote with descriptors only; nothing here is anyone else's.
  fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path_, ec);
}

Status PullStaging::Prepare(const std::vector<std::string>& dirs, const std::vector<File>& files) {
  for (const std::string& dir : dirs) {
    if (!SafeRelative(dir))
      return Status::InvalidArgument("the agent named an unsafe folder '" + dir + "'");
    if (::mkdirat(dir_fd_, dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FromErrno("create " + path_ + "/" + dir, errno);
    }
  }
  for (const File& f : files) {
    if (!SafeRelative(f.path))
      return Status::InvalidArgument("the agent named an unsafe file '" + f.path + "'");
    int fd = ::openat(dir_fd_, f.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                      0600);
    if (fd < 0) return Status::FromErrno("create " + path_ + "/" + f.path, errno);
    ::close(fd);
  }
  files_ = files;
  return Status::OK();
}

Result<int> PullStaging::OpenFile(uint32_t index) {
  if (index >= files_.size()) {
    return Status::InvalidArgument("the agent asked for file " + std::to_string(index) + " of " +
                                   std::to_string(files_.size()));
  }
  const std::string& path = files_[index].path;
  int fd = ::openat(dir_fd_, path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path_ + "/" + path, errno);
  return fd;
}

Status PullStaging::WriteWhole(uint32_t index, const uint8_t* data, size_t len) {
  if (index >= files_.size()) {
    return Status::InvalidArgument("the agent wrote file " + std::to_string(index) + " of " +
                                   std::to_string(files_.size()));
  }
  const File& f = files_[index];
  if (len != f.size) {
    return Status::InvalidArgument("the agent sent " + std::to_string(len) + " bytes for " +
                                   f.path + " of " + std::to_string(f.size));
  }
  int fd = ::openat(dir_fd_, f.path.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path_ + "/" + f.path, errno);
  Status s = PwriteFull(fd, data, len, 0, path_ + "/" + f.path);
  if (::close(fd) != 0 && s.ok()) s = Status::FromErrno("close " + path_ + "/" + f.path, errno);
  if (s.IsNoSpace()) return Status::NoSpace("the destination is full: " + s.message());
  return s;
}

Status PullStaging::Commit() {
  for (const File& f : files_) {
    if (::fchmodat(dir_fd_, f.path.c_str(), static_cast<mode_t>(f.mode & 0555), 0) != 0) {
      return Status::FromErrno("chmod " + path_ + "/" + f.path, errno);
    }
  }
  // mkdtemp made the folder 0700; give it what a mkdir would have.
  if (::fchmod(dir_fd_, 0777 & ~Umask()) != 0) return Status::FromErrno("chmod " + path_, errno);
  // Where extended attributes are not supported, a later pull to the same
  // place needs --replace.
  ::fsetxattr(dir_fd_, kMarker, model_.data(), model_.size(), 0);
  if (::syncfs(dir_fd_) != 0) return Status::FromErrno("sync " + path_, errno);
  if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, dest_.c_str(), RENAME_NOREPLACE) == 0) {
    committed_ = true;
    return Status::OK();
  }
  if (errno != EEXIST) return Status::FromErrno("rename " + path_ + " to " + dest_, errno);
  // Something appeared meanwhile: the same rule as at the start.
  std::string why = ReplaceRefusal(dest_, model_);
  if (!why.empty() && !replace_)
    return Status::InvalidArgument(why + "; pass --replace to replace it");
  if (::renameat2(AT_FDCWD, path_.c_str(), AT_FDCWD, dest_.c_str(), RENAME_EXCHANGE) != 0) {
    return Status::FromErrno("swap " + path_ + " with " + dest_, errno);
  }
  committed_ = true;
  std::error_code ec;
  fs::remove_all(path_, ec);  // now the previous contents
  return Status::OK();
}

}  // namespace shoal
