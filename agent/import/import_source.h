// ImportSource: a model where it lives (a hub, a bucket, web servers), as a
// list of files that can be read in byte ranges.
//
// `shoal import` lists a source once, then reads every file once through
// it, in parallel ranges where the source allows. A source records what it
// read (its provenance) so the version can say where it came from.
//
// Thread-safety: Read may be called from many threads at once; List once,
// before any Read.
#ifndef SHOAL_AGENT_IMPORT_IMPORT_SOURCE_H_
#define SHOAL_AGENT_IMPORT_IMPORT_SOURCE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "import/web_client.h"
#include "shoal/byte_stream.h"
#include "shoal/hash256.h"
#include "shoal/manifest.h"
#include "shoal/origin_options.h"
#include "shoal/status.h"

namespace shoal {

// One file a source offers. Its path is the source's word: the importer
// checks it (no '..', nothing absolute) before using it.
struct SourceFile {
  std::string path;
  uint64_t size = 0;
  bool size_known = true;
  bool ranges = true;            // can be read in byte ranges
  std::string etag;              // the source's ETag or hash: provenance, and resume's key
  std::optional<Digest> sha256;  // declared by the source; the bytes are checked against it
  std::string md5_hex;           // likewise: an S3 ETag of a single-part upload is the MD5
  std::string locator;           // how the source finds it again (a URL, a key)
  uint64_t base = 0;             // where the file starts in that object (a tar member)
};

struct SourceListing {
  ManifestSource provenance;
  std::vector<SourceFile> files;
};

class ImportSource {
 public:
  virtual ~ImportSource() = default;
  // Every file, with what the source declares of it.
  virtual Result<SourceListing> List() = 0;
  // Streams bytes [offset, offset + length) of `file` into `sink`, in order;
  // `length` UINT64_MAX reads to the end. Stops with the sink's error.
  virtual Status Read(const SourceFile& file, uint64_t offset, uint64_t length, ByteSink& sink) = 0;
  // "hf://org/repo@main", "s3://bucket/prefix", "3 URLs", for messages.
  virtual std::string Describe() const = 0;
};

struct ImportSourceOptions {
  // s3:// (and file://) sources: endpoint, region, credentials, profile.
  // The url field is ignored; the source's own URL is used.
  OriginOptions s3;
  // oci:// sources: credentials for the registry (basic auth, or to get a
  // token), and whether it speaks plain HTTP (a registry on localhost).
  std::string oci_username, oci_password;
  bool oci_plain_http = false;
  // hf:// sources: the hub and its token.
  std::string hf_endpoint = "https://huggingface.co";
  std::string hf_token;
  // http(s) sources: more URLs, each "URL [path]", beside the one given.
  std::vector<std::string> url_list;
  WebClientOptions web;
};

// Opens the source that `url` names: hf://org/repo[@revision],
// oci://registry/repo[:tag|@digest], s3://bucket/prefix, file:///folder,
// or http(s)://... (with
// options.url_list, the first of several).
Result<std::unique_ptr<ImportSource>> OpenImportSource(const std::string& url,
                                                       const ImportSourceOptions& options);

// Reads "URL [path]" lines (blank lines and '#' comments skipped).
Result<std::vector<std::string>> ReadUrlList(const std::string& file);

// The sources, each in its own file.
std::unique_ptr<ImportSource> MakeObjectSource(std::string url,
                                               std::unique_ptr<class Origin> origin);
Result<std::unique_ptr<ImportSource>> MakeHubSource(const std::string& url,
                                                    const ImportSourceOptions& options);
Result<std::unique_ptr<ImportSource>> MakeOciSource(const std::string& url,
                                                    const ImportSourceOptions& options);
Result<std::unique_ptr<ImportSource>> MakeUrlSource(std::vector<std::string> lines,
                                                    const ImportSourceOptions& options);

}  // namespace shoal

#endif  // SHOAL_AGENT_IMPORT_IMPORT_SOURCE_H_
