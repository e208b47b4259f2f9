#include "kv/leveldb_kv.h"

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <cstdint>

namespace shoal::tracker {
namespace {

// `what` failed (or not), as a Status.
Status FromLevelDb(const leveldb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  if (s.IsNotFound()) return Status::NotFound(what);
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  return Status::IOError(what + ": " + s.ToString());
}

}  // namespace

LevelDbKv::LevelDbKv(leveldb::DB* db, std::string dir) : db_(db), dir_(std::move(dir)) {}
LevelDbKv::~LevelDbKv() = default;

Result<std::unique_ptr<LevelDbKv>> LevelDbKv::Open(const std::string& dir) {
  leveldb::Options options;
  options.create_if_missing = true;
  leveldb::DB* db = nullptr;
  leveldb::Status s = leveldb::DB::Open(options, dir, &db);
  if (!s.ok()) {
    return Status::IOError("open registry at " + dir + ": " + s.ToString() +
                           " (is another tracker using this --data-dir?)");
  }
  return std::unique_ptr<LevelDbKv>(new LevelDbKv(db, dir));
}

Result<std::optional<std::string>> LevelDbKv::Get(const std::string& key) {
  std::string value;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), key, &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  SHOAL_RETURN_IF_ERROR(FromLevelDb(s, "read registry"));
  return std::optional<std::string>(std::move(value));
}

Result<std::vector<KvPair>> LevelDbKv::Scan(const std::string& begin, const std::string& end,
                                            size_t limit, bool reverse) {
  std::vector<KvPair> out;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  auto in_range = [&] {
    if (!it->Valid()) return false;
    leveldb::Slice k = it->key();
    return k.compare(begin) >= 0 && (end.empty() || k.compare(end) < 0);
  };
  if (!reverse) {
    for (it->Seek(begin); in_range() && out.size() < limit; it->Next()) {
      out.push_back({it->key().ToString(), it->value().ToString()});
    }
  } else {
    // The last key below `end`: seek to it, then step back once.
    if (end.empty()) {
      it->SeekToLast();
    } else {
      it->Seek(end);
      if (it->Valid()) {
        it->Prev();
      } else {
        it->SeekToLast();
      }
    }
    for (; in_range() && out.size() < limit; it->Prev()) {
      out.push_back({it->key().ToString(), it->value().ToString()});
    }
  }
  SHOAL_RETURN_IF_ERROR(FromLevelDb(it->status(), "scan registry"));
  return out;
}

Status LevelDbKv::Apply(const KvBatch& batch) {
  std::lock_guard<std::mutex> lock(write_mu_);
  for (const KvBatch::Guard& g : batch.guards()) {
    auto now = Get(g.key);
    if (!now.ok()) return now.status();
    if (*now != g.value) {
      return Status::AlreadyExists("registry key " + g.key + " changed under this write");
    }
  }
  leveldb::WriteBatch wb;
  for (const KvBatch::Op& op : batch.ops()) {
    if (op.value) {
      wb.Put(op.key, *op.value);
    } else {
      wb.Delete(op.key);
    }
  }
  leveldb::WriteOptions synced;
  synced.sync = true;
  return FromLevelDb(db_->Write(synced, &wb), "write registry");
}

Status LevelDbKv::Ping() {
  std::string v;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), "health-probe", &v);
  if (s.ok() || s.IsNotFound()) return Status::OK();
  return FromLevelDb(s, "registry read");
}

}  // namespace shoal::tracker
