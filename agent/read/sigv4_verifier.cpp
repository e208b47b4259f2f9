#include "read/sigv4_verifier.h"

#include <openssl/crypto.h>
#include <strings.h>

#include <map>
#include <optional>
#include <vector>

#include "read/decimal_param.h"
#include "shoal/http_headers.h"
#include "shoal/s3_signer.h"
#include "shoal/sha256.h"
#include "shoal/uri_encode.h"

namespace shoal {
namespace {

using Outcome = SigV4Check::Outcome;
using Pairs = std::vector<std::pair<std::string, std::string>>;

constexpr char kAlgorithm[] = "AWS4-HMAC-SHA256";

SigV4Check Fail(Outcome o, std::string message, std::string access_key = "") {
  SigV4Check c;
  c.outcome = o;
  c.message = std::move(message);
  c.access_key = std::move(access_key);
  return c;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return out;
    start = at + 1;
  }
}

// The raw query of `target`, decoded pair by pair ('+' stays '+', as SigV4
// clients encode a space as %20).
std::optional<Pairs> RawQuery(const std::string& target) {
  Pairs out;
  size_t q = target.find('?');
  if (q == std::string::npos) return out;
  for (const std::string& part : Split(target.substr(q + 1), '&')) {
    if (part.empty()) continue;
    size_t eq = part.find('=');
    Result<std::string> k = UriDecode(part.substr(0, eq));
    Result<std::string> v = UriDecode(eq == std::string::npos ? "" : part.substr(eq + 1));
    if (!k.ok() || !v.ok()) return std::nullopt;
    out.emplace_back(*k, *v);
  }
  return out;
}

// What the signature claims: who, when, in which scope, over which headers.
struct Claim {
  std::string access_key, date, region, service, signed_headers, signature;
  std::string payload_hash;  // as signed: the body's SHA-256 hex, or UNSIGNED-PAYLOAD
  std::time_t time = -1;
  std::time_t expires_at = -1;  // presigned URLs only
};

// "AK/20130524/us-east-1/s3/aws4_request"; the access key is everything
// before the last four parts.
bool ParseCredential(const std::string& credential, Claim* c) {
  std::vector<std::string> parts = Split(credential, '/');
  if (parts.size() < 5 || parts.back() != "aws4_request") return false;
  size_t n = parts.size();
  c->service = parts[n - 2];
  c->region = parts[n - 3];
  const std::string& scope_date = parts[n - 4];
  size_t scope_bytes =
      scope_date.size() + c->region.size() + c->service.size() + parts.back().size() + 4;
  c->access_key = credential.substr(0, credential.size() - scope_bytes);
  return !c->access_key.empty() && scope_date.size() == 8 && !c->region.empty() &&
         !c->service.empty() && c->date.compare(0, 8, scope_date) == 0;
}

std::optional<std::string> Find(const Pairs& pairs, const std::string& name) {
  for (const auto& [k, v] : pairs) {
    if (k == name) return v;
  }
  return std::nullopt;
}

}  // namespace

std::time_t ParseAmzDate(const std::string& text) {
  if (text.size() != 16 || text[8] != 'T' || text[15] != 'Z') return -1;
  for (size_t i = 0; i < 15; ++i) {
    if (i != 8 && (text[i] < '0' || text[i] > '9')) return -1;
  }
  auto field = [&text](size_t at, size_t n) {  // digits, checked above
    return static_cast<int>(*ParseDecimal(std::string_view(text).substr(at, n)));
  };
  std::tm tm{};
  tm.tm_year = field(0, 4) - 1900;
  tm.tm_mon = field(4, 2) - 1;
  tm.tm_mday = field(6, 2);
  tm.tm_hour = field(9, 2);
  tm.tm_min = field(11, 2);
  tm.tm_sec = field(13, 2);
  if (tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 ||
      tm.tm_sec > 60) {
    return -1;
  }
  return timegm(&tm);
}

