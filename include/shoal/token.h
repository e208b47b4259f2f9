// Access tokens: who may read, write or administer which namespaces.
//
// A token is "shoal1.<claims>.<mac>": the claims in a small line-based text
// form, then an HMAC-SHA256 over "shoal1.<claims>" keyed by the tracker's
// secret, both base64url without padding. The tracker mints tokens; every RPC
// and HTTP route verifies one and then asks its claims whether the action is
// allowed.
#ifndef SHOAL_TOKEN_H_
#define SHOAL_TOKEN_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shoal/status.h"

namespace shoal {

// Ordered: an admin may do what a writer may, a writer what a reader may.
enum class Role { kRead = 0, kWrite = 1, kAdmin = 2 };

// "read", "write" or "admin"; anything else is InvalidArgument.
Result<Role> ParseRole(std::string_view text);
const char* RoleName(Role role);

// What a token says about its holder. A plain value: const methods are safe
// from many threads; mutation needs the caller's synchronization.
struct TokenClaims {
  std::string id;       // unique per token, for audit and revocation
  std::string subject;  // who holds it: "ci", "pod-7"
  Role role = Role::kRead;
  std::vector<std::string> namespaces;  // "*" alone means every namespace
  int64_t issued_at_ms = 0;             // Unix milliseconds
  int64_t expires_at_ms = 0;            // Unix milliseconds; the token is dead from then on

  // OK if the holder may act on namespace `ns` with role `needed` at time
  // `now_ms`. Unauthenticated if the token has expired; PermissionDenied if
  // it lacks the role or the namespace. Either way a one-line reason that
  // names the subject. An empty `ns` means a cluster-wide action, which
  // needs "*".
  Status Check(const std::string& ns, Role needed, int64_t now_ms) const;
  // OK until `expires_at_ms`; from then on Unauthenticated, as Check words it.
  Status CheckNotExpired(int64_t now_ms) const;

  // OK if every field is well formed: id and subject of 1-128 characters from
  // [A-Za-z0-9._@:+/-], 1-64 namespaces of 1-64 characters from
  // [A-Za-z0-9._-] (or "*"), and issued_at_ms <= expires_at_ms.
  Status Validate() const;
};

// A fresh random token id: 16 hex digits.
std::string NewTokenId();

// The claims a token carries, read WITHOUT checking its signature.
//
// For matching a token against revocations only, never for trust: anyone
// can write any claims into a token. An agent, which has no secret, uses it
// to refuse a token the tracker has revoked without asking the tracker; what
// a token may do is still decided by the tracker, which verifies it.
// Unauthenticated "token is malformed" if the claims cannot be read.
Result<TokenClaims> PeekTokenClaims(std::string_view token);

// Mints and verifies tokens with one HMAC secret.
//
// Thread-safety: immutable after construction; any number of threads may
// call Mint and Verify concurrently.
class TokenAuthority {
 public:
  static constexpr size_t kMinSecretBytes = 32;
  static constexpr size_t kMaxTokenBytes = 4096;

  // REQUIRES: secret.size() >= kMinSecretBytes (else InvalidArgument).
  static Result<TokenAuthority> FromSecret(std::string secret);

  // Reads the secret at `secret_path`, or creates it (32 random bytes, mode
  // 0600, atomically) if it does not exist. A secret readable by group or
  // others, or shorter than 32 bytes, is refused.
  static Result<TokenAuthority> LoadOrCreate(const std::string& secret_path);

  // REQUIRES: claims.Validate().ok(); a programming error otherwise.
  std::string Mint(const TokenClaims& claims) const;

  // The claims of a token this authority minted. Unauthenticated with
  // "token is malformed" or "token signature is invalid" otherwise. Does not
  // look at the clock (TokenClaims::Check decides about expiry) nor at
  // revocations (the tracker's TokenVerifier does).
  Result<TokenClaims> Verify(std::string_view token) const;

 private:
  explicit TokenAuthority(std::string secret) : secret_(std::move(secret)) {}
  std::string Mac(std::string_view data) const;

  std::string secret_;  // constant after construction
};

}  // namespace shoal

#endif  // SHOAL_TOKEN_H_
