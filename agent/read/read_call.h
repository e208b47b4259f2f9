// ReadCall: one read request in flight, from its arrival to its answer.
// What the request said is copied here, since an answer may come after the
// request object is gone. Private to the read service.
#ifndef SHOAL_AGENT_READ_READ_CALL_H_
#define SHOAL_AGENT_READ_READ_CALL_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "read/preconditions.h"
#include "shoal/server/http_server.h"
#include "shoal/server/metrics.h"

namespace shoal {

enum class ReadApi { kPlain = 0, kS3 = 1, kHub = 2 };
constexpr int kReadApis = 3;

// "plain", "s3" or "hub", the api label of the read metrics.
const char* ReadApiName(ReadApi api);

struct ReadCall {
  ReadApi api = ReadApi::kPlain;
  std::string method;    // GET or HEAD (others are refused)
  std::string resource;  // the decoded path, for S3 error bodies
  std::optional<std::string> range, if_range;
  Preconditions conditions;  // If-Match, If-None-Match, If-(Un)Modified-Since
  // Set over a file answer's own headers: S3's response-content-type and
  // the other response-* overrides of GetObject.
  std::vector<std::pair<std::string, std::string>> reply_headers;
  // When set, a file answer's ETag instead of the version-scoped one (the
  // hub face's content ETags).
  std::string etag;
  std::map<std::string, std::string> query;
  std::string token;  // whose read this is, once known
  // Counts this read against its token's limit; held by the answer's body
  // until it is sent (see ReadSlots).
  std::shared_ptr<const void> slot;
  std::string request_id;  // x-amz-request-id
  std::chrono::steady_clock::time_point start;
  HttpResponder respond;
  MetricsRegistry* metrics = nullptr;
  Histogram* ttfb = nullptr;

  // Sends the answer and counts it by API and status. Without a body to
  // wait for, the first byte is now.
  void Finish(HttpResponse response);
};

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_READ_CALL_H_
