#include "daemon/relay_host.h"

#include <catch2/catch.hpp>

using namespace shoal;

TEST_CASE("the announce relay listens where the engine's listen sockets can reach it", "[relay]") {
  // Every interface: the engine has a loopback socket too.
  CHECK(RelayHost("0.0.0.0:6881") == "127.0.0.1");
  CHECK(RelayHost("[::]:6881") == "127.0.0.1");
  CHECK(RelayHost(":6881") == "127.0.0.1");
  // One address: the relay shares it, since a socket bound there cannot
  // reach the loopback.
  CHECK(RelayHost("10.77.1.1:6881") == "10.77.1.1");
  CHECK(RelayHost("127.0.0.1:0") == "127.0.0.1");
  CHECK(RelayHost("[fd00::5]:6881") == "fd00::5");
}
