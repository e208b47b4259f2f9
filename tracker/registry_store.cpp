#include "registry_store.h"

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "capnp_bytes.h"
#include "capnp_views.h"
#include "record_codec.h"
#include "record_fill.h"
#include "registry_layout.h"
#include "shoal/manifest_codec.h"
#include "shoal/proto/manifest.capnp.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {
namespace {

std::string EncodeSigned(const StoredVersion& v) {
  return RecordBytes<proto::SignedManifest>(v, FillSigned);
}

// The stored version in a V| value; its id is the key's.
StoredVersion DecodeSigned(const VersionId& id, std::string_view bytes) {
  BytesReader br(bytes);
  auto r = br.root<proto::SignedManifest>();
  return StoredVersion{id, Bytes(r.getManifest()), Bytes(r.getSignature()),
                       Text(r.getSignerKeyId()), 0};
}

std::string EncodeSummary(const VersionInfo& v) {
  return RecordBytes<proto::VersionSummary>(v, FillVersionInfo);
}

std::string EncodeTagEvent(const TagChange& c) {
  return RecordBytes<proto::TagEvent>(c, FillTagChange);
}

// Reads the record at `it` with `read` (a record_codec.h Read); one that does
// not read back is Corruption naming its key.
template <typename Schema, typename Read>
auto DecodeRecord(const leveldb::Iterator& it, Read read) {
  BytesReader br(std::string_view(it.value().data(), it.value().size()));
  auto record = read(br.root<Schema>());
  if (!record.ok()) {
    return decltype(record)(Status::Corruption("registry record " + it.key().ToString() + ": " +
                                               record.status().message()));
  }
  return record;
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

std::string EncodeAudit(const AuditEntry& a) {
  return RecordBytes<proto::AuditRecord>(a, FillAuditRecord);
}

AuditEntry DecodeAudit(std::string_view bytes) {
  BytesReader br(bytes);
  auto r = br.root<proto::AuditRecord>();
  return {r.getSeq(),    r.getAtMs(),   r.getSubject(), r.getTokenId(),
          r.getAction(), r.getTarget(), r.getDetail()};
}

// Reads the last key with `prefix` and parses its trailing hex sequence.
uint64_t LastSeq(leveldb::DB* db, const std::string& prefix) {
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
  it->Seek(prefix + "\xff");
  if (it->Valid())
    it->Prev();
  else
    it->SeekToLast();
  if (!it->Valid() || !StartsWith(it->key(), prefix)) return 0;
  std::string key = it->key().ToString();
  return std::strtoull(key.substr(key.size() - 16).c_str(), nullptr, 16);
}

}  // namespace

RegistryStore::RegistryStore(leveldb::DB* db) : db_(db) {
  next_audit_seq_ = LastSeq(db, "A|") + 1;
  next_revocation_seq_ = LastSeq(db, "R|") + 1;
  // Tag history keys are per tag; one global counter keeps them ordered.
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
  for (it->Seek("H|"); it->Valid() && StartsWith(it->key(), "H|"); it->Next()) {
    std::string key = it->key().ToString();
    next_tag_seq_ = std::max<uint64_t>(
        next_tag_seq_, std::strtoull(key.substr(key.size() - 16).c_str(), nullptr, 16) + 1);
  }
}

RegistryStore::~RegistryStore() = default;

Result<std::unique_ptr<RegistryStore>> RegistryStore::Open(const std::string& dir) {
  leveldb::Options options;
  options.create_if_missing = true;
  leveldb::DB* db = nullptr;
  leveldb::Status s = leveldb::DB::Open(options, dir, &db);
  if (!s.ok()) {
    return Status::IOError("open registry at " + dir + ": " + s.ToString() +
                           " (is another tracker using this --data-dir?)");
  }
  return std::unique_ptr<RegistryStore>(new RegistryStore(db));
}

uint64_t RegistryStore::NextAuditSeq() { return next_audit_seq_++; }

void RegistryStore::PutAudit(leveldb::WriteBatch* batch, const AuditEntry& audit) {
  AuditEntry a = audit;
  a.seq = NextAuditSeq();
  batch->Put("A|" + Seq(a.seq), EncodeAudit(a));
}

Result<bool> RegistryStore::CommitVersion(const Manifest& m, const StoredVersion& v,
                                          const std::vector<std::string>& tags,
                                          const AuditEntry& audit) {
  std::lock_guard<std::mutex> lock(mu_);
  leveldb::WriteBatch batch;
  std::string existing;
  bool created =
      db_->Get(leveldb::ReadOptions(), VersionKey(m.ns, m.name, v.id), &existing).IsNotFound();
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
    batch.Put(ModelKey(m.ns, m.name), "");
    batch.Put(VersionKey(m.ns, m.name, v.id), EncodeSigned(v));
    batch.Put(SummaryKey(m.ns, m.name, m.created_at_ms, v.id), EncodeSummary(info));
  }
  for (const std::string& tag : tags) {
    std::string prev;
    std::optional<VersionId> from;
    if (db_->Get(leveldb::ReadOptions(), TagKey(m.ns, m.name, tag), &prev).ok()) {
      auto parsed = VersionId::ParseHex(prev);
      if (parsed.ok()) from = *parsed;
    }
    if (from && *from == v.id) continue;
    TagChange c{m.ns, m.name, tag, from, v.id, audit.subject, audit.at_ms};
    batch.Put(TagKey(m.ns, m.name, tag), v.id.ToHex());
    batch.Put(HistoryPrefix(m.ns, m.name, tag) + Seq(next_tag_seq_++), EncodeTagEvent(c));
  }
  AuditEntry a = audit;
  a.seq = NextAuditSeq();
  batch.Put("A|" + Seq(a.seq), EncodeAudit(a));
  SHOAL_RETURN_IF_ERROR(FromLevelDb(db_->Write(Synced(), &batch), "write registry"));
  return created;
}

