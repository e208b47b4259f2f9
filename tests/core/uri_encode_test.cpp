#include "shoal/uri_encode.h"

#include <catch2/catch.hpp>

using namespace shoal;

TEST_CASE("key paths keep slashes and encode everything S3 does not leave alone", "[s3][uri]") {
  CHECK(UriEncodePath("chunks/abc-._~") == "chunks/abc-._~");
  CHECK(UriEncodePath("a b+c") == "a%20b%2Bc");
  CHECK(UriEncodePath("dir/x=1&y;z") == "dir/x%3D1%26y%3Bz");
  CHECK(UriEncodePath("caf\xC3\xA9/\xE2\x82\xAC") == "caf%C3%A9/%E2%82%AC");
  CHECK(UriEncodePath("100%") == "100%25");
  CHECK(UriEncodePath("a*b") == "a%2Ab");
}

TEST_CASE("query values encode slashes too", "[s3][uri]") {
  CHECK(UriEncodeQuery("a/b c+d=e") == "a%2Fb%20c%2Bd%3De");
  CHECK(UriEncodeQuery("") == "");
}

TEST_CASE("decoding reverses encoding and refuses broken escapes", "[s3][uri]") {
  const std::string awkward = "we ird/+key\xC3\xA9%~!*'()";
  auto back = UriDecode(UriEncodeQuery(awkward));
  REQUIRE(back.ok());
  CHECK(*back == awkward);
  CHECK(UriDecode("a+b").value() == "a+b");
  CHECK_FALSE(UriDecode("abc%2").ok());
  CHECK_FALSE(UriDecode("abc%zz").ok());
  CHECK_FALSE(UriDecode("%").ok());
}
