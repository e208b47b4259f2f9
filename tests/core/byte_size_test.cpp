#include "shoal/byte_size.h"

#include <catch2/catch.hpp>

TEST_CASE("byte sizes parse with binary and decimal units", "[byte_size]") {
  CHECK(*shoal::ParseByteSize("200GiB") == 200ull << 30);
  CHECK(*shoal::ParseByteSize("64MiB") == 64ull << 20);
  CHECK(*shoal::ParseByteSize("10GB") == 10000000000ull);
  CHECK(*shoal::ParseByteSize("4096") == 4096);
  CHECK_FALSE(shoal::ParseByteSize("12 GiB").ok());
  CHECK_FALSE(shoal::ParseByteSize("GiB").ok());
  CHECK_FALSE(shoal::ParseByteSize("99999999999TiB").ok());
  CHECK_THAT(shoal::ParseByteSize("1XB").status().ToString(), Catch::Contains("must be a number"));
}
