#include "shoal/decimal.h"

#include <catch2/catch.hpp>

using shoal::ParseDecimal;

TEST_CASE("decimals parse digits only, within their range", "[decimal]") {
  CHECK(*ParseDecimal("0") == 0);
  CHECK(*ParseDecimal("6881", 1, 65535) == 6881);
  CHECK(*ParseDecimal("007") == 7);
  CHECK(*ParseDecimal("65535", 1, 65535) == 65535);
  CHECK(*ParseDecimal("18446744073709551615") == UINT64_MAX);
}

TEST_CASE("decimals refuse what strtoul would quietly accept", "[decimal]") {
  // strtoul wraps a negative number: this one becomes 999.
  CHECK_FALSE(ParseDecimal("-18446744073709550617", 1, 65535).ok());
  CHECK_FALSE(ParseDecimal("-1").ok());
  CHECK_FALSE(ParseDecimal("+80").ok());
  CHECK_FALSE(ParseDecimal(" 80").ok());
  CHECK_FALSE(ParseDecimal("80 ").ok());
  CHECK_FALSE(ParseDecimal("80abc").ok());
  CHECK_FALSE(ParseDecimal("0x50").ok());
  CHECK_FALSE(ParseDecimal("").ok());
  CHECK_FALSE(ParseDecimal(std::string_view("8\0"
                                            "0",
                                            3))
                  .ok());
}

TEST_CASE("decimals outside the range are refused, overflow included", "[decimal]") {
  CHECK_FALSE(ParseDecimal("0", 1, 65535).ok());
  CHECK_FALSE(ParseDecimal("65536", 1, 65535).ok());
  CHECK_FALSE(ParseDecimal("18446744073709551616").ok());  // 2^64
  CHECK_FALSE(ParseDecimal("99999999999999999999999999").ok());
  CHECK_FALSE(ParseDecimal("4294967296", 0, UINT32_MAX).ok());
}

TEST_CASE("a refused decimal names the range and shows the text safely", "[decimal]") {
  std::string message = ParseDecimal("-5", 1, 65535).status().ToString();
  CHECK_THAT(message, Catch::Contains("whole number from 1 to 65535, not '-5'"));
  std::string binary = ParseDecimal(std::string("1\x01\xff", 3)).status().message();
  CHECK_THAT(binary, Catch::Contains("not '1?\?'"));
  std::string long_text = ParseDecimal(std::string(500, 'x')).status().message();
  CHECK(long_text.size() < 120);
}
