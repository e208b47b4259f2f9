#include "store/private_files_env.h"

#include <sys/stat.h>

#include <filesystem>

namespace shoal {
namespace {

// Files are created with the default Env's 0644 (less the umask), then
// narrowed: the moment between is spent inside a 0700 folder.
class PrivateEnv final : public leveldb::EnvWrapper {
 public:
  PrivateEnv() : EnvWrapper(leveldb::Env::Default()) {}

  leveldb::Status NewWritableFile(const std::string& f, leveldb::WritableFile** r) override {
    return Narrowed(f, 0600, target()->NewWritableFile(f, r));
  }
  leveldb::Status NewAppendableFile(const std::string& f, leveldb::WritableFile** r) override {
    return Narrowed(f, 0600, target()->NewAppendableFile(f, r));
  }
  leveldb::Status NewLogger(const std::string& f, leveldb::Logger** r) override {
    return Narrowed(f, 0600, target()->NewLogger(f, r));
  }
  leveldb::Status LockFile(const std::string& f, leveldb::FileLock** l) override {
    return Narrowed(f, 0600, target()->LockFile(f, l));
  }
  leveldb::Status CreateDir(const std::string& d) override {
    return Narrowed(d, 0700, target()->CreateDir(d));
  }

 private:
  static leveldb::Status Narrowed(const std::string& path, mode_t mode, leveldb::Status s) {
    if (s.ok()) ::chmod(path.c_str(), mode);
    return s;
  }
};

}  // namespace

leveldb::Env* PrivateFilesEnv() {
  static PrivateEnv* env = new PrivateEnv();
  return env;
}

void NarrowToPrivate(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return;
  ::chmod(dir.c_str(), 0700);
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) ::chmod(e.path().c_str(), 0600);
  }
}

}  // namespace shoal
