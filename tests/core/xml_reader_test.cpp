#include "origin/xml_reader.h"

#include <catch2/catch.hpp>

#include "origin/s3_error.h"
#include "origin/s3_list.h"
#include "origin/s3_multipart.h"

using namespace shoal;

TEST_CASE("the XML reader reads S3-shaped documents with entities", "[s3][xml]") {
  auto doc = ParseXml(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><Contents><Key>a&amp;b &lt;c&gt; &#233;&#x20AC;</Key></Contents>"
      "<Empty/><!-- note --><Data><![CDATA[<raw>]]></Data></ListBucketResult>");
  REQUIRE(doc.ok());
  CHECK(doc->name == "ListBucketResult");
  CHECK(doc->ChildText("Name") == "b");
  REQUIRE(doc->Child("Contents") != nullptr);
  CHECK(doc->Child("Contents")->ChildText("Key") == "a&b <c> \xC3\xA9\xE2\x82\xAC");
  CHECK(doc->Child("Empty") != nullptr);
  CHECK(doc->ChildText("Data") == "<raw>");
  CHECK(doc->ChildText("Missing").empty());
}

TEST_CASE("the XML reader refuses malformed documents", "[s3][xml]") {
  for (const char* bad :
       {"", "<a>", "<a></b>", "<a>&nbsp;</a>", "<a>&#0;</a>", "<a/><b/>", "<!DOCTYPE x><a/>",
        "<a><?pi?></a>", "<a b=c/>", "<a>&#xD800;</a>", "text", "<a><b></a></b>"}) {
    INFO(bad);
    auto r = ParseXml(bad);
    CHECK(r.status().IsCorruption());
  }
  std::string deep;
  for (int i = 0; i < 100; ++i) deep += "<a>";
  CHECK_FALSE(ParseXml(deep).ok());
}

TEST_CASE("ListObjectsV2 replies decode URL-encoded keys and strip the prefix", "[s3][xml]") {
  const std::string xml =
      "<ListBucketResult><Name>b</Name><Prefix>p%2F</Prefix><EncodingType>url</EncodingType>"
      "<IsTruncated>true</IsTruncated><NextContinuationToken>tok+/=</NextContinuationToken>"
      "<Contents><Key>p/a%20b%2Bc</Key><Size>12</Size><ETag>&quot;e1&quot;</ETag></Contents>"
      "<Contents><Key>p/caf%C3%A9</Key><Size>0</Size></Contents></ListBucketResult>";
  auto page = ParseListObjectsV2(xml, "p/");
  REQUIRE(page.ok());
  REQUIRE(page->objects.size() == 2);
  CHECK(page->objects[0].key == "a b+c");
  CHECK(page->objects[0].size == 12);
  CHECK(page->objects[0].etag == "\"e1\"");
  CHECK(page->objects[1].key == "caf\xC3\xA9");
  CHECK(page->next_token == "tok+/=");

  CHECK(
      ParseListObjectsV2("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>", "")
          .status()
          .IsCorruption());
  CHECK(ParseListObjectsV2("<ListBucketResult><Contents><Key>q/x</Key><Size>1</Size></Contents>"
                           "</ListBucketResult>",
                           "p/")
            .status()
            .IsCorruption());
  CHECK(ParseListObjectsV2("<ListBucketResult><Contents><Key>x</Key><Size>-1</Size></Contents>"
                           "</ListBucketResult>",
                           "")
            .status()
            .IsCorruption());
  // Past 2^64-1: refused, not read as the largest size.
  CHECK(ParseListObjectsV2("<ListBucketResult><Contents><Key>x</Key>"
                           "<Size>18446744073709551616</Size></Contents></ListBucketResult>",
                           "")
            .status()
            .IsCorruption());
  CHECK(ParseListObjectsV2("<Error/>", "").status().IsCorruption());
}

TEST_CASE("S3 errors become one-line statuses that say what to do", "[s3][xml]") {
  S3ErrorContext ctx{"GET", "s3://b/k", "b", "http://127.0.0.1:1", "AKID"};
  auto body = ParseS3Error(
      "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code><Message>m</Message>"
      "</Error>");
  Status s = S3ErrorToStatus(403, body, ctx);
  CHECK(s.code() == Status::Code::kPermissionDenied);
  CHECK(s.message().find("secret key") != std::string::npos);
  CHECK(S3ErrorToStatus(404, ParseS3Error("<Error><Code>NoSuchBucket</Code></Error>"), ctx)
            .message()
            .find("bucket 'b' does not exist") != std::string::npos);
  CHECK(S3ErrorToStatus(404, S3ErrorBody{}, ctx).IsNotFound());
  CHECK(S3ErrorToStatus(503, S3ErrorBody{}, ctx).code() == Status::Code::kUnavailable);
  CHECK(S3ErrorToStatus(416, S3ErrorBody{}, ctx).code() == Status::Code::kInvalidArgument);
  CHECK(S3ErrorToStatus(301, ParseS3Error("<Error><Code>PermanentRedirect</Code></Error>"), ctx)
            .message()
            .find("region") != std::string::npos);
  CHECK(ParseS3Error("not xml").code.empty());
}

TEST_CASE("CompleteMultipartUpload lists parts in order with escaped ETags", "[s3][xml]") {
  std::string xml = CompleteMultipartXml({"\"a\"", "\"b\""});
  CHECK(xml ==
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag>"
        "</Part><Part><PartNumber>2</PartNumber><ETag>&quot;b&quot;</ETag></Part>"
        "</CompleteMultipartUpload>");
  auto back = ParseXml(xml);
  REQUIRE(back.ok());
  CHECK(back->children.size() == 2);
  CHECK(back->children[1].ChildText("ETag") == "\"b\"");
}
