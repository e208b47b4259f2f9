#include "record_fill.h"

#include "capnp_views.h"

namespace shoal::tracker {

void FillVersionSummary(const VersionInfo& v, const std::vector<std::string>& tags,
                        proto::VersionSummary::Builder out) {
  out.setNamespace(v.ns);
  out.setName(v.name);
  out.setVersionId(Raw(v.id));
  out.setCreatedBy(v.created_by);
  out.setCreatedAtMs(v.created_at_ms);
  if (v.parent) out.setParentVersion(Raw(*v.parent));
  out.setTotalBytes(v.total_bytes);
  out.setFileCount(v.file_count);
  auto t = out.initTags(static_cast<unsigned>(tags.size()));
  for (size_t i = 0; i < tags.size(); ++i) t.set(static_cast<unsigned>(i), tags[i]);
}

std::vector<std::string> TagsOn(const VersionId& id,
                                const std::vector<std::pair<std::string, VersionId>>& all) {
  std::vector<std::string> out;
  for (const auto& [tag, target] : all) {
    if (target == id) out.push_back(tag);
  }
  return out;
}

void FillModelSummary(const ModelInfo& m, proto::ModelSummary::Builder out) {
  out.setNamespace(m.ns);
  out.setName(m.name);
  out.setVersionCount(m.version_count);
  if (m.latest) {
    out.setLatestVersion(Raw(m.latest->id));
    out.setLatestAtMs(m.latest->created_at_ms);
  }
  auto tags = out.initTags(static_cast<unsigned>(m.tags.size()));
  for (size_t i = 0; i < m.tags.size(); ++i) {
    tags[static_cast<unsigned>(i)].setTag(m.tags[i].first);
    tags[static_cast<unsigned>(i)].setVersionId(Raw(m.tags[i].second));
  }
}

void FillTagEvent(const TagChange& e, proto::TagEvent::Builder out) {
  out.setNamespace(e.ns);
  out.setName(e.name);
  out.setTag(e.tag);
  if (e.from) out.setFromVersion(Raw(*e.from));
  if (e.to) out.setToVersion(Raw(*e.to));
  out.setBy(e.by);
  out.setAtMs(e.at_ms);
}

void FillAuditRecord(const AuditEntry& a, proto::AuditRecord::Builder out) {
  out.setSeq(a.seq);
  out.setAtMs(a.at_ms);
  out.setSubject(a.subject);
  out.setTokenId(a.token_id);
  out.setAction(a.action);
  out.setTarget(a.target);
  out.setDetail(a.detail);
}

void FillSigned(const StoredVersion& v, proto::SignedManifest::Builder out) {
  out.setVersionId(Raw(v.id));
  out.setManifest(Raw(v.manifest_bytes));
  out.setSignature(Raw(v.signature));
  out.setSignerKeyId(v.signer_key_id);
}

void FillIdentity(const TokenClaims& c, proto::Identity::Builder out) {
  out.setSubject(c.subject);
  out.setRole(static_cast<proto::Role>(static_cast<int>(c.role)));
  auto ns = out.initNamespaces(static_cast<unsigned>(c.namespaces.size()));
  for (size_t i = 0; i < c.namespaces.size(); ++i)
    ns.set(static_cast<unsigned>(i), c.namespaces[i]);
  out.setExpiresAtMs(c.expires_at_ms);
}

}  // namespace shoal::tracker
