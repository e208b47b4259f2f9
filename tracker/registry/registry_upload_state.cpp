// RegistryStore's upload states: U|ns|name|<version hex> keys
// (registry_store.h), each a PendingUpload (proto/tracker.capnp) for a
// version committed before every chunk of it was in the origin. A record
// is written only with its version (CommitPending, guarded on the
// version's absence) or over one read (guarded on its value), so a record
// read as absent for a stored version stays absent: it is durable.
#include <algorithm>
#include <map>

#include "common/capnp_bytes.h"
#include "proto/capnp_views.h"
#include "registry/registry_layout.h"
#include "registry/registry_store.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

void FillUpload(const VersionUpload& u, proto::PendingUpload::Builder out) {
  out.setState(VersionStateName(u.state));
  out.setLeaseUntilMs(u.lease_until_ms);
  auto tags = out.initHeldTags(static_cast<unsigned>(u.held_tags.size()));
  for (size_t i = 0; i < u.held_tags.size(); ++i) {
    tags.set(static_cast<unsigned>(i), u.held_tags[i]);
  }
  out.setPublisher(u.publisher);
  out.setStartedAtMs(u.started_at_ms);
  out.setDetail(u.detail);
}

Result<VersionUpload> ReadUpload(proto::PendingUpload::Reader in) {
  VersionUpload u;
  Result<VersionState> state = ParseVersionState(Text(in.getState()));
  if (!state.ok()) return state.status();
  if (*state == VersionState::kDurable) {
    return Status::InvalidArgument("a pending upload says its version is durable");
  }
  u.state = *state;
  u.lease_until_ms = in.getLeaseUntilMs();
  for (auto t : in.getHeldTags()) u.held_tags.push_back(Text(t));
  u.publisher = Text(in.getPublisher());
  u.started_at_ms = in.getStartedAtMs();
  u.detail = Text(in.getDetail());
  return u;
}

std::string EncodeUpload(const VersionUpload& u) {
  return RecordBytes<proto::PendingUpload>(u, FillUpload);
}

std::string Target(const std::string& ns, const std::string& name, const VersionId& id) {
  return ns + "/" + name + ":" + id.ShortHex();
}

// OK if the version is stored; NotFound, as GetVersion says it, if not.
Status VersionExists(KvStore& kv, const std::string& ns, const std::string& name,
                     const VersionId& id) {
  auto v = kv.Get(VersionKey(ns, name, id));
  if (!v.ok()) return v.status();
  if (v->has_value()) return Status::OK();
  return Status::NotFound("version " + id.ShortHex() + " of " + ns + "/" + name +
                          " does not exist");
}

}  // namespace

VersionUpload VersionUpload::At(int64_t now_ms) const {
  if (state != VersionState::kUploading || now_ms <= lease_until_ms) return *this;
  VersionUpload lapsed = *this;
  lapsed.state = VersionState::kFailed;
  lapsed.detail = "its publisher (" + publisher + ") stopped renewing the upload; it lapsed at " +
                  FormatUtcMillis(lease_until_ms);
  return lapsed;
}

std::string VersionUpload::Describe() const {
  switch (state) {
    case VersionState::kUploading:
      return "by " + publisher + " since " + FormatUtcMillis(started_at_ms);
    case VersionState::kFailed:
      return detail;
    case VersionState::kDurable:
      break;
  }
  return "";
}

Status FailedVersionError(const std::string& ns, const std::string& name, const VersionId& id,
                          const std::string& detail) {
  return Status::FailedPrecondition(Target(ns, name, id) + " failed before it was durable" +
                                    (detail.empty() ? "" : ": " + detail) + "; publish it again");
}

