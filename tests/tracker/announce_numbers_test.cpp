#include "swarm/announce_numbers.h"

#include <catch2/catch.hpp>

using namespace shoal::tracker;

TEST_CASE("announce numbers parse what a BitTorrent client sends", "[announce]") {
  auto n = ParseAnnounceNumbers({{"port", "6881"},
                                 {"numwant", "200"},
                                 {"left", "0"},
                                 {"uploaded", "12"},
                                 {"downloaded", "18446744073709551615"}});
  REQUIRE(n.ok());
  CHECK(n->port == 6881);
  CHECK(n->numwant == 200);
  CHECK(n->left == 0);
  CHECK(n->downloaded == UINT64_MAX);
  auto defaults = ParseAnnounceNumbers({{"port", "1"}});
  REQUIRE(defaults.ok());
  CHECK(defaults->numwant == 50);
  CHECK(defaults->left != 0);  // absent left is not a seeder
}

TEST_CASE("announce numbers refuse wrapped, signed and out-of-range values by name", "[announce]") {
  auto wrapped = ParseAnnounceNumbers({{"port", "-18446744073709550617"}});
  CHECK_THAT(wrapped.status().message(),
             Catch::StartsWith("port: must be a whole number from 1 to 65535"));
  CHECK_THAT(ParseAnnounceNumbers({}).status().message(), Catch::StartsWith("port: missing"));
  CHECK_THAT(ParseAnnounceNumbers({{"port", "0"}}).status().message(), Catch::StartsWith("port:"));
  CHECK_THAT(ParseAnnounceNumbers({{"port", "80"}, {"numwant", "-1"}}).status().message(),
             Catch::StartsWith("numwant:"));
  CHECK_THAT(ParseAnnounceNumbers({{"port", "80"}, {"left", "1e9"}}).status().message(),
             Catch::StartsWith("left:"));
  CHECK_THAT(ParseAnnounceNumbers({{"port", "80"}, {"uploaded", " 5"}}).status().message(),
             Catch::StartsWith("uploaded:"));
  CHECK_THAT(ParseAnnounceNumbers({{"port", "80"}, {"downloaded", "18446744073709551616"}})
                 .status()
                 .message(),
             Catch::StartsWith("downloaded:"));
}