Result<StoredVersion> RegistryStore::GetVersion(const std::string& ns, const std::string& name,
                                                const VersionId& id) {
  std::string bytes;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), VersionKey(ns, name, id), &bytes);
  if (s.IsNotFound()) {
    return Status::NotFound("version " + id.ShortHex() + " of " + ns + "/" + name +
                            " does not exist");
  }
  SHOAL_RETURN_IF_ERROR(FromLevelDb(s, "read version"));
  return DecodeSigned(id, bytes);
}

Result<VersionId> RegistryStore::ResolveVersionPrefix(const std::string& ns,
                                                      const std::string& name,
                                                      const std::string& prefix) {
  std::string lower;
  for (char c : prefix) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string key_prefix = "V|" + ns + "|" + name + "|" + lower;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  std::optional<VersionId> found;
  for (it->Seek(key_prefix); it->Valid() && StartsWith(it->key(), key_prefix); it->Next()) {
    if (found) {
      return Status::InvalidArgument("version prefix '" + prefix +
                                     "' matches several versions of " + ns + "/" + name +
                                     "; give more digits");
    }
    std::string key = it->key().ToString();
    found = *VersionId::ParseHex(key.substr(key.size() - 64));
  }
  if (!found) {
    return Status::NotFound("no tag or version '" + prefix + "' in " + ns + "/" + name);
  }
  return *found;
}

Result<std::vector<VersionInfo>> RegistryStore::ListVersions(const std::string& ns,
                                                             const std::string& name,
                                                             const std::string& after,
                                                             uint32_t limit, std::string* next) {
  std::vector<VersionInfo> out;
  next->clear();
  const auto tags = TagsOf(ns, name);
  std::string prefix = "S|" + ns + "|" + name + "|";
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  it->Seek(after.empty() ? prefix + "\xff" : prefix + after);
  if (it->Valid())
    it->Prev();
  else
    it->SeekToLast();
  for (; it->Valid() && StartsWith(it->key(), prefix); it->Prev()) {
    if (out.size() == limit) {
      // The next page starts after the last entry returned.
      *next = out.empty() ? ""
                          : Seq(static_cast<uint64_t>(out.back().created_at_ms)) + "|" +
                                out.back().id.ToHex();
      break;
    }
    Result<VersionInfo> v = DecodeRecord<proto::VersionSummary>(*it, ReadVersionInfo);
    if (!v.ok()) return v.status();
    v->tags = TagsOn(v->id, tags);
    out.push_back(std::move(v).value());
  }
  return out;
}

Result<std::vector<ModelInfo>> RegistryStore::ListModels(const std::string& ns,
                                                         const std::string& after, uint32_t limit,
                                                         std::string* next) {
  std::vector<ModelInfo> out;
  next->clear();
  std::string prefix = ns.empty() ? "M|" : "M|" + ns + "|";
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  it->Seek(after.empty() ? prefix : "M|" + after + "\x01");
  for (; it->Valid() && StartsWith(it->key(), prefix); it->Next()) {
    std::string key = it->key().ToString();
    size_t bar = key.find('|', 2);
    ModelInfo m;
    m.ns = key.substr(2, bar - 2);
    m.name = key.substr(bar + 1);
    if (out.size() == limit) {
      *next = out.back().ns + "|" + out.back().name;
      break;
    }
    std::string unused;
    auto versions = ListVersions(m.ns, m.name, "", 1, &unused);
    if (!versions.ok()) return versions.status();
    if (!versions->empty()) {
      m.latest = versions->front().id;
      m.latest_at_ms = versions->front().created_at_ms;
    }
    std::string sp = "S|" + m.ns + "|" + m.name + "|";
    std::unique_ptr<leveldb::Iterator> vi(db_->NewIterator(leveldb::ReadOptions()));
    for (vi->Seek(sp); vi->Valid() && StartsWith(vi->key(), sp); vi->Next()) ++m.version_count;
    m.tags = TagsOf(m.ns, m.name);
    out.push_back(std::move(m));
  }
  return out;
}

