#include "shoal/s3_signer.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>

#include "shoal/hash256.h"
#include "shoal/http_headers.h"
#include "shoal/sha256.h"
#include "shoal/uri_encode.h"

namespace shoal {

const char kEmptyPayloadSha256[] =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
const char kUnsignedPayload[] = "UNSIGNED-PAYLOAD";

namespace {

constexpr char kAlgorithm[] = "AWS4-HMAC-SHA256";

using Mac = std::string;  // 32 raw bytes

Mac Hmac(const std::string& key, const std::string& data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return Mac(reinterpret_cast<const char*>(out), len);
}

std::string HexSha256(const std::string& data) {
  return Sha256::Of(data.data(), data.size()).ToHex();
}

// Trims both ends and folds runs of spaces into one, as SigV4 asks.
std::string TrimValue(const std::string& v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::string DateOnly(std::time_t t) { return AmzDate(t).substr(0, 8); }

}  // namespace

std::string CanonicalQueryString(const std::vector<std::pair<std::string, std::string>>& query) {
  std::vector<std::pair<std::string, std::string>> enc;
  enc.reserve(query.size());
  for (const auto& [k, v] : query) enc.emplace_back(UriEncodeQuery(k), UriEncodeQuery(v));
  std::sort(enc.begin(), enc.end());
  std::string out;
  for (const auto& [k, v] : enc) {
    if (!out.empty()) out += '&';
    out += k;
    out += '=';
    out += v;
  }
  return out;
}

std::string AmzDate(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

SigV4Signer::SigV4Signer(S3Credentials credentials, std::string region, std::string service)
    : credentials_(std::move(credentials)),
      region_(std::move(region)),
      service_(std::move(service)) {}

std::string SigV4Signer::CanonicalRequest(const SignableRequest& request) {
  std::vector<std::pair<std::string, std::string>> headers;
  headers.reserve(request.headers.size());
  for (const auto& [k, v] : request.headers)
    headers.emplace_back(LowercaseHeaderName(k), TrimValue(v));
  std::sort(headers.begin(), headers.end());

  std::string canonical_headers, signed_headers;
  for (size_t i = 0; i < headers.size(); ++i) {
    // Repeated names join their values with commas, in the order given.
    if (i > 0 && headers[i].first == headers[i - 1].first) {
      canonical_headers.pop_back();
      canonical_headers += ',' + headers[i].second + '\n';
      continue;
    }
    canonical_headers += headers[i].first + ':' + headers[i].second + '\n';
    if (!signed_headers.empty()) signed_headers += ';';
    signed_headers += headers[i].first;
  }
  return request.method + '\n' + request.path + '\n' + CanonicalQueryString(request.query) + '\n' +
         canonical_headers + '\n' + signed_headers + '\n' + request.payload_sha256;
}

std::string SigV4Signer::Scope(std::time_t now) const {
  return DateOnly(now) + '/' + region_ + '/' + service_ + "/aws4_request";
}

std::string SigV4Signer::StringToSign(const std::string& canonical_request, std::time_t now) const {
  return std::string(kAlgorithm) + '\n' + AmzDate(now) + '\n' + Scope(now) + '\n' +
         HexSha256(canonical_request);
}

std::string SigV4Signer::Signature(const std::string& string_to_sign, std::time_t now) const {
  Mac k = Hmac("AWS4" + credentials_.secret_key, DateOnly(now));
  k = Hmac(k, region_);
  k = Hmac(k, service_);
  k = Hmac(k, "aws4_request");
  Mac sig = Hmac(k, string_to_sign);
  return hex::Encode(reinterpret_cast<const uint8_t*>(sig.data()), sig.size());
}

std::vector<std::pair<std::string, std::string>> SigV4Signer::SignHeaders(
    const SignableRequest& request, std::time_t now) const {
  std::vector<std::pair<std::string, std::string>> added = {
      {"x-amz-date", AmzDate(now)},
      {"x-amz-content-sha256", request.payload_sha256},
  };
  if (!credentials_.session_token.empty()) {
    added.emplace_back("x-amz-security-token", credentials_.session_token);
  }
  SignableRequest full = request;
  full.headers.insert(full.headers.end(), added.begin(), added.end());

  std::string signed_headers;
  {
    std::vector<std::string> names;
    for (const auto& h : full.headers) names.push_back(LowercaseHeaderName(h.first));
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    for (const auto& n : names) signed_headers += (signed_headers.empty() ? "" : ";") + n;
  }
  std::string signature = Signature(StringToSign(CanonicalRequest(full), now), now);
  added.emplace_back("authorization", std::string(kAlgorithm) +
                                          " Credential=" + credentials_.access_key + '/' +
                                          Scope(now) + ",SignedHeaders=" + signed_headers +
                                          ",Signature=" + signature);
  return added;
}

std::string SigV4Signer::PresignQuery(const SignableRequest& request, std::time_t now,
                                      uint32_t expires_seconds) const {
  SignableRequest req = request;
  req.headers.clear();
  for (const auto& h : request.headers) {
    if (LowercaseHeaderName(h.first) == "host") req.headers.push_back(h);
  }
  req.payload_sha256 = kUnsignedPayload;
  req.query.emplace_back("X-Amz-Algorithm", kAlgorithm);
  req.query.emplace_back("X-Amz-Credential", credentials_.access_key + '/' + Scope(now));
  req.query.emplace_back("X-Amz-Date", AmzDate(now));
  req.query.emplace_back("X-Amz-Expires", std::to_string(expires_seconds));
  if (!credentials_.session_token.empty()) {
    req.query.emplace_back("X-Amz-Security-Token", credentials_.session_token);
  }
  req.query.emplace_back("X-Amz-SignedHeaders", "host");
  std::string signature = Signature(StringToSign(CanonicalRequest(req), now), now);
  return CanonicalQueryString(req.query) + "&X-Amz-Signature=" + signature;
}

}  // namespace shoal
