// LevelDbKv: KvStore on a LevelDB folder, the embedded default for one
// tracker. Every batch is one synced LevelDB write, so a killed tracker
// loses nothing it acknowledged. Guards are checked under a mutex that
// every Apply takes, which is enough because one process owns the folder
// (LevelDB's own lock keeps a second one out).
//
// Thread-safety: safe for concurrent use.
#ifndef SHOAL_TRACKER_LEVELDB_KV_H_
#define SHOAL_TRACKER_LEVELDB_KV_H_

#include <memory>
#include <mutex>
#include <string>

#include "kv/kv_store.h"

namespace leveldb {
class DB;
}  // namespace leveldb

namespace shoal::tracker {

class LevelDbKv final : public KvStore {
 public:
  // Opens or creates the LevelDB folder `dir`. IOError, naming the folder,
  // if it cannot (another tracker holding it, say).
  static Result<std::unique_ptr<LevelDbKv>> Open(const std::string& dir);
  ~LevelDbKv() override;

  Result<std::optional<std::string>> Get(const std::string& key) override;
  Result<std::vector<KvPair>> Scan(const std::string& begin, const std::string& end, size_t limit,
                                   bool reverse) override;
  Status Apply(const KvBatch& batch) override;
  size_t max_batch_ops() const override { return SIZE_MAX; }
  size_t max_value_bytes() const override { return SIZE_MAX; }
  Status Ping() override;
  std::string Describe() const override { return "leveldb:" + dir_; }

 private:
  LevelDbKv(leveldb::DB* db, std::string dir);

  std::unique_ptr<leveldb::DB> db_;
  const std::string dir_;
  std::mutex write_mu_;  // makes guard checks and the write one step
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_LEVELDB_KV_H_
