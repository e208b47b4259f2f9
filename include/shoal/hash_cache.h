// HashCache: remembers the BEP 52 hashes of files already hashed, keyed by
// what changes whenever a file's content does (device, inode, size, mtime
// and ctime in nanoseconds) and by the piece size, so publishing an
// unchanged folder again does not read it again. ctime cannot be set by a
// user, so a rewrite that restores mtime is still seen.
//
// Thread-safety: safe for concurrent use (LevelDB).
#ifndef SHOAL_HASH_CACHE_H_
#define SHOAL_HASH_CACHE_H_

#include <memory>
#include <optional>
#include <string>

#include "shoal/piece_hasher.h"
#include "shoal/status.h"

namespace leveldb {
class DB;
}

namespace shoal {

class HashCache {
 public:
  // Opens (creating) the cache in `dir`.
  static Result<std::unique_ptr<HashCache>> Open(const std::string& dir);
  // $XDG_CACHE_HOME/shoal/hashes, or ~/.cache/shoal/hashes.
  static std::string DefaultDir();
  ~HashCache();
  HashCache(const HashCache&) = delete;
  HashCache& operator=(const HashCache&) = delete;

  // The hashes of `path` if it has not changed since Put; nullopt otherwise.
  std::optional<FileHashes> Get(const std::string& path, uint32_t piece_size);
  // Records the hashes of `path` as it is now. Best effort: failures are ignored.
  void Put(const std::string& path, uint32_t piece_size, const FileHashes& hashes);

  // An imported file: its hashes and SHA-256, under a key the importer
  // derives from what identifies the content at its source (URL, path,
  // size, ETag), so an import cut off and run again reads it no more.
  struct Imported {
    FileHashes hashes;
    Digest sha256;
  };
  std::optional<Imported> GetImported(const std::string& key, uint32_t piece_size);
  // Best effort, as Put.
  void PutImported(const std::string& key, uint32_t piece_size, const Imported& file);

 private:
  explicit HashCache(leveldb::DB* db);
  std::unique_ptr<leveldb::DB> db_;
};

}  // namespace shoal

#endif  // SHOAL_HASH_CACHE_H_
