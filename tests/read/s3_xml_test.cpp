#include "read/s3_xml.h"

#include <catch2/catch.hpp>

#include "xml_reader.h"

using namespace shoal;

TEST_CASE("S3 error bodies parse back with their code and escaped message", "[read][xml]") {
  std::string xml = S3ErrorXml("NoSuchKey", "no key 'a<b>&c'", "/b/k", "0001");
  auto doc = ParseXml(xml);
  REQUIRE(doc.ok());
  CHECK(doc->name == "Error");
  CHECK(doc->ChildText("Code") == "NoSuchKey");
  CHECK(doc->ChildText("Message") == "no key 'a<b>&c'");
  CHECK(doc->ChildText("Resource") == "/b/k");
}

TEST_CASE("a ListBucketResult carries contents, prefixes and paging, URL-encoded on request",
          "[read][xml]") {
  std::vector<ObjectEntry> entries = {{"m/t/a b.bin", 5, "\"x\"", "2026-01-01T00:00:00.000Z"},
                                      {"m/t/d/c.bin", 7, "\"y\"", "2026-01-01T00:00:00.000Z"}};
  ObjectListRequest r;
  r.prefix = "m/t/";
  r.delimiter = "/";
  r.max_keys = 1;
  auto page = ListObjects(entries, r);
  REQUIRE(page.ok());
  auto doc = ParseXml(ListBucketResultXml("team-a", r, *page, /*url_encoding=*/true));
  REQUIRE(doc.ok());
  CHECK(doc->ChildText("Name") == "team-a");
  CHECK(doc->ChildText("IsTruncated") == "true");
  CHECK(doc->ChildText("KeyCount") == "1");
  CHECK(!doc->ChildText("NextContinuationToken").empty());
  CHECK(doc->ChildText("EncodingType") == "url");
  const XmlElement* c = doc->Child("Contents");
  REQUIRE(c != nullptr);
  CHECK(c->ChildText("Key") == "m/t/a%20b.bin");
  CHECK(c->ChildText("Size") == "5");
  CHECK(c->ChildText("ETag") == "\"x\"");
}
