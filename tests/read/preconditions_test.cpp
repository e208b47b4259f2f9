#include "read/preconditions.h"

#include <catch2/catch.hpp>

using namespace shoal;

namespace {

const std::string kETag = "\"abc\"";
// Sun, 06 Nov 1994 08:49:37 GMT
constexpr int64_t kModified = 784111777;

Preconditions With(std::optional<std::string> if_match, std::optional<std::string> if_none_match,
                   std::optional<std::string> modified_since,
                   std::optional<std::string> unmodified_since) {
  return Preconditions{std::move(if_match), std::move(if_none_match), std::move(modified_since),
                       std::move(unmodified_since)};
}

}  // namespace

TEST_CASE("HTTP dates parse to Unix seconds and nothing else does", "[read][conditions]") {
  CHECK(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT") == kModified);
  CHECK(!ParseHttpDate("Sunday, 06-Nov-94 08:49:37").has_value());
  CHECK(!ParseHttpDate("yesterday").has_value());
  CHECK(!ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT junk").has_value());
}

TEST_CASE("If-Match and If-Unmodified-Since fail with 412 unless they hold", "[read][conditions]") {
  auto eval = [](Preconditions p) { return EvaluatePreconditions(p, kETag, kModified); };
  CHECK(eval({}) == PreconditionOutcome::kProceed);
  CHECK(eval(With(kETag, {}, {}, {})) == PreconditionOutcome::kProceed);
  CHECK(eval(With("\"x\", \"abc\"", {}, {}, {})) == PreconditionOutcome::kProceed);
  CHECK(eval(With("*", {}, {}, {})) == PreconditionOutcome::kProceed);
  CHECK(eval(With("\"x\"", {}, {}, {})) == PreconditionOutcome::kFailed);
  CHECK(eval(With("W/\"abc\"", {}, {}, {})) == PreconditionOutcome::kFailed);
  CHECK(eval(With({}, {}, {}, "Sun, 06 Nov 1994 08:49:37 GMT")) == PreconditionOutcome::kProceed);
  CHECK(eval(With({}, {}, {}, "Sun, 06 Nov 1994 08:49:36 GMT")) == PreconditionOutcome::kFailed);
  CHECK(eval(With({}, {}, {}, "not a date")) == PreconditionOutcome::kProceed);
  // As on S3: a matching If-Match decides over If-Unmodified-Since.
  CHECK(eval(With(kETag, {}, {}, "Sun, 06 Nov 1994 08:49:36 GMT")) ==
        PreconditionOutcome::kProceed);
}

TEST_CASE("If-None-Match and If-Modified-Since answer 304 when the reader has the file",
          "[read][conditions]") {
  auto eval = [](Preconditions p) { return EvaluatePreconditions(p, kETag, kModified); };
  CHECK(eval(With({}, kETag, {}, {})) == PreconditionOutcome::kNotModified);
  CHECK(eval(With({}, "*", {}, {})) == PreconditionOutcome::kNotModified);
  CHECK(eval(With({}, "\"old\"", {}, {})) == PreconditionOutcome::kProceed);
  CHECK(eval(With({}, {}, "Sun, 06 Nov 1994 08:49:37 GMT", {})) ==
        PreconditionOutcome::kNotModified);
  CHECK(eval(With({}, {}, "Sun, 06 Nov 1994 08:49:36 GMT", {})) == PreconditionOutcome::kProceed);
  // As on S3: a failing If-None-Match decides over If-Modified-Since.
  CHECK(eval(With({}, "\"old\"", "Sun, 06 Nov 1994 08:49:37 GMT", {})) ==
        PreconditionOutcome::kProceed);
  // A failed If-Match is 412 even when If-None-Match would say 304.
  CHECK(eval(With("\"x\"", kETag, {}, {})) == PreconditionOutcome::kFailed);
}
