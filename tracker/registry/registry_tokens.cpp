// RegistryStore's token records: the minted tokens (I|<token id> keys, each
// the journal's line for it, issued_tokens.h) and the revocations (R|<seq>
// keys), both in registry/registry_store.h.
#include <kj/exception.h>

#include "common/capnp_bytes.h"
#include "proto/record_codec.h"
#include "registry/issued_tokens.h"
#include "registry/registry_layout.h"
#include "registry/registry_store.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal::tracker {

Status RegistryStore::AddRevocation(Revocation* r, const AuditEntry& audit) {
  SHOAL_RETURN_IF_ERROR(r->Validate());
  return Write("write revocation", [&](KvBatch* batch) {
    Result<uint64_t> seq = NextSeq("R|", batch);
    if (!seq.ok()) return seq.status();
    r->seq = *seq;
    batch->Put("R|" + Seq(r->seq), RecordBytes<proto::Revocation>(*r, FillRevocation));
    return PutAudit(batch, audit);
  });
}

Result<std::vector<Revocation>> RegistryStore::Revocations(uint64_t after_seq) {
  std::vector<Revocation> out;
  Status failed;
  Status s = VisitRange(kv_, "R|" + Seq(after_seq + 1), PrefixEnd("R|"), [&](const KvPair& p) {
    Result<Revocation> r = Status::Corruption("unreadable");
    try {
      BytesReader br(p.value);
      r = ReadRevocation(br.root<proto::Revocation>());
    } catch (const kj::Exception& e) {
      r = Status::Corruption(e.getDescription().cStr());
    }
    if (!r.ok()) {
      failed = Status::Corruption("registry record " + p.key + ": " + r.status().message());
      return false;
    }
    out.push_back(std::move(r).value());
    return true;
  });
  if (!s.ok()) return s;
  if (!failed.ok()) return failed;
  return out;
}

Status RegistryStore::AddIssuedToken(const TokenClaims& claims) {
  SHOAL_RETURN_IF_ERROR(claims.Validate());
  KvBatch batch;
  batch.Put(IssuedTokenKey(claims.id), EncodeIssuedToken(claims));
  return kv_.Apply(batch).WithContext("record issued token " + claims.id);
}

Result<std::vector<TokenClaims>> RegistryStore::IssuedTokens() {
  std::vector<TokenClaims> out;
  Status s = VisitPrefix(kv_, "I|", [&](const KvPair& p) {
    TokenClaims c;
    if (DecodeIssuedToken(p.value, &c)) out.push_back(std::move(c));
    return true;
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace shoal::tracker
