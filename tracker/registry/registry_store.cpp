#include "registry/registry_store.h"

#include <kj/exception.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "common/capnp_bytes.h"
#include "common/change_signal.h"
#include "kv/leveldb_kv.h"
#include "proto/capnp_views.h"
#include "proto/record_codec.h"
#include "registry/manifest_archive.h"
#include "registry/record_fill.h"
#include "registry/registry_layout.h"
#include "shoal/manifest_codec.h"
#include "shoal/proto/manifest.capnp.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

// Rebuilding a batch after a failed guard means another tracker wrote the
// same keys at the same moment. Rounds are spaced by a random, growing
// pause, so two writers in lockstep drift apart.
constexpr int kWriteAttempts = 12;

void PauseBeforeRetry(int attempt) {
  thread_local std::minstd_rand rng(std::random_device{}());
  int cap_ms = std::min(1 << std::min(attempt, 7), 100);
  std::this_thread::sleep_for(std::chrono::milliseconds(rng() % static_cast<unsigned>(cap_ms + 1)));
}

std::string EncodeSigned(const StoredVersion& v) {
  return RecordBytes<proto::SignedManifest>(v, FillSigned);
}

// The stored version in a V| value; its id is the key's.
Result<StoredVersion> DecodeSigned(const VersionId& id, const KvPair& p) {
  try {
    BytesReader br(p.value);
    auto r = br.root<proto::SignedManifest>();
    return StoredVersion{
        id, Bytes(r.getManifest()), Bytes(r.getSignature()), Text(r.getSignerKeyId()),
        0,  ReadUpstream(r)};
  } catch (const kj::Exception& e) {
    return Status::Corruption("registry record " + p.key + ": " + e.getDescription().cStr());
  }
}

std::string EncodeSummary(const VersionInfo& v) {
  return RecordBytes<proto::VersionSummary>(v, FillVersionInfo);
}

// The tags among `all` (tag, version) that point at `id`.
std::vector<std::string> TagsOn(const VersionId& id,
                                const std::vector<std::pair<std::string, VersionId>>& all) {
  std::vector<std::string> out;
  for (const auto& [tag, target] : all) {
    if (target == id) out.push_back(tag);
  }
  return out;
}

}  // namespace

RegistryStore::~RegistryStore() = default;

Result<std::unique_ptr<RegistryStore>> RegistryStore::Open(const std::string& dir) {
  auto kv = LevelDbKv::Open(dir);
  if (!kv.ok()) return kv.status();
  return std::make_unique<RegistryStore>(std::move(kv).value(), nullptr);
}

Status RegistryStore::Write(const std::string& what, const std::function<Status(KvBatch*)>& build) {
  std::lock_guard<std::mutex> lock(mu_);
  for (int attempt = 1;; ++attempt) {
    KvBatch batch;
    SHOAL_RETURN_IF_ERROR(build(&batch));
    if (batch.empty()) return Status::OK();
    Status s = kv_.Apply(batch);
    if (s.ok() && changes_ != nullptr) changes_->Bump();
    if (s.code() != Status::Code::kAlreadyExists) return s.WithContext(what);
    if (attempt == kWriteAttempts) {
      return Status::Unavailable(what + ": other writers kept changing the same keys (" +
                                 s.message() + "); try again");
    }
    PauseBeforeRetry(attempt);
  }
}

Result<std::string> RegistryStore::EncodeForKv(const StoredVersion& v) const {
  std::string bytes = EncodeSigned(v);
  if (bytes.size() <= kv_.max_value_bytes()) return bytes;
  if (archive_ == nullptr) {
    return Status::InvalidArgument("a manifest of " + std::to_string(v.manifest_bytes.size()) +
                                   " bytes does not fit in " + kv_.Describe() +
                                   " and there is no manifest archive");
  }
  StoredVersion slim = v;  // the bytes live in the archive alone
  slim.manifest_bytes.clear();
  return EncodeSigned(slim);
}

Status RegistryStore::ArchiveIfNew(const Manifest& m, const StoredVersion& v) {
  auto existing = kv_.Get(VersionKey(m.ns, m.name, v.id));
  if (!existing.ok()) return existing.status();
  if (existing->has_value() || archive_ == nullptr) return Status::OK();
  return archive_->Put(m.ns, m.name, v);
}

