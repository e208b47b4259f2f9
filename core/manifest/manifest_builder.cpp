#include "shoal/manifest_builder.h"

#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>

#include "shoal/utc_time.h"

namespace shoal {
namespace fs = std::filesystem;

std::string ModelNameFromFolder(const std::string& dir) {
  std::string base = fs::path(dir).lexically_normal().filename().string();
  if (base.empty() || base == ".") base = fs::absolute(dir).lexically_normal().filename().string();
  std::string out;
  for (char c : base) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    out += ok ? c : '-';
  }
  while (!out.empty() && !((out[0] >= 'a' && out[0] <= 'z') || (out[0] >= '0' && out[0] <= '9'))) {
    out.erase(0, 1);
  }
  if (out.size() > 128) out.resize(128);
  return out.empty() ? "model" : out;
}

namespace {

struct Walk {
  std::vector<std::string> rel_paths;
  std::vector<std::string> abs_paths;
  std::vector<uint32_t> modes;
  std::vector<std::string> empty_dirs;
};

Status WalkFolder(const fs::path& root, bool follow, Walk* out) {
  std::error_code ec;
  auto opts =
      follow ? fs::directory_options::follow_directory_symlink : fs::directory_options::none;
  fs::recursive_directory_iterator it(root, opts, ec), end;
  if (ec) return Status::FromErrno("open folder " + root.string(), ec.value());
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::FromErrno("walk " + root.string(), ec.value());
    const fs::path& p = it->path();
    std::string rel = p.lexically_relative(root).generic_string();
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return Status::FromErrno("stat " + p.string(), errno);
    if (S_ISLNK(st.st_mode)) {
      if (!follow) {
        return Status::InvalidArgument("'" + rel +
                                       "' is a symbolic link; pass --follow-symlinks to include "
                                       "its target, or remove it");
      }
      if (::stat(p.c_str(), &st) != 0) {
        return Status::FromErrno("follow symbolic link '" + rel + "'", errno);
      }
    }
    if (S_ISDIR(st.st_mode)) {
      if (fs::is_empty(p, ec)) out->empty_dirs.push_back(rel);
      continue;
    }
    if (!S_ISREG(st.st_mode)) {
      return Status::InvalidArgument("'" + rel +
                                     "' is not a regular file or folder (a socket, FIFO or "
                                     "device); remove it from the checkpoint folder");
    }
    out->rel_paths.push_back(rel);
    out->abs_paths.push_back(p.string());
    out->modes.push_back(static_cast<uint32_t>(st.st_mode & 0777));
  }
  return Status::OK();
}

}  // namespace

Result<Manifest> BuildManifest(const std::string& dir, const BuildOptions& options,
                               const HashProgress& progress) {
  SHOAL_RETURN_IF_ERROR(options.hash.Validate());
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return Status::FromErrno("checkpoint folder " + dir, errno);
  if (!S_ISDIR(st.st_mode)) return Status::InvalidArgument(dir + " is not a folder");

  Walk walk;
  SHOAL_RETURN_IF_ERROR(WalkFolder(fs::path(dir), options.follow_symlinks, &walk));
  for (const std::string& rel : walk.rel_paths) SHOAL_RETURN_IF_ERROR(ValidateRelativePath(rel));

  // Files the cache knows are not read; the rest are hashed in one pass.
  std::vector<std::optional<FileHashes>> cached(walk.abs_paths.size());
  std::vector<std::string> to_hash;
  std::vector<size_t> to_hash_index;
  for (size_t i = 0; i < walk.abs_paths.size(); ++i) {
    if (options.hash_cache != nullptr)
      cached[i] = options.hash_cache->Get(walk.abs_paths[i], options.hash.piece_size);
    if (!cached[i]) {
      to_hash.push_back(walk.abs_paths[i]);
      to_hash_index.push_back(i);
    }
  }
  Result<std::vector<FileHashes>> fresh = HashFiles(to_hash, options.hash, progress);
  if (!fresh.ok()) return fresh.status();
  std::vector<FileHashes> hashes_v(walk.abs_paths.size());
  for (size_t i = 0; i < cached.size(); ++i) {
    if (cached[i]) hashes_v[i] = std::move(*cached[i]);
  }
  for (size_t k = 0; k < to_hash_index.size(); ++k) {
    if (options.hash_cache != nullptr) {
      options.hash_cache->Put(to_hash[k], options.hash.piece_size, (*fresh)[k]);
    }
    hashes_v[to_hash_index[k]] = std::move((*fresh)[k]);
  }
  std::vector<FileHashes>* hashes = &hashes_v;

  Manifest m;
  m.ns = options.ns;
  m.name = options.name.empty() ? ModelNameFromFolder(dir) : options.name;
  m.created_by = options.created_by;
  if (m.created_by.empty()) {
    const char* user = std::getenv("USER");
    m.created_by = user != nullptr ? user : "unknown";
  }
  m.created_at_ms = NowMs();
  m.piece_size = options.hash.piece_size;
  for (size_t i = 0; i < walk.rel_paths.size(); ++i) {
    FileEntry f;
    f.path = walk.rel_paths[i];
    f.size = (*hashes)[i].size;
    f.mode = walk.modes[i];
    f.pieces_root = (*hashes)[i].pieces_root;
    f.piece_layer = std::move((*hashes)[i].piece_layer);
    m.files.push_back(std::move(f));
  }
  m.empty_dirs = std::move(walk.empty_dirs);
  m.Canonicalize();
  SHOAL_RETURN_IF_ERROR(ValidateManifest(m));
  return m;
}

}  // namespace shoal