Result<std::optional<VersionUpload>> RegistryStore::GuardUpload(KvBatch* batch,
                                                                const std::string& ns,
                                                                const std::string& name,
                                                                const VersionId& id) {
  const std::string key = UploadKey(ns, name, id);
  auto value = kv_.Get(key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<VersionUpload>();
  if (batch != nullptr) batch->ExpectValue(key, **value);
  Result<VersionUpload> u = DecodeRecord<proto::PendingUpload>(key, **value, ReadUpload);
  if (!u.ok()) return u.status();
  return std::optional<VersionUpload>(std::move(u).value());
}

Status RegistryStore::ClearUpload(KvBatch* batch, const std::string& ns, const std::string& name,
                                  const VersionId& id, std::vector<std::string>* tags) {
  auto upload = GuardUpload(batch, ns, name, id);
  if (!upload.ok()) return upload.status();
  if (!*upload) return Status::OK();
  batch->Delete(UploadKey(ns, name, id));
  tags->insert(tags->end(), (*upload)->held_tags.begin(), (*upload)->held_tags.end());
  return Status::OK();
}

Result<CommitOutcome> RegistryStore::CommitPending(const Manifest& m, const StoredVersion& v,
                                                   const std::vector<std::string>& tags,
                                                   const AuditEntry& audit, bool tag_early,
                                                   int64_t lease_until_ms) {
  SHOAL_RETURN_IF_ERROR(ArchiveIfNew(m, v));
  CommitOutcome out;
  Status s = Write("commit " + Target(m.ns, m.name, v.id), [&](KvBatch* batch) {
    SHOAL_RETURN_IF_ERROR(PutVersion(batch, m, v, &out.created));
    bool pending = out.created;
    if (!out.created) {
      auto upload = GuardUpload(batch, m.ns, m.name, v.id);
      if (!upload.ok()) return upload.status();
      pending = upload->has_value();  // uploading or failed: taken over
    }
    out.state = pending ? VersionState::kUploading : VersionState::kDurable;
    if (pending) {
      VersionUpload u;
      u.state = VersionState::kUploading;
      u.lease_until_ms = lease_until_ms;
      if (!tag_early) u.held_tags = tags;
      std::sort(u.held_tags.begin(), u.held_tags.end());
      u.held_tags.erase(std::unique(u.held_tags.begin(), u.held_tags.end()), u.held_tags.end());
      u.publisher = audit.subject;
      u.started_at_ms = audit.at_ms;
      batch->Put(UploadKey(m.ns, m.name, v.id), EncodeUpload(u));
    }
    if (!pending || tag_early) {
      SHOAL_RETURN_IF_ERROR(
          PutTagMoves(batch, m.ns, m.name, v.id, tags, audit.subject, audit.at_ms));
    }
    return PutAudit(batch, audit);
  });
  if (!s.ok()) return s;
  return out;
}

Result<VersionUpload> RegistryStore::UploadOf(const std::string& ns, const std::string& name,
                                              const VersionId& id, int64_t now_ms) {
  auto upload = GuardUpload(nullptr, ns, name, id);
  if (!upload.ok()) return upload.status();
  if (*upload) return (*upload)->At(now_ms);
  return VersionUpload{};
}

Result<VersionState> RegistryStore::RenewUpload(const std::string& ns, const std::string& name,
                                                const VersionId& id, int64_t now_ms,
                                                int64_t lease_until_ms) {
  VersionState state = VersionState::kDurable;
  Status s = Write("renew the upload of " + Target(ns, name, id), [&](KvBatch* batch) {
    auto upload = GuardUpload(batch, ns, name, id);
    if (!upload.ok()) return upload.status();
    if (!*upload) {
      state = VersionState::kDurable;
      return VersionExists(kv_, ns, name, id);
    }
    VersionUpload now = (*upload)->At(now_ms);
    if (now.state == VersionState::kFailed) return FailedVersionError(ns, name, id, now.detail);
    state = VersionState::kUploading;
    VersionUpload renewed = **upload;
    renewed.lease_until_ms = std::max(renewed.lease_until_ms, lease_until_ms);
    batch->Put(UploadKey(ns, name, id), EncodeUpload(renewed));
    return Status::OK();
  });
  if (!s.ok()) return s;
  return state;
}

Result<VersionState> RegistryStore::FinishUpload(const std::string& ns, const std::string& name,
                                                 const VersionId& id, int64_t now_ms,
                                                 const AuditEntry& audit) {
  Status s = Write("finish the upload of " + Target(ns, name, id), [&](KvBatch* batch) {
    auto upload = GuardUpload(batch, ns, name, id);
    if (!upload.ok()) return upload.status();
    if (!*upload) return VersionExists(kv_, ns, name, id);  // durable already
    VersionUpload now = (*upload)->At(now_ms);
    if (now.state == VersionState::kFailed) return FailedVersionError(ns, name, id, now.detail);
    batch->Delete(UploadKey(ns, name, id));
    SHOAL_RETURN_IF_ERROR(
        PutTagMoves(batch, ns, name, id, now.held_tags, audit.subject, audit.at_ms));
    return PutAudit(batch, audit);
  });
  if (!s.ok()) return s;
  return VersionState::kDurable;
}

Result<VersionState> RegistryStore::FailUpload(const std::string& ns, const std::string& name,
                                               const VersionId& id, const std::string& detail,
                                               const AuditEntry& audit) {
  VersionState state = VersionState::kFailed;
  Status s = Write("fail the upload of " + Target(ns, name, id), [&](KvBatch* batch) {
    auto upload = GuardUpload(batch, ns, name, id);
    if (!upload.ok()) return upload.status();
    if (!*upload) {
      state = VersionState::kDurable;  // every chunk was in the origin: it stays durable
      return VersionExists(kv_, ns, name, id);
    }
    state = VersionState::kFailed;
    VersionUpload failed = **upload;
    failed.state = VersionState::kFailed;
    failed.detail = detail;
    batch->Put(UploadKey(ns, name, id), EncodeUpload(failed));
    return PutAudit(batch, audit);
  });
  if (!s.ok()) return s;
  return state;
}

Status RegistryStore::AddUploadStates(const std::string& ns, const std::string& name,
                                      int64_t now_ms, std::vector<VersionInfo>* versions) {
  std::map<std::string, VersionUpload> uploads;  // by version hex
  const std::string prefix = UploadPrefix(ns, name);
  Status failed;
  Status s = VisitPrefix(kv_, prefix, [&](const KvPair& p) {
    Result<VersionUpload> u = DecodeRecord<proto::PendingUpload>(p.key, p.value, ReadUpload);
    if (!u.ok()) {
      failed = u.status();
      return false;
    }
    uploads[p.key.substr(prefix.size())] = u->At(now_ms);
    return true;
  });
  if (!s.ok()) return s;
  if (!failed.ok()) return failed;
  for (VersionInfo& v : *versions) {
    auto it = uploads.find(v.id.ToHex());
    v.state = it == uploads.end() ? VersionState::kDurable : it->second.state;
    v.state_detail = it == uploads.end() ? "" : it->second.Describe();
  }
  return Status::OK();
}

}  // namespace shoal::tracker
