#include "shoal/token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstring>
#include <stdexcept>

#include "shoal/base64url.h"
#include "shoal/hash256.h"
#include "shoal/secret_file.h"
#include "shoal/utc_time.h"

namespace shoal {
namespace {

constexpr std::string_view kPrefix = "shoal1.";
constexpr size_t kMacBytes = 32;
constexpr size_t kMaxNamespaces = 64;

bool IsNameChar(char c, std::string_view extra) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         extra.find(c) != std::string_view::npos;
}

bool IsName(std::string_view s, size_t max_len, std::string_view extra) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s) {
    if (!IsNameChar(c, extra)) return false;
  }
  return true;
}

bool IsNamespace(std::string_view s) { return s == "*" || IsName(s, 64, "._-"); }

std::string JoinNamespaces(const std::vector<std::string>& namespaces) {
  std::string out;
  for (const std::string& ns : namespaces) {
    if (!out.empty()) out += ',';
    out += ns;
  }
  return out;
}

// The verb for a namespace refusal and the action for a role refusal.
const char* Verb(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kWrite:
      return "write to";
    case Role::kAdmin:
      return "administer";
  }
  return "use";
}

const char* Action(Role role) {
  switch (role) {
    case Role::kRead:
      return "reading";
    case Role::kWrite:
      return "publishing or tagging";
    case Role::kAdmin:
      return "deleting or garbage collection";
  }
  return "this action";
}

std::string EncodeClaims(const TokenClaims& c) {
  return "v=1\nid=" + c.id + "\nsub=" + c.subject + "\nrole=" + RoleName(c.role) +
         "\nns=" + JoinNamespaces(c.namespaces) + "\niat=" + std::to_string(c.issued_at_ms) +
         "\nexp=" + std::to_string(c.expires_at_ms);
}

// Splits off the next "key=value" line, requiring the key.
bool NextField(std::string_view* text, std::string_view key, std::string_view* value) {
  size_t end = text->find('\n');
  std::string_view line = text->substr(0, end);
  *text = end == std::string_view::npos ? std::string_view() : text->substr(end + 1);
  if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != '=') {
    return false;
  }
  *value = line.substr(key.size() + 1);
  return true;
}

bool ParseMillis(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

bool DecodeClaims(std::string_view text, TokenClaims* c) {
  std::string_view v, id, sub, role, ns, iat, exp;
  if (!NextField(&text, "v", &v) || v != "1" || !NextField(&text, "id", &id) ||
      !NextField(&text, "sub", &sub) || !NextField(&text, "role", &role) ||
      !NextField(&text, "ns", &ns) || !NextField(&text, "iat", &iat) ||
      !NextField(&text, "exp", &exp) || !text.empty()) {
    return false;
  }
  Result<Role> parsed_role = ParseRole(role);
  if (!parsed_role.ok()) return false;
  c->id = std::string(id);
  c->subject = std::string(sub);
  c->role = *parsed_role;
  c->namespaces.clear();
  while (true) {
    size_t comma = ns.find(',');
    c->namespaces.emplace_back(ns.substr(0, comma));
    if (comma == std::string_view::npos || c->namespaces.size() > kMaxNamespaces) break;
    ns = ns.substr(comma + 1);
  }
  return ParseMillis(iat, &c->issued_at_ms) && ParseMillis(exp, &c->expires_at_ms) &&
         c->Validate().ok();
}

Status Malformed() { return Status::Unauthenticated("token is malformed"); }

}  // namespace

Result<Role> ParseRole(std::string_view text) {
  if (text == "read") return Role::kRead;
  if (text == "write") return Role::kWrite;
  if (text == "admin") return Role::kAdmin;
  return Status::InvalidArgument("role '" + std::string(text.substr(0, 40)) +
                                 "' is not one of read, write, admin");
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kRead:
      return "read";
    case Role::kWrite:
      return "write";
    case Role::kAdmin:
      return "admin";
  }
  return "unknown";
}

Status TokenClaims::Validate() const {
  if (!IsName(id, 128, "._@:+/-")) {
    return Status::InvalidArgument("token id must be 1-128 characters of [A-Za-z0-9._@:+/-]");
  }
  if (!IsName(subject, 128, "._@:+/-")) {
    return Status::InvalidArgument("token subject '" + subject.substr(0, 40) +
                                   "' must be 1-128 characters of [A-Za-z0-9._@:+/-]");
  }
  if (namespaces.empty() || namespaces.size() > kMaxNamespaces) {
    return Status::InvalidArgument("a token needs 1 to 64 namespaces, or '*'");
  }
  for (const std::string& ns : namespaces) {
    if (!IsNamespace(ns)) {
      return Status::InvalidArgument("namespace '" + ns.substr(0, 40) +
                                     "' must be 1-64 characters of [A-Za-z0-9._-], or '*'");
    }
  }
  if (issued_at_ms < 0 || expires_at_ms < issued_at_ms) {
    return Status::InvalidArgument("a token must expire after it is issued");
  }
  return Status::OK();
}

Status TokenClaims::CheckNotExpired(int64_t now_ms) const {
  if (now_ms < expires_at_ms) return Status::OK();
  return Status::Unauthenticated("token for '" + subject + "' expired at " +
                                 FormatUtcMillis(expires_at_ms) +
                                 "; mint a new one with 'shoal-tracker token create'");
}

