// How RegistryStore lies in its key-value engine: the keys of the layout
// registry_store.h describes. Internal to the store's .cpp files.
#ifndef SHOAL_TRACKER_REGISTRY_LAYOUT_H_
#define SHOAL_TRACKER_REGISTRY_LAYOUT_H_

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "shoal/chunk_id.h"
#include "shoal/version_id.h"

namespace shoal::tracker {

// 16 hex digits, so sequence numbers and times sort as keys.
inline std::string Seq(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, v);
  return buf;
}
// The sequence number that ends `key` (16 hex digits); 0 if it does not.
inline uint64_t SeqOfKey(const std::string& key) {
  if (key.size() < 16) return 0;
  return std::strtoull(key.substr(key.size() - 16).c_str(), nullptr, 16);
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
// A version not yet durable: a PendingUpload (registry_upload_state.cpp).
inline std::string UploadPrefix(const std::string& ns, const std::string& name) {
  return "U|" + ns + "|" + name + "|";
}
inline std::string UploadKey(const std::string& ns, const std::string& name, const VersionId& id) {
  return UploadPrefix(ns, name) + id.ToHex();
}
inline std::string ChunkKey(const ChunkId& id) { return "C|" + id.ToHex(); }
// An upload lease: <expiry ms as Seq>|<holder> (registry_upload_leases.cpp).
inline std::string LeaseKey(const ChunkId& id) { return "L|" + id.ToHex(); }
// A token `token create` minted: its claims, never its MAC (issued_tokens.h).
inline std::string IssuedTokenKey(const std::string& token_id) { return "I|" + token_id; }

inline bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_REGISTRY_LAYOUT_H_
