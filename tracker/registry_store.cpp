#include "registry_store.h"

#include <kj/exception.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "capnp_bytes.h"
#include "capnp_views.h"
#include "leveldb_kv.h"
#include "manifest_archive.h"
#include "record_codec.h"
#include "record_fill.h"
#include "registry_layout.h"
#include "shoal/manifest_codec.h"
#include "shoal/proto/manifest.capnp.h"
#include "shoal/proto/tracker.capnp.h"

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
    return StoredVersion{id, Bytes(r.getManifest()), Bytes(r.getSignature()),
                         Text(r.getSignerKeyId()), 0};
  } catch (const kj::Exception& e) {
    return Status::Corruption("registry record " + p.key + ": " + e.getDescription().cStr());
  }
}

std::string EncodeSummary(const VersionInfo& v) {
  return RecordBytes<proto::VersionSummary>(v, FillVersionInfo);
}

std::string EncodeTagEvent(const TagChange& c) {
  return RecordBytes<proto::TagEvent>(c, FillTagChange);
}

// Reads the record in `p` with `read` (a record_codec.h Read); one that does
// not read back is Corruption naming its key.
template <typename Schema, typename Read>
auto DecodeRecord(const KvPair& p, Read read) -> decltype(read(BytesReader("").root<Schema>())) {
  using Out = decltype(read(BytesReader("").root<Schema>()));
  try {
    BytesReader br(p.value);
    auto record = read(br.root<Schema>());
    if (record.ok()) return record;
    return Out(Status::Corruption("registry record " + p.key + ": " + record.status().message()));
  } catch (const kj::Exception& e) {
    return Out(Status::Corruption("registry record " + p.key + ": " + e.getDescription().cStr()));
  }
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

Result<std::optional<VersionId>> ParseTagValue(const std::optional<std::string>& hex) {
  if (!hex) return std::optional<VersionId>();
  auto id = VersionId::ParseHex(*hex);
  if (!id.ok()) return Status::Corruption("tag value '" + *hex + "' is not a version ID");
  return std::optional<VersionId>(*id);
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

Result<bool> RegistryStore::CommitVersion(const Manifest& m, const StoredVersion& v,
                                          const std::vector<std::string>& tag_list,
                                          const AuditEntry& audit) {
  const std::string vkey = VersionKey(m.ns, m.name, v.id);
  // The copy in the origin comes first: once the registry names a version,
  // every tracker can read its manifest.
  auto existing = kv_.Get(vkey);
  if (!existing.ok()) return existing.status();
  if (!existing->has_value() && archive_ != nullptr) {
    SHOAL_RETURN_IF_ERROR(archive_->Put(m.ns, m.name, v));
  }
  std::vector<std::string> tags = tag_list;
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  bool created = false;
  Status s = Write("commit " + m.ns + "/" + m.name + ":" + v.id.ShortHex(), [&](KvBatch* batch) {
    auto now = kv_.Get(vkey);
    if (!now.ok()) return now.status();
    created = !now->has_value();
    if (created) {
      VersionInfo info{m.ns,
                       m.name,
                       v.id,
                       m.created_by,
                       m.created_at_ms,
                       m.parent,
                       m.TotalBytes(),
                       static_cast<uint32_t>(m.files.size()),
                       {}};
      Result<std::string> value = EncodeForKv(v);
      if (!value.ok()) return value.status();
      batch->ExpectAbsent(vkey);
      batch->Put(ModelKey(m.ns, m.name), "");
      batch->Put(vkey, std::move(value).value());
      batch->Put(SummaryKey(m.ns, m.name, m.created_at_ms, v.id), EncodeSummary(info));
      SHOAL_RETURN_IF_ERROR(PutFeed(batch, /*deleted=*/false, m.ns, m.name, v.id));
    }
    for (const std::string& tag : tags) {
      const std::string tkey = TagKey(m.ns, m.name, tag);
      auto current = kv_.Get(tkey);
      if (!current.ok()) return current.status();
      auto from = ParseTagValue(*current);
      if (!from.ok()) return from.status();
      if (*from && **from == v.id) continue;
      if (*current) {
        batch->ExpectValue(tkey, **current);
      } else {
        batch->ExpectAbsent(tkey);
      }
      TagChange c{m.ns, m.name, tag, *from, v.id, audit.subject, audit.at_ms};
      Result<uint64_t> seq = NextSeq(HistoryPrefix(m.ns, m.name, tag), batch);
      if (!seq.ok()) return seq.status();
      batch->Put(tkey, v.id.ToHex());
      batch->Put(HistoryPrefix(m.ns, m.name, tag) + Seq(*seq), EncodeTagEvent(c));
    }
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

Result<std::vector<VersionInfo>> RegistryStore::ListVersions(const std::string& ns,
                                                             const std::string& name,
                                                             const std::string& after,
                                                             uint32_t limit, std::string* next) {
  next->clear();
  auto tags = TagsOf(ns, name);
  if (!tags.ok()) return tags.status();
  const std::string prefix = "S|" + ns + "|" + name + "|";
  // Newest first: backwards from just below `after` (the last key of the
  // previous page), one more than asked to see whether a page follows.
  auto page = kv_.Scan(prefix, after.empty() ? PrefixEnd(prefix) : prefix + after,
                       size_t{limit} + 1, /*reverse=*/true);
  if (!page.ok()) return page.status();
  std::vector<VersionInfo> out;
  for (const KvPair& p : *page) {
    if (out.size() == limit) {
      *next = out.empty() ? ""
                          : Seq(static_cast<uint64_t>(out.back().created_at_ms)) + "|" +
                                out.back().id.ToHex();
      break;
    }
    Result<VersionInfo> v = DecodeRecord<proto::VersionSummary>(p, ReadVersionInfo);
    if (!v.ok()) return v.status();
    v->tags = TagsOn(v->id, *tags);
    out.push_back(std::move(v).value());
  }
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
    std::string unused;
    auto versions = ListVersions(m.ns, m.name, "", 1, &unused);
    if (!versions.ok()) return versions.status();
    if (!versions->empty()) {
      m.latest = versions->front().id;
      m.latest_at_ms = versions->front().created_at_ms;
    }
    SHOAL_RETURN_IF_ERROR(VisitPrefix(kv_, "S|" + m.ns + "|" + m.name + "|", [&](const KvPair&) {
      ++m.version_count;
      return true;
    }));
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
        SHOAL_RETURN_IF_ERROR(PutFeed(batch, /*deleted=*/true, ns, name, id));
        auto tags = TagsOf(ns, name);
        if (!tags.ok()) return tags.status();
        for (const auto& [tag, target] : *tags) {
          if (target != id) continue;
          const std::string tkey = TagKey(ns, name, tag);
          batch->ExpectValue(tkey, id.ToHex());
          batch->Delete(tkey);
          TagChange c{ns, name, tag, id, std::nullopt, audit.subject, audit.at_ms};
          Result<uint64_t> seq = NextSeq(HistoryPrefix(ns, name, tag), batch);
          if (!seq.ok()) return seq.status();
          batch->Put(HistoryPrefix(ns, name, tag) + Seq(*seq), EncodeTagEvent(c));
        }
        return PutAudit(batch, audit);
      }));
  // The registry no longer names the version, so its archived copy is
  // garbage; one left behind by a failure here is harmless.
  if (archive_ != nullptr) (void)archive_->Delete(ns, name, id);
  return Status::OK();
}

Result<std::optional<VersionId>> RegistryStore::GetTag(const std::string& ns,
                                                       const std::string& name,
                                                       const std::string& tag) {
  auto hex = kv_.Get(TagKey(ns, name, tag));
  if (!hex.ok()) return hex.status();
  return ParseTagValue(*hex);
}

Result<std::vector<std::pair<std::string, VersionId>>> RegistryStore::TagsOf(
    const std::string& ns, const std::string& name) {
  std::vector<std::pair<std::string, VersionId>> out;
  const std::string prefix = "T|" + ns + "|" + name + "|";
  Status s = VisitPrefix(kv_, prefix, [&](const KvPair& p) {
    auto id = VersionId::ParseHex(p.value);
    if (id.ok()) out.emplace_back(p.key.substr(prefix.size()), *id);
    return true;
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::optional<VersionId>> RegistryStore::SetTag(const TagChange& change,
                                                       const AuditEntry& audit) {
  const std::string tkey = TagKey(change.ns, change.name, change.tag);
  std::optional<VersionId> previous;
  Status s = Write("tag " + change.ns + "/" + change.name + ":" + change.tag, [&](KvBatch* batch) {
    auto current = kv_.Get(tkey);
    if (!current.ok()) return current.status();
    auto from = ParseTagValue(*current);
    if (!from.ok()) return from.status();
    previous = *from;
    if (*current) {
      batch->ExpectValue(tkey, **current);
    } else {
      batch->ExpectAbsent(tkey);
    }
    if (change.to) {
      batch->Put(tkey, change.to->ToHex());
    } else {
      batch->Delete(tkey);
    }
    TagChange c = change;
    c.from = previous;
    Result<uint64_t> seq = NextSeq(HistoryPrefix(change.ns, change.name, change.tag), batch);
    if (!seq.ok()) return seq.status();
    batch->Put(HistoryPrefix(change.ns, change.name, change.tag) + Seq(*seq), EncodeTagEvent(c));
    return PutAudit(batch, audit);
  });
  if (!s.ok()) return s;
  return previous;
}

Result<std::vector<TagChange>> RegistryStore::TagHistory(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& tag) {
  std::vector<TagChange> out;
  Status failed;
  Status s = VisitPrefix(kv_, HistoryPrefix(ns, name, tag), [&](const KvPair& p) {
    Result<TagChange> c = DecodeRecord<proto::TagEvent>(p, ReadTagChange);
    if (!c.ok()) {
      failed = c.status();
      return false;
    }
    out.push_back(std::move(c).value());
    return true;
  });
  if (!s.ok()) return s;
  if (!failed.ok()) return failed;
  return out;
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
