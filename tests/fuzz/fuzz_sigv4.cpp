// An S3 request to the agent, checked for AWS Signature Version 4 as the
// agent's S3 routes check it (agent/read/sigv4_verifier.h): the bytes are
// read as an HTTP request the way the server reads one (Beast's parser,
// RequestFrom, ParseTarget), then VerifySigV4 reads the Authorization
// header form or the presigned query form, with the read token as access
// key and secret.
//
// The first byte picks the clock: 0 the request's own date (x-amz-date or
// X-Amz-Date), so a seed's signature still verifies and any date is in
// time; 1 the real clock.
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "fuzz/http_input.h"
#include "read/sigv4_verifier.h"

namespace {

using shoal::SigV4Check;
using shoal::fuzz::Check;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool real_clock = data[0] % 2 == 1;
  std::string_view wire(reinterpret_cast<const char*>(data + 1), size - 1);
  shoal::HttpRequest req;
  if (shoal::fuzz::ReadRequest(&wire, &req) != shoal::fuzz::ReadResult::kRequest) return 0;

  std::time_t now = std::time(nullptr);
  if (!real_clock) {
    std::string date = req.headers.Get("x-amz-date").value_or("");
    auto q = req.query.find("X-Amz-Date");
    if (q != req.query.end()) date = q->second;
    now = shoal::ParseAmzDate(date);
  }
  SigV4Check c = shoal::VerifySigV4(
      req, [](const std::string& access_key) { return access_key; }, now);
  if (c.outcome == SigV4Check::Outcome::kValid) {
    Check(!c.access_key.empty(), "a valid signature without an access key");
  } else if (c.outcome != SigV4Check::Outcome::kAnonymous) {
    Check(!c.message.empty(), "a refusal without a message");
  }
  return 0;
}