Status RegistryStore::DeleteVersion(const std::string& ns, const std::string& name,
                                    const VersionId& id, const AuditEntry& audit) {
  std::lock_guard<std::mutex> lock(mu_);
  Result<StoredVersion> v = GetVersion(ns, name, id);
  if (!v.ok()) return v.status();
  Result<Manifest> m = DecodeManifest(v->manifest_bytes);
  if (!m.ok()) return m.status().WithContext("stored manifest of " + id.ShortHex());
  leveldb::WriteBatch batch;
  batch.Delete(VersionKey(ns, name, id));
  batch.Delete(SummaryKey(ns, name, m->created_at_ms, id));
  for (const auto& [tag, target] : TagsOf(ns, name)) {
    if (target != id) continue;
    batch.Delete(TagKey(ns, name, tag));
    TagChange c{ns, name, tag, id, std::nullopt, audit.subject, audit.at_ms};
    batch.Put(HistoryPrefix(ns, name, tag) + Seq(next_tag_seq_++), EncodeTagEvent(c));
  }
  AuditEntry a = audit;
  a.seq = NextAuditSeq();
  batch.Put("A|" + Seq(a.seq), EncodeAudit(a));
  return FromLevelDb(db_->Write(Synced(), &batch), "write registry");
}

std::optional<VersionId> RegistryStore::GetTag(const std::string& ns, const std::string& name,
                                               const std::string& tag) {
  std::string hex;
  if (!db_->Get(leveldb::ReadOptions(), TagKey(ns, name, tag), &hex).ok()) return std::nullopt;
  auto id = VersionId::ParseHex(hex);
  if (!id.ok()) return std::nullopt;
  return *id;
}

std::vector<std::pair<std::string, VersionId>> RegistryStore::TagsOf(const std::string& ns,
                                                                     const std::string& name) {
  std::vector<std::pair<std::string, VersionId>> out;
  std::string prefix = "T|" + ns + "|" + name + "|";
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && StartsWith(it->key(), prefix); it->Next()) {
    auto id = VersionId::ParseHex(it->value().ToString());
    if (id.ok()) out.emplace_back(it->key().ToString().substr(prefix.size()), *id);
  }
  return out;
}

Status RegistryStore::SetTag(const TagChange& change, const AuditEntry& audit) {
  std::lock_guard<std::mutex> lock(mu_);
  leveldb::WriteBatch batch;
  if (change.to) {
    batch.Put(TagKey(change.ns, change.name, change.tag), change.to->ToHex());
  } else {
    batch.Delete(TagKey(change.ns, change.name, change.tag));
  }
  batch.Put(HistoryPrefix(change.ns, change.name, change.tag) + Seq(next_tag_seq_++),
            EncodeTagEvent(change));
  AuditEntry a = audit;
  a.seq = NextAuditSeq();
  batch.Put("A|" + Seq(a.seq), EncodeAudit(a));
  return FromLevelDb(db_->Write(Synced(), &batch), "write registry");
}

Result<std::vector<TagChange>> RegistryStore::TagHistory(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& tag) {
  std::vector<TagChange> out;
  std::string prefix = HistoryPrefix(ns, name, tag);
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && StartsWith(it->key(), prefix); it->Next()) {
    Result<TagChange> c = DecodeRecord<proto::TagEvent>(*it, ReadTagChange);
    if (!c.ok()) return c.status();
    out.push_back(std::move(c).value());
  }
  return out;
}

Status RegistryStore::ForEachManifest(const std::function<void(const Manifest&)>& fn) {
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  for (it->Seek("V|"); it->Valid() && StartsWith(it->key(), "V|"); it->Next()) {
    StoredVersion v =
        DecodeSigned(VersionId(), std::string_view(it->value().data(), it->value().size()));
    Result<Manifest> m = DecodeManifest(v.manifest_bytes);
    if (!m.ok()) return m.status().WithContext("stored version " + it->key().ToString());
    fn(*m);
  }
  return Status::OK();
}

Status RegistryStore::Audit(const AuditEntry& entry) {
  std::lock_guard<std::mutex> lock(mu_);
  AuditEntry a = entry;
  a.seq = NextAuditSeq();
  return FromLevelDb(db_->Put(Synced(), "A|" + Seq(a.seq), EncodeAudit(a)), "write audit log");
}

std::vector<AuditEntry> RegistryStore::AuditLog(uint64_t after_seq, uint32_t limit) {
  std::vector<AuditEntry> out;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  for (it->Seek("A|" + Seq(after_seq + 1));
       it->Valid() && StartsWith(it->key(), "A|") && out.size() < limit; it->Next()) {
    out.push_back(DecodeAudit(std::string_view(it->value().data(), it->value().size())));
  }
  return out;
}

Status RegistryStore::Ping() {
  std::string v;
  leveldb::Status s = db_->Get(leveldb::ReadOptions(), "health-probe", &v);
  if (s.ok() || s.IsNotFound()) return Status::OK();
  return FromLevelDb(s, "registry read");
}

uint64_t RegistryStore::version_count() {
  uint64_t n = 0;
  std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(leveldb::ReadOptions()));
  for (it->Seek("V|"); it->Valid() && StartsWith(it->key(), "V|"); it->Next()) ++n;
  return n;
}

}  // namespace shoal::tracker
