// RegistryStore's tags: T|ns|name|tag, each the hex of the version it
// points at, and H|ns|name|tag|<seq>, every move of it (registry_store.h).
// Each move is guarded on the tag's target as read, so two trackers moving
// one tag at once keep one unbroken history.
#include <algorithm>
#include <cctype>

#include "common/capnp_bytes.h"
#include "proto/record_codec.h"
#include "registry/registry_layout.h"
#include "registry/registry_store.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {
namespace {

std::string EncodeTagEvent(const TagChange& c) {
  return RecordBytes<proto::TagEvent>(c, FillTagChange);
}

Result<std::optional<VersionId>> ParseTagValue(const std::optional<std::string>& hex) {
  if (!hex) return std::optional<VersionId>();
  auto id = VersionId::ParseHex(*hex);
  if (!id.ok()) return Status::Corruption("tag value '" + *hex + "' is not a version ID");
  return std::optional<VersionId>(*id);
}

// A tag as read: its stored value and the version that names.
struct TagRead {
  std::optional<std::string> value;  // nullopt: no such tag
  std::optional<VersionId> target;
};

Result<TagRead> ReadTag(KvStore& kv, const std::string& tkey) {
  auto current = kv.Get(tkey);
  if (!current.ok()) return current.status();
  auto target = ParseTagValue(*current);
  if (!target.ok()) return target.status();
  return TagRead{*current, *target};
}

// The batch applies only if the tag still is as read.
void GuardTag(KvBatch* batch, const std::string& tkey, const TagRead& read) {
  if (read.value) {
    batch->ExpectValue(tkey, *read.value);
  } else {
    batch->ExpectAbsent(tkey);
  }
}

}  // namespace

Status ValidateTag(const std::string& tag) {
  if (tag.empty() || tag.size() > 128) {
    return Status::InvalidArgument("tag '" + tag.substr(0, 130) + "' must be 1 to 128 bytes");
  }
  bool all_hex = tag.size() >= 8;
  for (char ch : tag) {
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
    if (!ok) {
      return Status::InvalidArgument("tag '" + tag + "' may only hold letters, digits and . _ -");
    }
    if (!std::isxdigit(static_cast<unsigned char>(ch))) all_hex = false;
  }
  if (all_hex) {
    return Status::InvalidArgument("tag '" + tag +
                                   "' looks like a version id; pick a tag with a "
                                   "non-hex letter");
  }
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
    auto read = ReadTag(kv_, tkey);
    if (!read.ok()) return read.status();
    GuardTag(batch, tkey, *read);
    previous = read->target;
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

Status RegistryStore::PutTagMoves(KvBatch* batch, const std::string& ns, const std::string& name,
                                  const VersionId& id, std::vector<std::string> tags,
                                  const std::string& by, int64_t at_ms) {
  // One move per tag: a second would take the same history number.
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  for (const std::string& tag : tags) {
    const std::string tkey = TagKey(ns, name, tag);
    auto read = ReadTag(kv_, tkey);
    if (!read.ok()) return read.status();
    if (read->target == id) continue;
    GuardTag(batch, tkey, *read);
    TagChange c{ns, name, tag, read->target, id, by, at_ms};
    Result<uint64_t> seq = NextSeq(HistoryPrefix(ns, name, tag), batch);
    if (!seq.ok()) return seq.status();
    batch->Put(tkey, id.ToHex());
    batch->Put(HistoryPrefix(ns, name, tag) + Seq(*seq), EncodeTagEvent(c));
  }
  return Status::OK();
}

Status RegistryStore::PutTagRemovals(KvBatch* batch, const std::string& ns, const std::string& name,
                                     const VersionId& id, const std::string& by, int64_t at_ms) {
  auto tags = TagsOf(ns, name);
  if (!tags.ok()) return tags.status();
  for (const auto& [tag, target] : *tags) {
    if (target != id) continue;
    const std::string tkey = TagKey(ns, name, tag);
    batch->ExpectValue(tkey, id.ToHex());
    batch->Delete(tkey);
    TagChange c{ns, name, tag, id, std::nullopt, by, at_ms};
    Result<uint64_t> seq = NextSeq(HistoryPrefix(ns, name, tag), batch);
    if (!seq.ok()) return seq.status();
    batch->Put(HistoryPrefix(ns, name, tag) + Seq(*seq), EncodeTagEvent(c));
  }
  return Status::OK();
}

Result<std::vector<TagChange>> RegistryStore::TagHistory(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& tag) {
  std::vector<TagChange> out;
  Status failed;
  Status s = VisitPrefix(kv_, HistoryPrefix(ns, name, tag), [&](const KvPair& p) {
    Result<TagChange> c = DecodeRecord<proto::TagEvent>(p.key, p.value, ReadTagChange);
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

}  // namespace shoal::tracker
