// How RegistryStore lies in LevelDB: the keys of the layout registry_store.h
// describes, and what every read and write of them shares. Internal to the
// store's .cpp files.
#ifndef SHOAL_TRACKER_REGISTRY_LAYOUT_H_
#define SHOAL_TRACKER_REGISTRY_LAYOUT_H_

#include <leveldb/options.h>
#include <leveldb/slice.h>
#include <leveldb/status.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <string>

#include "shoal/chunk_id.h"
#include "shoal/status.h"
#include "shoal/version_id.h"

namespace shoal::tracker {

// 16 hex digits, so sequence numbers and times sort as keys.
inline std::string Seq(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}

inline std::string ModelKey(const std::string& ns, const std::string& name) {
  return "M|" + ns + "|" + name;
}
inline std::string VersionKey(const std::string& ns, const std::string& name, const VersionId& id) {
  return "V|" + ns + "|" + name + "|" + id.ToHex();
}
inline std::string SummaryKey(const std::string& ns, const std::string& name, int64_t ms,
                              const VersionId& id) {
  return "S|" + ns + "|" + name + "|" + Seq(static_cast<uint64_t>(ms)) + "|" + id.ToHex();
}
inline std::string TagKey(const std::string& ns, const std::string& name, const std::string& tag) {
  return "T|" + ns + "|" + name + "|" + tag;
}
inline std::string HistoryPrefix(const std::string& ns, const std::string& name,
                                 const std::string& tag) {
  return "H|" + ns + "|" + name + "|" + tag + "|";
}
inline std::string ChunkKey(const ChunkId& id) { return "C|" + id.ToHex(); }

inline bool StartsWith(const leveldb::Slice& s, const std::string& prefix) {
  return s.size() >= prefix.size() && std::memcmp(s.data(), prefix.data(), prefix.size()) == 0;
}

// `what` failed (or not), as a Status.
inline Status FromLevelDb(const leveldb::Status& s, const std::string& what) {
  if (s.ok()) return Status::OK();
  if (s.IsNotFound()) return Status::NotFound(what);
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  return Status::IOError(what + ": " + s.ToString());
}

// Every write is synced: a killed tracker loses nothing it acknowledged.
inline leveldb::WriteOptions Synced() {
  leveldb::WriteOptions w;
  w.sync = true;
  return w;
}

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_LAYOUT_H_
