// Tokens as every RPC and HTTP route verifies them (shoal/token.h):
// TokenAuthority::Verify, then what a verified token's claims are asked.
//
// Verify reads the claims only once their MAC matches, so the first byte
// picks the form: 0 the bytes are a whole token, as a client sends it; 1
// the bytes are the claims text, which is signed here with the authority's
// secret (as a token the tracker once minted would be) so that Verify's
// claims parser reads it. A token that verifies must be the one Mint makes
// of its claims, and its claims must be valid.
#include <openssl/evp.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "shoal/base64url.h"
#include "shoal/token.h"

namespace {

using shoal::fuzz::Check;

// "shoal1.<claims>.<mac>", signed as TokenAuthority::Mint signs.
std::string Sign(std::string_view claims) {
  std::string signed_part = "shoal1." + shoal::base64url::Encode(claims);
  unsigned char mac[EVP_MAX_MD_SIZE];
  size_t mac_len = 0;
  EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, shoal::fuzz::kTokenSecret,
            sizeof(shoal::fuzz::kTokenSecret) - 1,
            reinterpret_cast<const unsigned char*>(signed_part.data()), signed_part.size(), mac,
            sizeof(mac), &mac_len);
  return signed_part + "." +
         shoal::base64url::Encode(std::string(reinterpret_cast<const char*>(mac), mac_len));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const shoal::TokenAuthority* authority = new shoal::TokenAuthority(
      shoal::TokenAuthority::FromSecret(shoal::fuzz::kTokenSecret).value());
  if (size == 0) return 0;
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const std::string token = data[0] % 2 == 0 ? std::string(rest) : Sign(rest);
  shoal::Result<shoal::TokenClaims> claims = authority->Verify(token);
  if (!claims.ok()) {
    Check(claims.status().code() == shoal::Status::Code::kUnauthenticated,
          "a refused token that is not Unauthenticated");
    return 0;
  }
  Check(claims->Validate().ok(), "a verified token with invalid claims");
  Check(authority->Mint(*claims) == token, "a verified token that Mint would not make");
  for (const std::string& ns : {std::string(), std::string("team"), claims->namespaces.front()}) {
    for (shoal::Role role : {shoal::Role::kRead, shoal::Role::kWrite, shoal::Role::kAdmin}) {
      (void)claims->Check(ns, role, claims->issued_at_ms);
      (void)claims->Check(ns, role, claims->expires_at_ms);
    }
  }
  return 0;
}
