#include "shoal/hash_cache.h"

#include <leveldb/db.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace shoal {
namespace {

// The identity of a file's current content, or "" if it cannot be stat'ed.
std::string Key(const std::string& path, uint32_t piece_size) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return "";
  std::error_code ec;
  std::string abs = std::filesystem::absolute(path, ec).lexically_normal().string();
  char buf[160];
  std::snprintf(buf, sizeof(buf), "|%llu|%llu|%lld|%lld.%09ld|%lld.%09ld|%u",
                static_cast<unsigned long long>(st.st_dev),
                static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
                static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec, piece_size);
  return abs + buf;
}

std::string Encode(const FileHashes& h) {
  std::string v(reinterpret_cast<const char*>(&h.size), 8);
  v.append(reinterpret_cast<const char*>(h.pieces_root.data()), 32);
  for (const ChunkId& c : h.piece_layer) v.append(reinterpret_cast<const char*>(c.data()), 32);
  return v;
}

std::optional<FileHashes> Decode(std::string_view v) {
  if (v.size() < 8 + 32 || (v.size() - 40) % 32 != 0) return std::nullopt;
  FileHashes h;
  std::memcpy(&h.size, v.data(), 8);
  h.pieces_root = PiecesRoot::FromBytes(reinterpret_cast<const uint8_t*>(v.data() + 8));
  for (size_t off = 40; off < v.size(); off += 32) {
    h.piece_layer.push_back(ChunkId::FromBytes(reinterpret_cast<const uint8_t*>(v.data() + off)));
  }
  return h;
}

// Imported files live under their own prefix: a source's key never looks
// like an absolute path.
const char kImportedPrefix[] = "import|";

}  // namespace

std::string HashCache::DefaultDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/shoal/hashes";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : "/tmp") + "/.cache/shoal/hashes";
}

HashCache::HashCache(leveldb::DB* db) : db_(db) {}
HashCache::~HashCache() = default;

Result<std::unique_ptr<HashCache>> HashCache::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  leveldb::Options options;
  options.create_if_missing = true;
  leveldb::DB* db = nullptr;
  leveldb::Status s = leveldb::DB::Open(options, dir, &db);
  if (!s.ok()) return Status::IOError("open hash cache " + dir + ": " + s.ToString());
  return std::unique_ptr<HashCache>(new HashCache(db));
}

std::optional<FileHashes> HashCache::Get(const std::string& path, uint32_t piece_size) {
  std::string key = Key(path, piece_size);
  std::string v;
  if (key.empty() || !db_->Get(leveldb::ReadOptions(), key, &v).ok()) return std::nullopt;
  return Decode(v);
}

void HashCache::Put(const std::string& path, uint32_t piece_size, const FileHashes& h) {
  std::string key = Key(path, piece_size);
  if (key.empty()) return;
  db_->Put(leveldb::WriteOptions(), key, Encode(h));
}

std::optional<HashCache::Imported> HashCache::GetImported(const std::string& key,
                                                          uint32_t piece_size) {
  std::string v;
  const std::string k = kImportedPrefix + key + "|" + std::to_string(piece_size);
  if (!db_->Get(leveldb::ReadOptions(), k, &v).ok() || v.size() < 32) return std::nullopt;
  std::optional<FileHashes> h = Decode(std::string_view(v).substr(32));
  if (!h) return std::nullopt;
  return Imported{std::move(*h), Digest::FromBytes(reinterpret_cast<const uint8_t*>(v.data()))};
}

void HashCache::PutImported(const std::string& key, uint32_t piece_size, const Imported& file) {
  const std::string k = kImportedPrefix + key + "|" + std::to_string(piece_size);
  std::string v(reinterpret_cast<const char*>(file.sha256.data()), 32);
  db_->Put(leveldb::WriteOptions(), k, v + Encode(file.hashes));
}

}  // namespace shoal
