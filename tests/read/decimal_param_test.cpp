#include "read/decimal_param.h"

#include <catch2/catch.hpp>

#include "shoal/decimal.h"

using namespace shoal;

TEST_CASE("plain decimal digits are read as the number they spell", "[read][decimal]") {
  CHECK(*ParseDecimal("0") == 0u);
  CHECK(*ParseDecimal("604800") == 604800u);
  CHECK(*ParseDecimal("007") == 7u);
  CHECK(*ParseDecimal("18446744073709551615") == UINT64_MAX);
}

TEST_CASE("anything stoi or strtoul would bend into a number is refused", "[read][decimal]") {
  for (const char* bad :
       {"", " 12", "12 ", "+12", "-1", "12abc", "0x10", "1e3", "1.5", "１２",
        "18446744073709551616", "99999999999999999999", "000000000000000000001"}) {
    INFO(bad);
    CHECK_FALSE(ParseDecimal(bad).ok());
  }
}

TEST_CASE("a parameter outside its range is refused with its name and bounds", "[read][decimal]") {
  CHECK(*ParseDecimalParam("X-Amz-Expires", "604800", 1, 604800) == 604800u);

  Result<uint64_t> r = ParseDecimalParam("X-Amz-Expires", "604801", 1, 604800);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
  CHECK(r.status().message() == "X-Amz-Expires '604801' must be a whole number from 1 to 604800");

  r = ParseDecimalParam("max-keys", "-5", 0, 1000);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message() == "max-keys '-5' must be a whole number from 0 to 1000");

  r = ParseDecimalParam("partNumber", "0", 1, 10000);
  CHECK_FALSE(r.ok());
}

TEST_CASE("a refused parameter is quoted short and on one line", "[read][decimal]") {
  Result<uint64_t> r =
      ParseDecimalParam("max-keys", std::string(100, '9') + "\r\nX-Evil: 1", 0, 1000);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().message().find('\n') == std::string::npos);
  CHECK(r.status().message().size() < 100);
  CHECK(r.status().message().find("...'") != std::string::npos);
}
