// HTTP's conditional GET and HEAD (RFC 9110 section 13) for one file of a
// version: If-Match, If-None-Match, If-Modified-Since and
// If-Unmodified-Since against its ETag and Last-Modified, evaluated in the
// RFC's order, which is also S3's: If-Match decides over
// If-Unmodified-Since, and If-None-Match over If-Modified-Since. Both read
// faces (plain and S3) answer through this one function.
#ifndef SHOAL_AGENT_READ_PRECONDITIONS_H_
#define SHOAL_AGENT_READ_PRECONDITIONS_H_

#include <cstdint>
#include <optional>
#include <string>

namespace shoal {

// The request's conditional headers, as sent; absent ones are nullopt.
struct Preconditions {
  std::optional<std::string> if_match, if_none_match, if_modified_since, if_unmodified_since;
};

enum class PreconditionOutcome {
  kProceed,      // answer as if there were no conditions
  kNotModified,  // 304, no body
  kFailed,       // 412 Precondition Failed
};

// `etag` is quoted, as sent in the ETag header; `last_modified_s` is the
// Last-Modified time in Unix seconds. ETag lists ("a", "b") and "*" are
// understood; weak validators never match (all of ours are strong). A date
// that cannot be read is ignored, as the RFC says.
PreconditionOutcome EvaluatePreconditions(const Preconditions& p, const std::string& etag,
                                          int64_t last_modified_s);

// Parses an HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT"); nullopt if it is
// not one.
std::optional<int64_t> ParseHttpDate(const std::string& text);

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_PRECONDITIONS_H_
