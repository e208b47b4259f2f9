// RegistryStore's upload leases: L|<chunk hex> keys (registry_store.h),
// each "<expiry ms as 16 hex digits>|<holder>".
#include <algorithm>
#include <optional>
#include <unordered_map>

#include "registry/registry_layout.h"
#include "registry/registry_store.h"

namespace shoal::tracker {
namespace {

constexpr size_t kFewIds = 16;          // up to this many ids: one Get each; more: one scan
constexpr size_t kWritesPerBatch = 64;  // a guard and an op each: 128, etcd's default limit

std::string EncodeLease(int64_t expires_ms, const std::string& holder) {
  return Seq(static_cast<uint64_t>(expires_ms)) + "|" + holder;
}

// When the lease `value` ends; 0 (long over) for one that does not parse,
// so it is overwritten.
int64_t ExpiresMs(const std::string& value) {
  if (value.size() < 17 || value[16] != '|') return 0;
  return static_cast<int64_t>(SeqOfKey(value.substr(0, 16)));
}

// Whether `holder` may take a lease whose value is `old` (nullopt: none).
bool Claimable(const std::optional<std::string>& old, const std::string& holder, int64_t now_ms) {
  if (!old || ExpiresMs(*old) <= now_ms) return true;
  return old->compare(17, std::string::npos, holder) == 0;
}

// One key written only if it still holds `old` (nullopt: absent).
struct GuardedWrite {
  std::string key;
  std::optional<std::string> old;
  std::optional<std::string> value;  // nullopt: delete
};

// Applies writes[begin, end) in batches; a batch whose guard fails is split
// in halves, down to single writes. (*applied)[i] says which went in.
Status ApplyGuarded(KvStore& kv, const std::vector<GuardedWrite>& writes, size_t begin, size_t end,
                    std::vector<char>* applied) {
  const size_t per_batch = std::max<size_t>(1, std::min(kWritesPerBatch, kv.max_batch_ops() / 2));
  if (end - begin > per_batch) {
    for (size_t at = begin; at < end; at += per_batch) {
      SHOAL_RETURN_IF_ERROR(ApplyGuarded(kv, writes, at, std::min(end, at + per_batch), applied));
    }
    return Status::OK();
  }
  if (begin == end) return Status::OK();
  KvBatch batch;
  for (size_t i = begin; i < end; ++i) {
    const GuardedWrite& w = writes[i];
    if (w.old) {
      batch.ExpectValue(w.key, *w.old);
    } else {
      batch.ExpectAbsent(w.key);
    }
    if (w.value) {
      batch.Put(w.key, *w.value);
    } else {
      batch.Delete(w.key);
    }
  }
  Status s = kv.Apply(batch);
  if (s.ok()) {
    for (size_t i = begin; i < end; ++i) (*applied)[i] = 1;
    return Status::OK();
  }
  if (s.code() != Status::Code::kAlreadyExists) return s.WithContext("write upload leases");
  if (end - begin == 1) return Status::OK();
  const size_t mid = begin + (end - begin) / 2;
  SHOAL_RETURN_IF_ERROR(ApplyGuarded(kv, writes, begin, mid, applied));
  return ApplyGuarded(kv, writes, mid, end, applied);
}

// The lease values of `ids` that exist, by key.
Result<std::unordered_map<std::string, std::string>> ReadLeases(KvStore& kv,
                                                                const std::vector<ChunkId>& ids) {
  std::unordered_map<std::string, std::string> out;
  if (ids.size() <= kFewIds) {
    for (const ChunkId& id : ids) {
      Result<std::optional<std::string>> v = kv.Get(LeaseKey(id));
      if (!v.ok()) return v.status().WithContext("read upload leases");
      if (*v) out[LeaseKey(id)] = std::move(**v);
    }
    return out;
  }
  std::unordered_map<std::string, bool> wanted;
  for (const ChunkId& id : ids) wanted[LeaseKey(id)] = true;
  Status s = VisitPrefix(kv, "L|", [&](const KvPair& p) {
    if (wanted.count(p.key) != 0) out[p.key] = p.value;
    return true;
  });
  if (!s.ok()) return s.WithContext("read upload leases");
  return out;
}

}  // namespace

Result<std::vector<bool>> RegistryStore::ClaimUploads(const std::vector<ChunkId>& ids,
                                                      const std::string& holder, int64_t now_ms,
                                                      int64_t ttl_ms) {
  std::vector<bool> held(ids.size(), false);
  auto current = ReadLeases(kv_, ids);
  if (!current.ok()) return current.status();
  const std::string value = EncodeLease(now_ms + ttl_ms, holder);
  std::vector<GuardedWrite> writes;
  std::vector<size_t> index_of;  // writes[j] claims ids[index_of[j]]
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string key = LeaseKey(ids[i]);
    auto it = current->find(key);
    std::optional<std::string> old;
    if (it != current->end()) old = it->second;
    if (!Claimable(old, holder, now_ms)) continue;
    writes.push_back({std::move(key), std::move(old), value});
    index_of.push_back(i);
  }
  std::vector<char> applied(writes.size(), 0);
  SHOAL_RETURN_IF_ERROR(ApplyGuarded(kv_, writes, 0, writes.size(), &applied));
  for (size_t j = 0; j < writes.size(); ++j) {
    if (applied[j] != 0) {
      held[index_of[j]] = true;
      continue;
    }
    // Another writer changed this lease since the read: read it again, once.
    // Losing a second race means someone else just claimed it.
    Result<std::optional<std::string>> again = kv_.Get(writes[j].key);
    if (!again.ok()) return again.status().WithContext("read upload leases");
    if (!Claimable(*again, holder, now_ms)) continue;
    std::vector<GuardedWrite> retry = {{writes[j].key, *again, value}};
    std::vector<char> done(1, 0);
    SHOAL_RETURN_IF_ERROR(ApplyGuarded(kv_, retry, 0, 1, &done));
    held[index_of[j]] = done[0] != 0;
  }
  return held;
}

Status RegistryStore::ReleaseUploads(const std::vector<ChunkId>& ids) {
  const size_t per_batch = std::max<size_t>(1, std::min(2 * kWritesPerBatch, kv_.max_batch_ops()));
  KvBatch batch;
  for (const ChunkId& id : ids) {
    batch.Delete(LeaseKey(id));
    if (batch.ops().size() == per_batch) {
      SHOAL_RETURN_IF_ERROR(kv_.Apply(batch).WithContext("release upload leases"));
      batch = KvBatch();
    }
  }
  if (batch.empty()) return Status::OK();
  return kv_.Apply(batch).WithContext("release upload leases");
}

Result<std::unordered_set<ChunkId>> RegistryStore::LeasedUploads(int64_t now_ms,
                                                                 bool drop_expired) {
  std::unordered_set<ChunkId> leased;
  std::vector<GuardedWrite> drops;
  Status s = VisitPrefix(kv_, "L|", [&](const KvPair& p) {
    auto id = ChunkId::ParseHex(p.key.substr(2));
    if (!id.ok()) return true;
    if (ExpiresMs(p.value) <= now_ms) {
      drops.push_back({p.key, p.value, std::nullopt});
    } else {
      leased.insert(*id);
    }
    return true;
  });
  if (!s.ok()) return s.WithContext("read upload leases");
  if (drop_expired) {
    std::vector<char> applied(drops.size(), 0);
    SHOAL_RETURN_IF_ERROR(ApplyGuarded(kv_, drops, 0, drops.size(), &applied));
  }
  return leased;
}

}  // namespace shoal::tracker
