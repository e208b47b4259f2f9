#include "store/chunk_index.h"

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include <cstring>

#include "store/private_files_env.h"

namespace shoal {
namespace {

constexpr char kChunkPrefix = 'c';
constexpr char kFormatKey[] = "!format";
constexpr char kFormat[] = "1";
constexpr uint8_t kRecordVersion = 1;
constexpr size_t kRecordSize = 3 + 8 + 8;

std::string ChunkKey(const ChunkId& id) {
  std::string key(1, kChunkPrefix);
  key.append(reinterpret_cast<const char*>(id.data()), ChunkId::kSize);
  return key;
}

void PutFixed64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<uint8_t>(p[i])} << (8 * i);
  return v;
}

std::string EncodeRecord(const IndexRecord& r) {
  std::string v;
  v.reserve(kRecordSize);
  v.push_back(static_cast<char>(kRecordVersion));
  v.push_back(static_cast<char>(r.state));
  v.push_back(static_cast<char>(r.owned ? 1 : 0));
  PutFixed64(&v, r.size);
  PutFixed64(&v, static_cast<uint64_t>(r.last_access_ms));
  return v;
}

Result<IndexRecord> DecodeRecord(const leveldb::Slice& v) {
  if (v.size() != kRecordSize || static_cast<uint8_t>(v[0]) != kRecordVersion ||
      static_cast<uint8_t>(v[1]) != static_cast<uint8_t>(ChunkState::kReady) ||
      static_cast<uint8_t>(v[2]) > 1) {
    return Status::Corruption("index record of " + std::to_string(v.size()) +
                              " bytes does not decode");
  }
  IndexRecord r;
  r.state = ChunkState::kReady;
  r.owned = v[2] == 1;
  r.size = GetFixed64(v.data() + 3);
  r.last_access_ms = static_cast<int64_t>(GetFixed64(v.data() + 11));
  return r;
}

Status FromLevelDb(const leveldb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  if (s.IsNotFound()) return Status::NotFound(what + ": " + s.ToString());
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  return Status::IOError(what + ": " + s.ToString());
}

}  // namespace

Result<std::unique_ptr<ChunkIndex>> ChunkIndex::Open(const std::string& path,
                                                     uint64_t cache_bytes) {
  leveldb::Options options;
  options.create_if_missing = true;
  options.max_open_files = 64;
  options.env = PrivateFilesEnv();
  NarrowToPrivate(path);  // an index made by an older shoald
  leveldb::Cache* cache = leveldb::NewLRUCache(static_cast<size_t>(cache_bytes));
  options.block_cache = cache;
  leveldb::DB* db = nullptr;
  leveldb::Status s = leveldb::DB::Open(options, path, &db);
  if (!s.ok()) {
    delete cache;
    return FromLevelDb(
        s, "open chunk index " + path + " (is another shoald using this cache folder?)");
  }
  std::unique_ptr<ChunkIndex> index(new ChunkIndex(db, cache, path));
  std::string format;
  s = db->Get(leveldb::ReadOptions(), kFormatKey, &format);
  if (s.IsNotFound()) {
    s = db->Put(leveldb::WriteOptions(), kFormatKey, kFormat);
  } else if (s.ok() && format != kFormat) {
    return Status::InvalidArgument("chunk index " + path + " has format " + format +
                                   ", this build reads format " + kFormat +
                                   "; use a newer shoald or a fresh cache folder");
  }
  SHOAL_RETURN_IF_ERROR(FromLevelDb(s, "chunk index " + path));
  return index;
}

ChunkIndex::ChunkIndex(leveldb::DB* db, leveldb::Cache* cache, std::string path)
    : db_(db), cache_(cache), path_(std::move(path)) {}

ChunkIndex::~ChunkIndex() {
  delete db_;
  delete cache_;
}

Status ChunkIndex::Put(const ChunkId& id, const IndexRecord& record) {
  return FromLevelDb(db_->Put(leveldb::WriteOptions(), ChunkKey(id), EncodeRecord(record)),
                     "index chunk " + id.ShortHex() + " in " + path_);
}

Status ChunkIndex::PutMany(const std::vector<std::pair<ChunkId, IndexRecord>>& records) {
  if (records.empty()) return Status::OK();
  leveldb::WriteBatch batch;
  for (const auto& [id, record] : records) batch.Put(ChunkKey(id), EncodeRecord(record));
  return FromLevelDb(db_->Write(leveldb::WriteOptions(), &batch),
                     "update " + std::to_string(records.size()) + " records in " + path_);
}

Status ChunkIndex::Delete(const ChunkId& id) {
  return FromLevelDb(db_->Delete(leveldb::WriteOptions(), ChunkKey(id)),
                     "remove chunk " + id.ShortHex() + " from " + path_);
}

Status ChunkIndex::ForEach(const Visitor& fn) const {
  leveldb::ReadOptions ro;
  ro.fill_cache = false;  // one pass at open; keep the cache small
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(ro));
  for (it->Seek(std::string(1, kChunkPrefix)); it->Valid(); it->Next()) {
    leveldb::Slice key = it->key();
    if (key.empty() || key[0] != kChunkPrefix) break;
    if (key.size() != 1 + ChunkId::kSize) continue;
    ChunkId id = ChunkId::FromBytes(reinterpret_cast<const uint8_t*>(key.data() + 1));
    fn(id, DecodeRecord(it->value()));
  }
  return FromLevelDb(it->status(), "scan chunk index " + path_);
}

}  // namespace shoal
