// RegistryStore's record of minted tokens: I|<token id> keys
// (registry_store.h), each the journal's line for it (issued_tokens.h).
#include "issued_tokens.h"
#include "registry_layout.h"
#include "registry_store.h"

namespace shoal::tracker {

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