namespace {

// Reads the claim of an Authorization header; a failure, or nothing if well formed.
std::optional<SigV4Check> HeaderClaim(const HttpRequest& request, const std::string& auth,
                                      Claim* c) {
  if (auth.compare(0, sizeof(kAlgorithm) - 1, kAlgorithm) != 0) {
    return Fail(Outcome::kMalformed, "the Authorization header is not " + std::string(kAlgorithm));
  }
  std::map<std::string, std::string> fields;
  for (const std::string& part : Split(auth.substr(sizeof(kAlgorithm) - 1), ',')) {
    std::string p(TrimOws(part));
    size_t eq = p.find('=');
    if (eq != std::string::npos) fields[p.substr(0, eq)] = p.substr(eq + 1);
  }
  c->date = request.headers.Get("x-amz-date").value_or("");
  c->signed_headers = fields["SignedHeaders"];
  c->signature = fields["Signature"];
  if (!ParseCredential(fields["Credential"], c) || c->signed_headers.empty() ||
      c->signature.empty()) {
    return Fail(Outcome::kMalformed,
                "the Authorization header needs Credential=KEY/DATE/REGION/SERVICE/aws4_request, "
                "SignedHeaders and Signature, with the date of x-amz-date");
  }
  std::optional<std::string> content = request.headers.Get("x-amz-content-sha256");
  c->payload_hash =
      content ? *content : Sha256::Of(request.body.data(), request.body.size()).ToHex();
  return std::nullopt;
}

// Reads the claim of a presigned URL's query; a failure, or nothing if well formed.
std::optional<SigV4Check> PresignedClaim(const Pairs& query, const std::string& signature,
                                         Claim* c) {
  if (Find(query, "X-Amz-Algorithm").value_or("") != kAlgorithm) {
    return Fail(Outcome::kMalformed, "X-Amz-Algorithm must be " + std::string(kAlgorithm));
  }
  c->date = Find(query, "X-Amz-Date").value_or("");
  c->signed_headers = Find(query, "X-Amz-SignedHeaders").value_or("");
  c->signature = signature;
  std::optional<std::string> expires = Find(query, "X-Amz-Expires");
  if (!ParseCredential(Find(query, "X-Amz-Credential").value_or(""), c) ||
      c->signed_headers.empty() || !expires) {
    return Fail(Outcome::kBadQuery,
                "the presigned URL needs X-Amz-Credential, X-Amz-Date, "
                "X-Amz-Expires and X-Amz-SignedHeaders");
  }
  Result<uint64_t> seconds = ParseDecimalParam("X-Amz-Expires", *expires, 1, kMaxPresignedSeconds);
  if (!seconds.ok()) {
    return Fail(Outcome::kBadQuery,
                seconds.status().message() + " seconds: a presigned URL lives at most 7 days");
  }
  c->expires_at = ParseAmzDate(c->date) + static_cast<std::time_t>(*seconds);
  c->payload_hash = kUnsignedPayload;
  return std::nullopt;
}

// Sets c->time from c->date and checks it against `now`: within the clock
// skew, or for a presigned URL, not expired and not in the future.
std::optional<SigV4Check> CheckTime(Claim* c, bool presigned, std::time_t now) {
  c->time = ParseAmzDate(c->date);
  if (c->time < 0)
    return Fail(presigned ? Outcome::kBadQuery : Outcome::kMalformed,
                "x-amz-date '" + c->date.substr(0, 40) + "' is not YYYYMMDDTHHMMSSZ");
  if (c->expires_at >= 0) {
    if (now > c->expires_at)
      return Fail(Outcome::kExpired, "the presigned URL has expired", c->access_key);
    if (c->time > now + kMaxClockSkewSeconds)
      return Fail(Outcome::kExpired, "the presigned URL is dated in the future", c->access_key);
  } else if (c->time > now + kMaxClockSkewSeconds || c->time < now - kMaxClockSkewSeconds) {
    return Fail(Outcome::kExpired,
                "the request's time differs from the agent's by more than 15 minutes",
                c->access_key);
  }
  return std::nullopt;
}

// The request as the client signed it: every query pair but the signature,
// and the headers the claim names; a failure if one is missing.
std::optional<SigV4Check> SignedForm(const HttpRequest& request, const Pairs& query, const Claim& c,
                                     SignableRequest* s) {
  s->method = request.method;
  s->path = UriEncodePath(request.path);
  for (auto& [k, v] : query) {
    if (k != "X-Amz-Signature") s->query.emplace_back(k, v);
  }
  for (const std::string& name : Split(c.signed_headers, ';')) {
    bool found = false;
    for (const auto& [k, v] : request.headers) {
      if (strcasecmp(k.c_str(), name.c_str()) == 0) {
        s->headers.emplace_back(name, v);
        found = true;
      }
    }
    if (!found)
      return Fail(Outcome::kMalformed, "signed header '" + name + "' is not in the request");
  }
  s->payload_sha256 = c.payload_hash;
  return std::nullopt;
}

}  // namespace

SigV4Check VerifySigV4(const HttpRequest& request,
                       const std::function<std::string(const std::string& access_key)>& secret_for,
                       std::time_t now) {
  std::optional<Pairs> query = RawQuery(request.target);
  if (!query) return Fail(Outcome::kMalformed, "the query string has a malformed %-escape");
  std::optional<std::string> auth = request.headers.Get("Authorization");
  std::optional<std::string> presigned = Find(*query, "X-Amz-Signature");
  if (!auth && !presigned) return Fail(Outcome::kAnonymous, "the request is not signed");

  Claim c;
  std::optional<SigV4Check> failed =
      auth ? HeaderClaim(request, *auth, &c) : PresignedClaim(*query, *presigned, &c);
  if (!failed) failed = CheckTime(&c, !auth, now);
  SignableRequest s;
  if (!failed) failed = SignedForm(request, *query, c, &s);
  if (failed) return *failed;

  SigV4Signer signer(S3Credentials{c.access_key, secret_for(c.access_key), ""}, c.region,
                     c.service);
  std::string expected =
      signer.Signature(signer.StringToSign(SigV4Signer::CanonicalRequest(s), c.time), c.time);
  if (expected.size() != c.signature.size() ||
      CRYPTO_memcmp(expected.data(), c.signature.data(), expected.size()) != 0) {
    return Fail(Outcome::kMismatch,
                "the request signature does not match; sign with the read token as both access key "
                "and secret",
                c.access_key);
  }
  SigV4Check ok;
  ok.outcome = Outcome::kValid;
  ok.access_key = c.access_key;
  return ok;
}

}  // namespace shoal
