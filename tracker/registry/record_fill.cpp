#include "registry/record_fill.h"

#include "proto/capnp_views.h"
#include "proto/record_codec.h"

namespace shoal::tracker {

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
  FillUpstream(v.upstream, out);
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
