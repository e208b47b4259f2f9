#include "read/byte_range.h"

#include <catch2/catch.hpp>

using namespace shoal;
using Kind = RangeAnswer::Kind;

TEST_CASE("a single byte range is honoured and clamped to the end", "[read][range]") {
  RangeAnswer a = AnswerRange("bytes=0-99", 1000);
  REQUIRE(a.kind == Kind::kPartial);
  CHECK(a.range.first == 0);
  CHECK(a.range.last == 99);
  CHECK(a.range.length() == 100);

  a = AnswerRange("bytes=900-5000", 1000);
  REQUIRE(a.kind == Kind::kPartial);
  CHECK(a.range.last == 999);

  a = AnswerRange("bytes=10-", 1000);
  REQUIRE(a.kind == Kind::kPartial);
  CHECK(a.range.first == 10);
  CHECK(a.range.last == 999);

  a = AnswerRange("BYTES = 5-5", 1000);
  REQUIRE(a.kind == Kind::kPartial);
  CHECK(a.range.length() == 1);
}

TEST_CASE("a suffix range is the last n bytes, or everything if n is larger", "[read][range]") {
  RangeAnswer a = AnswerRange("bytes=-100", 1000);
  REQUIRE(a.kind == Kind::kPartial);
  CHECK(a.range.first == 900);
  CHECK(a.range.last == 999);
  a = AnswerRange("bytes=-5000", 1000);
  REQUIRE(a.kind == Kind::kPartial);
  CHECK(a.range.first == 0);
}

TEST_CASE("ranges past the end, empty suffixes and ranges of empty files are unsatisfiable",
          "[read][range]") {
  CHECK(AnswerRange("bytes=1000-", 1000).kind == Kind::kUnsatisfiable);
  CHECK(AnswerRange("bytes=1000-2000", 1000).kind == Kind::kUnsatisfiable);
  CHECK(AnswerRange("bytes=-0", 1000).kind == Kind::kUnsatisfiable);
  CHECK(AnswerRange("bytes=0-", 0).kind == Kind::kUnsatisfiable);
  CHECK(AnswerRange("bytes=-1", 0).kind == Kind::kUnsatisfiable);
}

TEST_CASE("malformed, multiple or foreign-unit ranges are ignored", "[read][range]") {
  CHECK(AnswerRange(std::nullopt, 1000).kind == Kind::kWhole);
  CHECK(AnswerRange("bytes=0-1,5-6", 1000).kind == Kind::kWhole);
  CHECK(AnswerRange("items=0-1", 1000).kind == Kind::kWhole);
  CHECK(AnswerRange("bytes=9-3", 1000).kind == Kind::kWhole);
  CHECK(AnswerRange("bytes=a-3", 1000).kind == Kind::kWhole);
  CHECK(AnswerRange("bytes=-", 1000).kind == Kind::kWhole);
  CHECK(AnswerRange("bytes=99999999999999999999-", 1000).kind == Kind::kWhole);
  CHECK(AnswerRange("bytes 0-1", 1000).kind == Kind::kWhole);
}

TEST_CASE("Content-Range reads first-last/size", "[read][range]") {
  CHECK(ContentRange(ByteRange{0, 99}, 1000) == "bytes 0-99/1000");
}
