// TokenVerifier: the one place the tracker decides whether a token counts.
//
// A token counts if its signature is the tracker's (TokenAuthority), it has
// not expired, and it has not been revoked (RevocationList). Every route
// that takes a token (the RPC Gateway and each Registry call, /v1 over
// HTTP, /announce, agent registration and peer certificates) asks this
// class, so none can forget a revocation. A token that does not count is
// Unauthenticated (HTTP 401); one that counts but lacks the role or the
// namespace is PermissionDenied (403).
//
// Revocations are kept in the registry (RegistryStore::AddRevocation), so
// they survive restarts, and mirrored in memory, so a check costs no disk
// read. Revoke takes effect for the next check on every thread.
//
// Thread-safety: every method may be called from any thread.
#ifndef SHOAL_TRACKER_TOKEN_VERIFIER_H_
#define SHOAL_TRACKER_TOKEN_VERIFIER_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "shoal/status.h"
#include "shoal/token.h"
#include "shoal/token_revocations.h"

namespace shoal::tracker {

class RegistryStore;

// Who asks for a revocation, for the audit log.
struct Revoker {
  std::string subject;   // an admin token's subject, or "local:<unix user>"
  std::string token_id;  // the admin token's id; empty for a local revocation
};

class TokenVerifier {
 public:
  // `authority` and `store` must outlive this. Call Load before use.
  TokenVerifier(const TokenAuthority& authority, RegistryStore& store)
      : authority_(authority), store_(store) {}
  TokenVerifier(const TokenVerifier&) = delete;
  TokenVerifier& operator=(const TokenVerifier&) = delete;

  // Reads the stored revocations into memory.
  Status Load();
  // Takes in revocations stored since (by this tracker or another one
  // sharing the registry).
  Status Refresh();

  // The claims of a token that counts at `now_ms`; Unauthenticated naming
  // why otherwise (missing, malformed, forged, expired, revoked).
  Result<TokenClaims> Verify(std::string_view token, int64_t now_ms) const;
  // Verify, then TokenClaims::Check: PermissionDenied if the token counts
  // but may not act on `ns` with `role`.
  Result<TokenClaims> Authorize(std::string_view token, const std::string& ns, Role role,
                                int64_t now_ms) const;
  // For claims verified earlier and held since (an RPC connection's
  // Registry): Unauthenticated if they expired or were revoked meanwhile.
  Status StillValid(const TokenClaims& claims, int64_t now_ms) const;

  // Revokes one token (kTokenId) or every token of a subject issued up to
  // `now_ms` (kSubject): stored with an audit record naming `by`, then in
  // force at once. Returns the stored revocation. InvalidArgument for a
  // malformed id or subject.
  Result<Revocation> Revoke(Revocation::Kind kind, const std::string& value, const Revoker& by,
                            int64_t now_ms);

  const RevocationList& revocations() const { return revocations_; }

 private:
  Status RefreshLocked();  // REQUIRES: revoke_mu_ held

  const TokenAuthority& authority_;
  RegistryStore& store_;
  std::mutex revoke_mu_;  // one Revoke or Refresh at a time: revocations_ sees them in seq order
  RevocationList revocations_;
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_TOKEN_VERIFIER_H_
