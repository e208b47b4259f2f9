#include "auth/token_verifier.h"

#include <openssl/rand.h>

#include "registry/registry_store.h"
#include "shoal/log.h"

namespace shoal::tracker {

Status TokenVerifier::Load() {
  Result<std::vector<Revocation>> stored = store_.Revocations();
  if (!stored.ok()) return stored.status().WithContext("load token revocations");
  revocations_.Reset(*stored);
  uint64_t source = 0;
  while (source == 0) {
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&source), sizeof(source)) != 1) {
      return Status::IOError("cannot draw random bytes for the revocation list's source");
    }
  }
  revocations_.set_source(source);
  return Status::OK();
}

Status TokenVerifier::Refresh() {
  std::lock_guard<std::mutex> lock(revoke_mu_);
  return RefreshLocked();
}

Status TokenVerifier::RefreshLocked() {
  Result<std::vector<Revocation>> fresh = store_.Revocations(revocations_.generation());
  if (!fresh.ok()) return fresh.status().WithContext("read token revocations");
  if (!fresh->empty()) revocations_.Add(*fresh);
  return Status::OK();
}

Result<TokenClaims> TokenVerifier::Verify(std::string_view token, int64_t now_ms) const {
  if (token.empty()) {
    return Status::Unauthenticated("no token; send one as 'Authorization: Bearer <token>'");
  }
  Result<TokenClaims> claims = authority_.Verify(token);
  if (!claims.ok()) return claims;
  SHOAL_RETURN_IF_ERROR(StillValid(*claims, now_ms));
  return claims;
}

Result<TokenClaims> TokenVerifier::Authorize(std::string_view token, const std::string& ns,
                                             Role role, int64_t now_ms) const {
  Result<TokenClaims> claims = Verify(token, now_ms);
  if (!claims.ok()) return claims;
  SHOAL_RETURN_IF_ERROR(claims->Check(ns, role, now_ms));
  return claims;
}

Status TokenVerifier::StillValid(const TokenClaims& claims, int64_t now_ms) const {
  SHOAL_RETURN_IF_ERROR(claims.CheckNotExpired(now_ms));
  return revocations_.Check(claims);
}

Result<Revocation> TokenVerifier::Revoke(Revocation::Kind kind, const std::string& value,
                                         const Revoker& by, int64_t now_ms) {
  Revocation r;
  r.kind = kind;
  r.value = value;
  r.cutoff_ms = kind == Revocation::Kind::kSubject ? now_ms : 0;
  r.at_ms = now_ms;
  r.by = by.subject;
  SHOAL_RETURN_IF_ERROR(r.Validate());
  AuditEntry audit;
  audit.at_ms = now_ms;
  audit.subject = by.subject;
  audit.token_id = by.token_id;
  audit.action = "revoke";
  audit.target = std::string(RevocationKindName(kind)) + ":" + value;
  audit.detail = r.Describe();
  std::lock_guard<std::mutex> lock(revoke_mu_);
  SHOAL_RETURN_IF_ERROR(store_.AddRevocation(&r, audit));
  // Read back from the store rather than adding `r` alone: another tracker
  // may have stored one just before it, and the list takes them in order.
  SHOAL_RETURN_IF_ERROR(RefreshLocked());
  Log(LogLevel::kInfo, "token.revoked",
      {{"kind", std::string(RevocationKindName(kind))},
       {"value", value},
       {"by", by.subject},
       {"seq", r.seq}});
  return r;
}

}  // namespace shoal::tracker
