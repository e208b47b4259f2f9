// S3 replies as the origin client reads them (core/origin/): the strict
// XML reader (xml_reader.h) and what reads its tree, ListObjectsV2 pages
// (s3_list.h) and error bodies (s3_error.h). The first byte picks the
// reader: 0 the bare XML tree, 1 a listing with no origin prefix, 2 a
// listing under the prefix "models/", 3 an error body for a status the
// second byte picks. A listing's sizes must be the numbers the reply wrote.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz/fuzz_check.h"
#include "origin/s3_error.h"
#include "origin/s3_list.h"
#include "origin/xml_reader.h"

namespace {

using shoal::fuzz::Check;

// Walks the tree as the readers do; returns its depth, which the reader
// bounds (it recurses per element).
size_t Depth(const shoal::XmlElement& e) {
  size_t deepest = 0;
  for (const shoal::XmlElement& c : e.children) deepest = std::max(deepest, Depth(c));
  (void)e.ChildText("Key");
  return deepest + 1;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t reader = data[0] % 4;
  const int status = 400 + data[1] % 200;
  const std::string body(reinterpret_cast<const char*>(data + 2), size - 2);
  if (reader == 0) {
    shoal::Result<shoal::XmlElement> doc = shoal::ParseXml(body);
    if (doc.ok()) Check(Depth(*doc) <= 33, "a tree deeper than the reader's limit");
  } else if (reader == 1 || reader == 2) {
    const std::string prefix = reader == 1 ? "" : "models/";
    shoal::Result<shoal::ListPage> page = shoal::ParseListObjectsV2(body, prefix);
    if (!page.ok()) return 0;
    // Each entry's size is the number its <Size> wrote, never a saturated
    // or wrapped one.
    shoal::Result<shoal::XmlElement> doc = shoal::ParseXml(body);
    Check(doc.ok(), "a listing read from XML the reader refuses");
    size_t i = 0;
    for (const shoal::XmlElement& c : doc->children) {
      if (c.name != "Contents") continue;
      Check(i < page->objects.size(), "fewer objects than <Contents>");
      std::string text = c.ChildText("Size");
      text.erase(0, std::min(text.find_first_not_of('0'), text.size() - 1));
      Check(std::to_string(page->objects[i].size) == text,
            "an object size that is not the reply's");
      ++i;
    }
    Check(i == page->objects.size(), "more objects than <Contents>");
  } else {
    shoal::S3ErrorBody e = shoal::ParseS3Error(body);
    shoal::S3ErrorContext ctx{"GET", "s3://bucket/models/a", "bucket", "http://127.0.0.1:7480",
                              "AKIA"};
    shoal::Status s = shoal::S3ErrorToStatus(status, e, ctx);
    Check(!s.ok() && !s.message().empty(), "an S3 error that reads as success");
  }
  return 0;
}
