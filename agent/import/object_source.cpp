// Files from a bucket (s3://bucket/prefix, on any S3-compatible endpoint)
// or a folder (file:///path), through the Origin client: signed requests,
// retries and ranged GETs that resume where they broke.
#include <memory>

#include "import/import_source.h"
#include "shoal/origin.h"

namespace shoal {
namespace {

// Keys per List call: the S3 maximum.
constexpr uint32_t kListPage = 1000;

// The MD5 an S3 ETag stands for: a single-part upload's ETag is the hex
// MD5 of the object; a multipart one ("<hex>-<parts>") and a folder's are
// not, and give "".
std::string Md5OfEtag(std::string etag) {
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') {
    etag = etag.substr(1, etag.size() - 2);
  }
  if (etag.size() != 32 || etag.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return "";
  }
  return etag;
}

class ObjectSource : public ImportSource {
 public:
  ObjectSource(std::string url, std::unique_ptr<Origin> origin)
      : url_(std::move(url)), origin_(std::move(origin)) {}

  Result<SourceListing> List() override {
    SourceListing out;
    out.provenance.url = url_;
    std::string token;
    do {
      Result<ListPage> page = origin_->List("", token, kListPage);
      if (!page.ok()) return page.status().WithContext("list " + url_);
      for (ObjectInfo& o : page->objects) {
        // Folder markers that some tools write are not files.
        if (!o.key.empty() && o.key.back() == '/' && o.size == 0) continue;
        SourceFile f;
        f.path = o.key;
        f.locator = o.key;
        f.size = o.size;
        f.etag = o.etag;
        f.md5_hex = Md5OfEtag(o.etag);
        out.files.push_back(std::move(f));
      }
      token = page->next_token;
    } while (!token.empty());
    return out;
  }

  Status Read(const SourceFile& file, uint64_t offset, uint64_t length, ByteSink& sink) override {
    if (length == 0) return Status::OK();
    return origin_->Get(file.locator, file.base + offset, length, sink);
  }

  std::string Describe() const override { return url_; }

 private:
  const std::string url_;
  const std::unique_ptr<Origin> origin_;
};

}  // namespace

std::unique_ptr<ImportSource> MakeObjectSource(std::string url, std::unique_ptr<Origin> origin) {
  return std::make_unique<ObjectSource>(std::move(url), std::move(origin));
}

}  // namespace shoal
