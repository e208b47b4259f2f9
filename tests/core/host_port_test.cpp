#include "shoal/host_port.h"

#include <catch2/catch.hpp>

using shoal::SplitHostPort;

TEST_CASE("host:port splits, brackets and port 0 included", "[host_port]") {
  std::string host;
  uint16_t port = 1;
  REQUIRE(SplitHostPort("[::1]:7401", &host, &port).ok());
  CHECK(host == "::1");
  CHECK(port == 7401);
  REQUIRE(SplitHostPort("0.0.0.0:0", &host, &port).ok());
  CHECK(port == 0);
}

TEST_CASE("host:port refuses a port that is not plain digits in range", "[host_port]") {
  std::string host;
  uint16_t port = 0;
  CHECK_FALSE(SplitHostPort("127.0.0.1:-1", &host, &port).ok());
  CHECK_FALSE(SplitHostPort("127.0.0.1:+80", &host, &port).ok());
  CHECK_FALSE(SplitHostPort("127.0.0.1: 80", &host, &port).ok());
  CHECK_FALSE(SplitHostPort("127.0.0.1:65536", &host, &port).ok());
  CHECK_THAT(SplitHostPort("127.0.0.1:-18446744073709550617", &host, &port).ToString(),
             Catch::Contains("bad port"));
}