Status RegistryStore::PutVersion(KvBatch* batch, const Manifest& m, const StoredVersion& v,
                                 bool* created) {
  const std::string vkey = VersionKey(m.ns, m.name, v.id);
  auto now = kv_.Get(vkey);
  if (!now.ok()) return now.status();
  *created = !now->has_value();
  if (!*created) return Status::OK();
  VersionInfo info;
  info.ns = m.ns;
  info.name = m.name;
  info.id = v.id;
  info.created_by = m.created_by;
  info.created_at_ms = m.created_at_ms;
  info.parent = m.parent;
  info.total_bytes = m.TotalBytes();
  info.file_count = static_cast<uint32_t>(m.files.size());
  for (const Label& l : m.labels) info.labels.push_back(l.key + "=" + l.value);
  Result<std::string> value = EncodeForKv(v);
  if (!value.ok()) return value.status();
  batch->ExpectAbsent(vkey);
  batch->Put(ModelKey(m.ns, m.name), "");
  batch->Put(vkey, std::move(value).value());
  batch->Put(SummaryKey(m.ns, m.name, m.created_at_ms, v.id), EncodeSummary(info));
  return PutFeed(batch, /*deleted=*/false, m.ns, m.name, v.id);
}

Result<bool> RegistryStore::CommitVersion(const Manifest& m, const StoredVersion& v,
                                          const std::vector<std::string>& tags,
                                          const AuditEntry& audit) {
  SHOAL_RETURN_IF_ERROR(ArchiveIfNew(m, v));
  bool created = false;
  Status s = Write("commit " + m.ns + "/" + m.name + ":" + v.id.ShortHex(), [&](KvBatch* batch) {
    SHOAL_RETURN_IF_ERROR(PutVersion(batch, m, v, &created));
    std::vector<std::string> moving = tags;
    SHOAL_RETURN_IF_ERROR(ClearUpload(batch, m.ns, m.name, v.id, &moving));
    SHOAL_RETURN_IF_ERROR(
        PutTagMoves(batch, m.ns, m.name, v.id, std::move(moving), audit.subject, audit.at_ms));
    return PutAudit(batch, audit);
  });
  if (!s.ok()) return s;
  return created;
}

Result<StoredVersion> RegistryStore::GetVersion(const std::string& ns, const std::string& name,
                                                const VersionId& id) {
  const std::string key = VersionKey(ns, name, id);
  auto bytes = kv_.Get(key);
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) {
    return Status::NotFound("version " + id.ShortHex() + " of " + ns + "/" + name +
                            " does not exist");
  }
  Result<StoredVersion> v = DecodeSigned(id, KvPair{key, std::move(bytes)->value()});
  if (!v.ok() || !v->manifest_bytes.empty()) return v;
  if (archive_ == nullptr) {
    return Status::Corruption("registry record " + key +
                              " has no manifest and there is no archive");
  }
  return archive_->Get(ns, name, id);
}

Result<VersionId> RegistryStore::ResolveVersionPrefix(const std::string& ns,
                                                      const std::string& name,
                                                      const std::string& prefix) {
  std::string lower;
  for (char c : prefix) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::string key_prefix = "V|" + ns + "|" + name + "|" + lower;
  auto found = kv_.Scan(key_prefix, PrefixEnd(key_prefix), 2, /*reverse=*/false);
  if (!found.ok()) return found.status();
  if (found->size() > 1) {
    return Status::InvalidArgument("version prefix '" + prefix + "' matches several versions of " +
                                   ns + "/" + name + "; give more digits");
  }
  if (found->empty()) {
    return Status::NotFound("no tag or version '" + prefix + "' in " + ns + "/" + name);
  }
  const std::string& key = found->front().key;
  return VersionId::ParseHex(key.substr(key.size() - 64));
}

Result<std::vector<VersionInfo>> RegistryStore::ListVersions(
    const std::string& ns, const std::string& name, const std::string& after, uint32_t limit,
    std::string* next, const std::vector<std::string>& labels) {
  next->clear();
  auto tags = TagsOf(ns, name);
  if (!tags.ok()) return tags.status();
  const std::string prefix = "S|" + ns + "|" + name + "|";
  // Newest first: backwards from just below `after` (the last key of the
  // previous page), one more than asked to see whether a page follows. A
  // label filter reads on, a batch at a time, past versions without them.
  std::string end = after.empty() ? PrefixEnd(prefix) : prefix + after;
  const size_t batch = labels.empty() ? size_t{limit} + 1 : std::max<size_t>(limit + 1, 256);
  std::vector<VersionInfo> out;
  for (bool full = false; !full;) {
    auto page = kv_.Scan(prefix, end, batch, /*reverse=*/true);
    if (!page.ok()) return page.status();
    for (const KvPair& p : *page) {
      end = p.key;
      Result<VersionInfo> v = DecodeRecord<proto::VersionSummary>(p.key, p.value, ReadVersionInfo);
      if (!v.ok()) return v.status();
      if (!v->HasLabels(labels)) continue;
      if (out.size() == limit) {
        *next = out.empty() ? ""
                            : Seq(static_cast<uint64_t>(out.back().created_at_ms)) + "|" +
                                  out.back().id.ToHex();
        full = true;
        break;
      }
      v->tags = TagsOn(v->id, *tags);
      out.push_back(std::move(v).value());
    }
    if (page->size() < batch) break;
  }
  SHOAL_RETURN_IF_ERROR(AddUploadStates(ns, name, NowMs(), &out));
  return out;
}

