// The S3 face of ReadService: path-style GetObject, HeadObject and
// ListObjectsV2, signed with SigV4 by a read token.
#include <algorithm>
#include <ctime>

#include "read/decimal_param.h"
#include "read/read_service.h"
#include "read/s3_xml.h"
#include "read/sigv4_verifier.h"
#include "shoal/manifest.h"

namespace shoal {

namespace {

const std::string* QueryValue(const std::map<std::string, std::string>& query,
                              const std::string& name) {
  auto it = query.find(name);
  return it == query.end() ? nullptr : &it->second;
}

}  // namespace

void ReadService::ServeS3(const HttpRequest& request, HttpResponder respond) {
  std::shared_ptr<ReadCall> call = Begin(ReadApi::kS3, request, std::move(respond));
  if (stopped_) return Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
  if (call->method != "GET" && call->method != "HEAD") {
    return Fail(call, {ReadFailure::kNotImplemented,
                       "this endpoint is read-only: GetObject, HeadObject and ListObjectsV2"});
  }
  Result<S3Path> path = ParseS3Path(request.path);
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
  if (!ValidateName("bucket", path->bucket).ok()) {
    return Fail(
        call, {ReadFailure::kNoSuchBucket, "bucket '" + path->bucket.substr(0, 100) +
                                               "' is not a namespace name, so it does not exist"});
  }
  if (!path->key.empty()) return ServeS3Object(call, path->bucket, path->key);
  const std::string* list_type = QueryValue(call->query, "list-type");
  if (list_type != nullptr && *list_type == "2") return ServeS3List(call, path->bucket);
  if (call->method == "HEAD" &&
      call->query.empty()) {  // HeadBucket: every namespace name is a bucket
    HttpResponse r;
    r.headers.Set("x-amz-request-id", call->request_id);
    return call->Finish(std::move(r));
  }
  Fail(call, {ReadFailure::kNotImplemented,
              "bucket requests other than ListObjectsV2 (list-type=2) are not served"});
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

void ReadService::ServeS3List(std::shared_ptr<ReadCall> call, const std::string& bucket) {
  ObjectListRequest lr;
  auto get = [&](const char* name) {
    const std::string* v = QueryValue(call->query, name);
    return v ? *v : std::string();
  };
  lr.prefix = get("prefix");
  lr.delimiter = get("delimiter");
  lr.start_after = get("start-after");
  lr.continuation = get("continuation-token");
  Result<int> max_keys = ParseMaxKeys(QueryValue(call->query, "max-keys"));
  if (!max_keys.ok()) return Fail(call, {ReadFailure::kBadRequest, max_keys.status().message()});
  lr.max_keys = *max_keys;
  const bool url = get("encoding-type") == "url";

  // Keys live under {name}/{ref}/. A prefix that names both lists one
  // version; a shorter one lists the namespace's tags.
  size_t first = lr.prefix.find('/');
  size_t second = first == std::string::npos ? std::string::npos : lr.prefix.find('/', first + 1);
  if (second == std::string::npos) return ServeS3ListTags(call, bucket, lr, url);
  ObjectAddress a;
  a.ns = bucket;
  a.name = lr.prefix.substr(0, first);
  a.ref = lr.prefix.substr(first + 1, second - first - 1);
  a.manifest = true;
  if (!ValidateName("model name", a.name).ok() || !ValidateRef(a.ref).ok()) {
    return AnswerList(call, bucket, lr, url, {});
  }
  WithModel(call, a, [this, call, a, bucket, lr, url](const Resolution& r) {
    if (!r.model) {
      if (r.error.failure == ReadFailure::kNoSuchKey)
        return AnswerList(call, bucket, lr, url, {});  // no keys
      return Fail(call, r.error);
    }
    std::vector<ObjectEntry> entries;
    AppendEntries(*r.model, a.ref, &entries);
    std::sort(entries.begin(), entries.end(),
              [](const ObjectEntry& x, const ObjectEntry& y) { return x.key < y.key; });
    AnswerList(call, bucket, lr, url, entries);
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
                             const ObjectListRequest& request, bool url,
                             const std::vector<ObjectEntry>& entries) {
  Result<ObjectPage> page = ListObjects(entries, request);
  if (!page.ok()) return Fail(call, {ReadFailure::kBadRequest, page.status().message()});
  HttpResponse r;
  r.headers.Set("Content-Type", "application/xml");
  r.headers.Set("x-amz-request-id", call->request_id);
  r.body = ListBucketResultXml(bucket, request, *page, url);
  call->Finish(std::move(r));
}

// Above the versions: with delimiter '/', the models ("name/") or their
// tags ("name/tag/") as common prefixes; without it, every file of every
// tag, each tag resolved as a read would. Versions are reached by tag only.
void ReadService::ServeS3ListTags(std::shared_ptr<ReadCall> call, const std::string& bucket,
                                  const ObjectListRequest& request, bool url) {
  bool queued = workers_.Post([this, call, bucket, request, url] {
    TagsResolution tags = resolver_.ListTags(call->token, bucket);
    if (!tags.listing) {
      if (tags.error.failure == ReadFailure::kNoSuchKey)
        return AnswerList(call, bucket, request, url, {});
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
    AnswerList(call, bucket, request, url, entries);
  });
  if (!queued) Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
}

}  // namespace shoal