Status TokenClaims::Check(const std::string& ns, Role needed, int64_t now_ms) const {
  // Built only for a refusal: a tracker checks a token per announce entry.
  auto who = [this] { return "token for '" + subject + "'"; };
  SHOAL_RETURN_IF_ERROR(CheckNotExpired(now_ms));
  bool everywhere = false, here = false;
  for (const std::string& n : namespaces) {
    everywhere |= n.size() == 1 && n[0] == '*';
    here |= !ns.empty() && n == ns;
  }
  if (!everywhere && !here) {
    if (ns.empty()) {
      return Status::PermissionDenied(who() + " is scoped to " + JoinNamespaces(namespaces) +
                                      "; this cluster-wide action needs a token for '*'");
    }
    return Status::PermissionDenied(who() + " may not " + Verb(needed) + " namespace '" + ns +
                                    "'; it is scoped to " + JoinNamespaces(namespaces));
  }
  if (role < needed) {
    return Status::PermissionDenied(who() + " has role " + RoleName(role) + "; " + Action(needed) +
                                    " needs role " + RoleName(needed));
  }
  return Status::OK();
}

std::string NewTokenId() {
  uint8_t bytes[8];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    throw std::runtime_error("OpenSSL's random generator failed");
  }
  return hex::Encode(bytes, sizeof(bytes));
}

Result<TokenAuthority> TokenAuthority::FromSecret(std::string secret) {
  if (secret.size() < kMinSecretBytes) {
    return Status::InvalidArgument("a token secret needs at least 32 bytes, got " +
                                   std::to_string(secret.size()));
  }
  return TokenAuthority(std::move(secret));
}

Result<TokenAuthority> TokenAuthority::LoadOrCreate(const std::string& secret_path) {
  Result<std::string> secret = ReadSecretFile(secret_path);
  if (!secret.ok() && secret.status().IsNotFound()) {
    std::string fresh(kMinSecretBytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(&fresh[0]), int(fresh.size())) != 1) {
      return Status::IOError("cannot draw random bytes for the token secret");
    }
    Status created = CreateSecretFile(secret_path, fresh);
    if (created.ok()) return TokenAuthority(std::move(fresh));
    if (created.code() != Status::Code::kAlreadyExists) return created;
    secret = ReadSecretFile(secret_path);  // another process won the race
  }
  if (!secret.ok()) return secret.status();
  Result<TokenAuthority> authority = FromSecret(std::move(secret.value()));
  if (!authority.ok()) return authority.status().WithContext("token secret " + secret_path);
  return authority;
}

std::string TokenAuthority::Mac(std::string_view data) const {
  unsigned char out[EVP_MAX_MD_SIZE];
  size_t out_len = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, secret_.data(), secret_.size(),
                reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, sizeof(out),
                &out_len) == nullptr ||
      out_len != kMacBytes) {
    throw std::runtime_error("OpenSSL HMAC-SHA256 failed");
  }
  return std::string(reinterpret_cast<const char*>(out), out_len);
}

std::string TokenAuthority::Mint(const TokenClaims& claims) const {
  if (!claims.Validate().ok()) {
    throw std::invalid_argument("Mint: " + claims.Validate().message());
  }
  std::string signed_part = std::string(kPrefix) + base64url::Encode(EncodeClaims(claims));
  return signed_part + "." + base64url::Encode(Mac(signed_part));
}

namespace {

// Splits "shoal1.<claims>.<mac>" at the dot before the MAC; false if the
// token cannot be one.
bool SplitToken(std::string_view token, size_t* dot) {
  if (token.size() > TokenAuthority::kMaxTokenBytes || token.substr(0, kPrefix.size()) != kPrefix) {
    return false;
  }
  *dot = token.find('.', kPrefix.size());
  return *dot != std::string_view::npos;
}

}  // namespace

Result<TokenClaims> PeekTokenClaims(std::string_view token) {
  size_t dot = 0;
  if (!SplitToken(token, &dot)) return Malformed();
  std::optional<std::string> text =
      base64url::Decode(token.substr(kPrefix.size(), dot - kPrefix.size()));
  TokenClaims claims;
  if (!text || !DecodeClaims(*text, &claims)) return Malformed();
  return claims;
}

Result<TokenClaims> TokenAuthority::Verify(std::string_view token) const {
  size_t dot = 0;
  if (!SplitToken(token, &dot)) return Malformed();
  std::string_view signed_part = token.substr(0, dot);
  std::optional<std::string> mac = base64url::Decode(token.substr(dot + 1));
  if (!mac || mac->size() != kMacBytes) return Malformed();
  std::string expected = Mac(signed_part);
  if (CRYPTO_memcmp(expected.data(), mac->data(), kMacBytes) != 0) {
    return Status::Unauthenticated("token signature is invalid");
  }
  // Only claims this authority signed reach the parser.
  std::optional<std::string> text = base64url::Decode(signed_part.substr(kPrefix.size()));
  TokenClaims claims;
  if (!text || !DecodeClaims(*text, &claims) || EncodeClaims(claims) != *text) {
    return Malformed();
  }
  return claims;
}

}  // namespace shoal
