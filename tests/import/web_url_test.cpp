// The web client's URL rules: what an import may be sent to.
#include <catch2/catch.hpp>

#include "import/web_client.h"

using namespace shoal;

TEST_CASE("URLs and redirect targets are http or https only", "[web]") {
  auto u = ParseWebUrl("https://hub.example:8443/org/repo/resolve/main/a%20b.bin?x=1#frag");
  REQUIRE(u.ok());
  CHECK(u->endpoint.tls);
  CHECK(u->endpoint.host == "hub.example");
  CHECK(u->endpoint.port == 8443);
  CHECK(u->target == "/org/repo/resolve/main/a%20b.bin?x=1");
  CHECK(ParseWebUrl("http://h").value().target == "/");
  CHECK(!ParseWebUrl("ftp://h/x").ok());
  CHECK(!ParseWebUrl("file:///etc/passwd").ok());
  CHECK(!ParseWebUrl("http://user:pw@h/x").ok());
  CHECK(!ParseWebUrl("h/x").ok());

  const WebUrl base = ParseWebUrl("https://hub/org/repo/resolve/main/f.bin").value();
  CHECK(ResolveLocation(base, "/cdn/abc").value().ToString() == "https://hub/cdn/abc");
  CHECK(ResolveLocation(base, "//cdn.example/abc").value().endpoint.host == "cdn.example");
  CHECK(ResolveLocation(base, "g.bin").value().target == "/org/repo/resolve/main/g.bin");
  CHECK(ResolveLocation(base, "http://other:9000/x").value().endpoint.port == 9000);
  auto ftp = ResolveLocation(base, "ftp://evil/x");
  REQUIRE(!ftp.ok());
  CHECK_THAT(ftp.status().ToString(), Catch::Contains("only http and https"));
  CHECK(!ResolveLocation(base, "").ok());
}