Result<std::vector<ModelInfo>> RegistryStore::ListModels(const std::string& ns,
                                                         const std::string& after, uint32_t limit,
                                                         std::string* next) {
  next->clear();
  const std::string prefix = ns.empty() ? "M|" : "M|" + ns + "|";
  auto page = kv_.Scan(after.empty() ? prefix : "M|" + after + "\x01", PrefixEnd(prefix),
                       size_t{limit} + 1, /*reverse=*/false);
  if (!page.ok()) return page.status();
  std::vector<ModelInfo> out;
  for (const KvPair& p : *page) {
    if (out.size() == limit) {
      *next = out.back().ns + "|" + out.back().name;
      break;
    }
    size_t bar = p.key.find('|', 2);
    ModelInfo m;
    m.ns = p.key.substr(2, bar - 2);
    m.name = p.key.substr(bar + 1);
    // S|ns|name|<created ms>|<hex> keys sort by time: the last names the newest.
    std::string newest;
    SHOAL_RETURN_IF_ERROR(VisitPrefix(kv_, "S|" + m.ns + "|" + m.name + "|", [&](const KvPair& s) {
      ++m.version_count;
      newest = s.key;
      return true;
    }));
    if (!newest.empty()) {
      const size_t hex_at = newest.size() > 64 + 17 ? newest.size() - 64 : 0;
      auto id = VersionId::ParseHex(newest.substr(hex_at));
      if (hex_at == 0 || !id.ok()) {
        return Status::Corruption("registry key " + newest + " names no version");
      }
      m.latest = *id;
      m.latest_at_ms = static_cast<int64_t>(SeqOfKey(newest.substr(0, hex_at - 1)));
    }
    auto tags = TagsOf(m.ns, m.name);
    if (!tags.ok()) return tags.status();
    m.tags = std::move(tags).value();
    out.push_back(std::move(m));
  }
  return out;
}

Status RegistryStore::DeleteVersion(const std::string& ns, const std::string& name,
                                    const VersionId& id, const AuditEntry& audit) {
  Result<StoredVersion> v = GetVersion(ns, name, id);
  if (!v.ok()) return v.status();
  Result<Manifest> m = DecodeManifest(v->manifest_bytes);
  if (!m.ok()) return m.status().WithContext("stored manifest of " + id.ShortHex());
  const std::string vkey = VersionKey(ns, name, id);
  SHOAL_RETURN_IF_ERROR(
      Write("delete " + ns + "/" + name + ":" + id.ShortHex(), [&](KvBatch* batch) {
        auto record = kv_.Get(vkey);
        if (!record.ok()) return record.status();
        if (!record->has_value()) {
          return Status::NotFound("version " + id.ShortHex() + " of " + ns + "/" + name +
                                  " does not exist");
        }
        batch->ExpectValue(vkey, **record);
        batch->Delete(vkey);
        batch->Delete(SummaryKey(ns, name, m->created_at_ms, id));
        batch->Delete(UploadKey(ns, name, id));
        SHOAL_RETURN_IF_ERROR(PutFeed(batch, /*deleted=*/true, ns, name, id));
        SHOAL_RETURN_IF_ERROR(PutTagRemovals(batch, ns, name, id, audit.subject, audit.at_ms));
        return PutAudit(batch, audit);
      }));
  // The registry no longer names the version, so its archived copy is
  // garbage; one left behind by a failure here is harmless.
  if (archive_ != nullptr) (void)archive_->Delete(ns, name, id);
  return Status::OK();
}

Status RegistryStore::ForEachManifest(
    const std::function<void(const VersionId&, const Manifest&)>& fn) {
  Status failed;
  Status s = VisitPrefix(kv_, "V|", [&](const KvPair& p) {
    // V|ns|name|<hex>
    size_t a = p.key.find('|', 2), b = p.key.rfind('|');
    auto id = VersionId::ParseHex(p.key.substr(b + 1));
    Result<StoredVersion> v = id.ok() ? DecodeSigned(*id, p) : Result<StoredVersion>(id.status());
    if (v.ok() && v->manifest_bytes.empty() && archive_ != nullptr) {
      v = archive_->Get(p.key.substr(2, a - 2), p.key.substr(a + 1, b - a - 1), *id);
    }
    Result<Manifest> m = v.ok() ? DecodeManifest(v->manifest_bytes) : Result<Manifest>(v.status());
    if (!m.ok()) {
      failed = m.status().WithContext("stored version " + p.key);
      return false;
    }
    fn(*id, *m);
    return true;
  });
  return s.ok() ? failed : s;
}

Result<uint64_t> RegistryStore::VersionCount() {
  uint64_t n = 0;
  Status s = VisitPrefix(kv_, "S|", [&](const KvPair&) {
    ++n;
    return true;
  });
  if (!s.ok()) return s;
  return n;
}

}  // namespace shoal::tracker
