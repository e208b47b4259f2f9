// The S3 face of ReadService: GetObject, HeadObject, ListObjects (v1 and
// v2), HeadBucket, GetBucketLocation and ListBuckets, path-style or
// virtual-host-style, signed with SigV4 by a read token.
#include <algorithm>
#include <ctime>

#include "read/decimal_param.h"
#include "read/read_service.h"
#include "read/s3_xml.h"
#include "read/sigv4_verifier.h"
#include "shoal/manifest.h"

namespace shoal {

namespace {

// Every bucket's CreationDate in ListBuckets: namespaces have no creation
// time of their own, so this is fixed at the Unix epoch.
constexpr char kBucketCreationDate[] = "1970-01-01T00:00:00.000Z";

constexpr char kServed[] =
    "GetObject, HeadObject, ListObjects (v1 and v2), HeadBucket, GetBucketLocation and "
    "ListBuckets";

// Bucket sub-resources this read-only endpoint does not serve: a GET with
// one of them is not a listing.
constexpr const char* kUnservedSubresources[] = {"accelerate",
                                                 "acl",
                                                 "analytics",
                                                 "cors",
                                                 "delete",
                                                 "encryption",
                                                 "intelligent-tiering",
                                                 "inventory",
                                                 "lifecycle",
                                                 "logging",
                                                 "metrics",
                                                 "notification",
                                                 "object-lock",
                                                 "ownershipControls",
                                                 "policy",
                                                 "policyStatus",
                                                 "publicAccessBlock",
                                                 "replication",
                                                 "requestPayment",
                                                 "tagging",
                                                 "uploads",
                                                 "versioning",
                                                 "versions",
                                                 "website"};

// GetObject's response-* parameters and the header each one sets.
constexpr std::pair<const char*, const char*> kResponseOverrides[] = {
    {"response-content-type", "Content-Type"},
    {"response-content-disposition", "Content-Disposition"},
    {"response-content-encoding", "Content-Encoding"},
    {"response-content-language", "Content-Language"},
    {"response-cache-control", "Cache-Control"},
    {"response-expires", "Expires"}};

const std::string* QueryValue(const std::map<std::string, std::string>& query,
                              const std::string& name) {
  auto it = query.find(name);
  return it == query.end() ? nullptr : &it->second;
}

// Reads a ListObjects request (v2 with list-type=2, else v1) into `out`;
// the error if its parameters are bad or name a sub-resource.
std::optional<ReadError> ReadListing(const std::map<std::string, std::string>& query,
                                     S3Listing* out) {
  for (const char* sub : kUnservedSubresources) {
    if (query.count(sub) != 0) {
      return ReadError{ReadFailure::kNotImplemented, std::string("bucket sub-resource '?") + sub +
                                                         "' is not served; this endpoint serves " +
                                                         kServed};
    }
  }
  auto get = [&](const char* name) {
    const std::string* v = QueryValue(query, name);
    return v ? *v : std::string();
  };
  const std::string* list_type = QueryValue(query, "list-type");
  if (list_type != nullptr && *list_type != "2") {
    return ReadError{ReadFailure::kBadRequest,
                     "list-type '" + list_type->substr(0, 20) +
                         "' is not one S3 defines; send list-type=2 (ListObjectsV2) or none (v1)"};
  }
  out->version = list_type != nullptr ? ListVersion::kV2 : ListVersion::kV1;
  ObjectListRequest& lr = out->request;
  lr.prefix = get("prefix");
  lr.delimiter = get("delimiter");
  if (out->version == ListVersion::kV2) {
    lr.start_after = get("start-after");
    lr.continuation = get("continuation-token");
  } else {
    lr.start_after = get("marker");  // v1's marker is v2's start-after
  }
  Result<int> max_keys = ParseMaxKeys(QueryValue(query, "max-keys"));
  if (!max_keys.ok()) return ReadError{ReadFailure::kBadRequest, max_keys.status().message()};
  lr.max_keys = *max_keys;
  const std::string encoding = get("encoding-type");
  if (!encoding.empty() && encoding != "url") {
    return ReadError{ReadFailure::kBadRequest,
                     "encoding-type '" + encoding.substr(0, 20) +
                         "' is not served; send encoding-type=url or none"};
  }
  out->url = encoding == "url";
  return std::nullopt;
}

}  // namespace

void ReadService::ServeS3(const HttpRequest& request, HttpResponder respond) {
  std::shared_ptr<ReadCall> call = Begin(ReadApi::kS3, request, std::move(respond));
  if (stopped_) return Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
  if (call->method != "GET" && call->method != "HEAD") {
    return Fail(call, {ReadFailure::kNotImplemented,
                       std::string("this endpoint is read-only: ") + kServed});
  }
  Result<S3Path> path = ParseS3Target(request.headers.Get("Host").value_or(""), request.path,
                                      options_.s3_virtual_host_suffixes);
  if (!path.ok()) return Fail(call, {ReadFailure::kBadRequest, path.status().message()});
  // The secret key is the token itself: a pod configures its read token as
  // both access key ID and secret, and the tracker then checks the token.
  SigV4Check auth = VerifySigV4(
      request, [](const std::string& access_key) { return access_key; }, std::time(nullptr));
  switch (auth.outcome) {
    case SigV4Check::Outcome::kValid:
      call->token = auth.access_key;
      break;
    case SigV4Check::Outcome::kAnonymous:
      call->token = AnonymousToken(request);
      if (call->token.empty()) {
        return Fail(
            call,
            {ReadFailure::kNoCredentials,
             "anonymous access is off; sign with a read token as access key ID and secret key"});
      }
      break;
    case SigV4Check::Outcome::kMalformed:
      return Fail(call, {ReadFailure::kBadAuthorization, auth.message});
    case SigV4Check::Outcome::kBadQuery:
      return Fail(call, {ReadFailure::kBadPresignedQuery, auth.message});
    case SigV4Check::Outcome::kMismatch:
      return Fail(call, {ReadFailure::kSignatureMismatch, auth.message});
    case SigV4Check::Outcome::kExpired:
      return Fail(call, {ReadFailure::kRequestExpired, auth.message});
  }
  if (!NotRevoked(call)) return;
  if (!TakeSlot(call)) return;
  if (path->bucket.empty()) return ServeS3Buckets(call);
  if (!ValidateName("bucket", path->bucket).ok()) {
    return Fail(
        call, {ReadFailure::kNoSuchBucket, "bucket '" + path->bucket.substr(0, 100) +
                                               "' is not a namespace name, so it does not exist"});
  }
  if (!path->key.empty()) return ServeS3Object(call, path->bucket, path->key);
  ServeS3Bucket(call, path->bucket);
}

void ReadService::ServeS3Bucket(std::shared_ptr<ReadCall> call, const std::string& bucket) {
  if (call->query.count("location") != 0) {
    // The endpoint has no region of its own: SigV4 accepts any, so the
    // answer is S3's empty constraint (us-east-1).
    return ServeS3BucketAccess(call, bucket, [] {
      HttpResponse r;
      r.headers.Set("Content-Type", "application/xml");
      r.body = LocationConstraintXml("");
      return r;
    });
  }
  if (call->method == "HEAD") {  // HeadBucket: every readable namespace name is a bucket
    return ServeS3BucketAccess(call, bucket, [] { return HttpResponse(); });
  }
  S3Listing listing;
  if (std::optional<ReadError> e = ReadListing(call->query, &listing)) return Fail(call, *e);
  ServeS3List(call, bucket, listing);
}

void ReadService::ServeS3BucketAccess(std::shared_ptr<ReadCall> call, const std::string& bucket,
                                      std::function<HttpResponse()> ok) {
  bool queued = workers_.Post([this, call, bucket, ok] {
    ScopeResolution s = resolver_.Scope(call->token);
    if (!s.scope) return Fail(call, s.error);
    if (!s.scope->MayRead(bucket)) {
      std::string scope;
      for (const std::string& ns : s.scope->namespaces) scope += (scope.empty() ? "" : ", ") + ns;
      return Fail(call, {ReadFailure::kAccessDenied,
                         "the token of '" + s.scope->subject + "' may not read namespace '" +
                             bucket + "', only " + (scope.empty() ? "none" : scope) +
                             "; ask for a read token for '" + bucket + "'"});
    }
    HttpResponse r = ok();
    r.headers.Set("x-amz-request-id", call->request_id);
    call->Finish(std::move(r));
  });
  if (!queued) Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
}

void ReadService::ServeS3Buckets(std::shared_ptr<ReadCall> call) {
  bool queued = workers_.Post([this, call] {
    NamespacesResolution n = resolver_.ReadableNamespaces(call->token);
    if (!n.scope) return Fail(call, n.error);
    HttpResponse r;
    r.headers.Set("Content-Type", "application/xml");
    r.headers.Set("x-amz-request-id", call->request_id);
    r.body = ListAllMyBucketsXml(n.scope->subject, n.namespaces, kBucketCreationDate);
    call->Finish(std::move(r));
  });
  if (!queued) Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
}

void ReadService::ServeS3Object(std::shared_ptr<ReadCall> call, const std::string& bucket,
                                const std::string& key) {
  Result<ObjectAddress> address = ParseS3Key(bucket, key);
  if (!address.ok()) {
    ReadFailure f =
        address.status().IsNotFound() ? ReadFailure::kNoSuchKey : ReadFailure::kBadRequest;
    return Fail(call, {f, address.status().message()});
  }
  // GetObject's partNumber: every object here is one part, part 1.
  if (const std::string* part = QueryValue(call->query, "partNumber")) {
    Result<uint64_t> n = ParseDecimalParam("partNumber", *part, 1, 10000);
    if (!n.ok()) return Fail(call, {ReadFailure::kBadRequest, n.status().message()});
    if (*n != 1) {
      return Fail(call, {ReadFailure::kInvalidPartNumber,
                         "part " + std::to_string(*n) + " does not exist: objects have one part"});
    }
  }
  for (const auto& [param, header] : kResponseOverrides) {
    const std::string* v = QueryValue(call->query, param);
    if (v == nullptr) continue;
    if (std::any_of(v->begin(), v->end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
      return Fail(call, {ReadFailure::kBadRequest,
                         std::string(param) + " must be one line of printable text"});
    }
    call->reply_headers.emplace_back(header, *v);
  }
  ObjectAddress a = std::move(address).value();
  WithModel(call, a, [this, call, a, key](const Resolution& r) {
    if (!r.model) return Fail(call, r.error);
    const FileEntry* f = r.model->Find(a.path);
    if (f == nullptr) {
      return Fail(call, {ReadFailure::kNoSuchKey, "no key '" + key + "': version " +
                                                      r.model->version.ShortHex() +
                                                      " has no file '" + a.path + "'"});
    }
    AnswerFile(call, r.model, *f);
  });
}

void ReadService::ServeS3List(std::shared_ptr<ReadCall> call, const std::string& bucket,
                              const S3Listing& listing) {
  const ObjectListRequest& lr = listing.request;
  // Keys live under {name}/{ref}/. A prefix that names both lists one
  // version; a shorter one lists the namespace's tags.
  size_t first = lr.prefix.find('/');
  size_t second = first == std::string::npos ? std::string::npos : lr.prefix.find('/', first + 1);
  if (second == std::string::npos) return ServeS3ListTags(call, bucket, listing);
  ObjectAddress a;
  a.ns = bucket;
  a.name = lr.prefix.substr(0, first);
  a.ref = lr.prefix.substr(first + 1, second - first - 1);
  a.manifest = true;
  if (!ValidateName("model name", a.name).ok() || !ValidateRef(a.ref).ok()) {
    return AnswerList(call, bucket, listing, {});
  }
  WithModel(call, a, [this, call, a, bucket, listing](const Resolution& r) {
    if (!r.model) {
      if (r.error.failure == ReadFailure::kNoSuchKey)
        return AnswerList(call, bucket, listing, {});  // no keys
      return Fail(call, r.error);
    }
    std::vector<ObjectEntry> entries;
    AppendEntries(*r.model, a.ref, &entries);
    std::sort(entries.begin(), entries.end(),
              [](const ObjectEntry& x, const ObjectEntry& y) { return x.key < y.key; });
    AnswerList(call, bucket, listing, entries);
  });
}

void ReadService::AppendEntries(const ResolvedModel& model, const std::string& ref,
                                std::vector<ObjectEntry>* out) {
  const std::string base = model.name + "/" + ref + "/";
  for (const FileEntry& f : model.manifest.files) {
    out->push_back(ObjectEntry{base + f.path, f.size, model.ETag(f), model.LastModifiedIso()});
  }
}

void ReadService::AnswerList(const std::shared_ptr<ReadCall>& call, const std::string& bucket,
                             const S3Listing& listing, const std::vector<ObjectEntry>& entries) {
  Result<ObjectPage> page = ListObjects(entries, listing.request);
  if (!page.ok()) return Fail(call, {ReadFailure::kBadRequest, page.status().message()});
  HttpResponse r;
  r.headers.Set("Content-Type", "application/xml");
  r.headers.Set("x-amz-request-id", call->request_id);
  r.body = ListBucketResultXml(bucket, listing.request, *page, listing.url, listing.version);
  call->Finish(std::move(r));
}

// Above the versions: with delimiter '/', the models ("name/") or their
// tags ("name/tag/") as common prefixes; without it, every file of every
// tag, each tag resolved as a read would. Versions are reached by tag only.
void ReadService::ServeS3ListTags(std::shared_ptr<ReadCall> call, const std::string& bucket,
                                  const S3Listing& listing) {
  bool queued = workers_.Post([this, call, bucket, listing] {
    const ObjectListRequest& request = listing.request;
    TagsResolution tags = resolver_.ListTags(call->token, bucket);
    if (!tags.listing) {
      if (tags.error.failure == ReadFailure::kNoSuchKey)
        return AnswerList(call, bucket, listing, {});
      return Fail(call, tags.error);
    }
    std::vector<ObjectEntry> entries;
    for (const auto& [name, tag] : tags.listing->tags) {
      const std::string base = name + "/" + tag + "/";
      // Only tags that can hold keys under the prefix.
      size_t common = std::min(base.size(), request.prefix.size());
      if (base.compare(0, common, request.prefix, 0, common) != 0) continue;
      if (request.delimiter == "/") {
        // A stand-in key: under this delimiter only its "name/" or
        // "name/tag/" part is ever shown.
        entries.push_back(ObjectEntry{base + "-", 0, "", ""});
        continue;
      }
      Resolution r = resolver_.Resolve(call->token, bucket, name, tag);
      if (!r.model) {
        if (r.error.failure == ReadFailure::kNoSuchKey) continue;  // the tag moved away meanwhile
        return Fail(call, r.error);
      }
      AppendEntries(*r.model, tag, &entries);
    }
    std::sort(entries.begin(), entries.end(),
              [](const ObjectEntry& x, const ObjectEntry& y) { return x.key < y.key; });
    AnswerList(call, bucket, listing, entries);
  });
  if (!queued) Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
}

}  // namespace shoal
