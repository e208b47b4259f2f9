#include "read/s3_xml.h"

#include <catch2/catch.hpp>

#include "origin/xml_reader.h"

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

TEST_CASE("a v1 ListBucketResult pages with Marker and NextMarker, URL-encoded on request",
          "[read][xml]") {
  std::vector<ObjectEntry> entries = {{"m/t/a b.bin", 5, "\"x\"", "2026-01-01T00:00:00.000Z"},
                                      {"m/t/d e/c.bin", 7, "\"y\"", "2026-01-01T00:00:00.000Z"},
                                      {"m/t/z.bin", 9, "\"z\"", "2026-01-01T00:00:00.000Z"}};
  ObjectListRequest r;
  r.prefix = "m/t/";
  r.delimiter = "/";
  r.start_after = "m/t/a b.bin";
  r.max_keys = 1;
  auto page = ListObjects(entries, r);
  REQUIRE(page.ok());
  auto doc = ParseXml(ListBucketResultXml("team-a", r, *page, true, ListVersion::kV1));
  REQUIRE(doc.ok());
  CHECK(doc->ChildText("Marker") == "m/t/a%20b.bin");
  CHECK(doc->ChildText("NextMarker") == "m/t/d%20e/");
  CHECK(doc->ChildText("IsTruncated") == "true");
  CHECK(doc->Child("KeyCount") == nullptr);
  CHECK(doc->Child("NextContinuationToken") == nullptr);
  CHECK(doc->Child("StartAfter") == nullptr);
  const XmlElement* cp = doc->Child("CommonPrefixes");
  REQUIRE(cp != nullptr);
  CHECK(cp->ChildText("Prefix") == "m/t/d%20e/");

  // Without a delimiter S3 gives no NextMarker: clients go on from the
  // last key.
  r.delimiter = "";
  page = ListObjects(entries, r);
  REQUIRE(page.ok());
  doc = ParseXml(ListBucketResultXml("team-a", r, *page, false, ListVersion::kV1));
  REQUIRE(doc.ok());
  CHECK(doc->ChildText("IsTruncated") == "true");
  CHECK(doc->Child("NextMarker") == nullptr);
  REQUIRE(doc->Child("Contents") != nullptr);
  CHECK(doc->Child("Contents")->ChildText("Key") == "m/t/d e/c.bin");
}

TEST_CASE("ListBuckets and GetBucketLocation answers parse back", "[read][xml]") {
  auto buckets =
      ParseXml(ListAllMyBucketsXml("pod <a>", {"team-a", "team-b"}, "1970-01-01T00:00:00.000Z"));
  REQUIRE(buckets.ok());
  CHECK(buckets->name == "ListAllMyBucketsResult");
  REQUIRE(buckets->Child("Owner") != nullptr);
  CHECK(buckets->Child("Owner")->ChildText("DisplayName") == "pod <a>");
  const XmlElement* list = buckets->Child("Buckets");
  REQUIRE(list != nullptr);
  REQUIRE(list->children.size() == 2);
  CHECK(list->children[1].ChildText("Name") == "team-b");
  CHECK(list->children[1].ChildText("CreationDate") == "1970-01-01T00:00:00.000Z");

  auto location = ParseXml(LocationConstraintXml(""));
  REQUIRE(location.ok());
  CHECK(location->name == "LocationConstraint");
  CHECK(location->text.empty());
}
