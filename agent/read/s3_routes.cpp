// The S3 face of ReadService: path-style GetObject, HeadObject and
// ListObjectsV2, signed with SigV4 by a read token.
#include <ctime>

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
    case SigV4Check::Outcome::kMismatch:
      return Fail(call, {ReadFailure::kSignatureMismatch, auth.message});
    case SigV4Check::Outcome::kExpired:
      return Fail(call, {ReadFailure::kRequestExpired, auth.message});
  }
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

  // Keys live under {name}/{ref}/: the prefix must name both.
  size_t first = lr.prefix.find('/');
  size_t second = first == std::string::npos ? std::string::npos : lr.prefix.find('/', first + 1);
  if (second == std::string::npos) {
    return Fail(
        call, {ReadFailure::kNotImplemented,
               "list with a prefix of {model}/{tag}/; listing models and tags is not served here"});
  }
  ObjectAddress a;
  a.ns = bucket;
  a.name = lr.prefix.substr(0, first);
  a.ref = lr.prefix.substr(first + 1, second - first - 1);
  a.manifest = true;
  auto answer = [this, call, bucket, lr, url](const std::vector<ObjectEntry>& entries) {
    Result<ObjectPage> page = ListObjects(entries, lr);
    if (!page.ok()) return Fail(call, {ReadFailure::kBadRequest, page.status().message()});
    HttpResponse r;
    r.headers.Set("Content-Type", "application/xml");
    r.headers.Set("x-amz-request-id", call->request_id);
    r.body = ListBucketResultXml(bucket, lr, *page, url);
    call->Finish(std::move(r));
  };
  if (!ValidateName("model name", a.name).ok() || !ValidateRef(a.ref).ok()) return answer({});
  WithModel(call, a, [this, call, a, answer](const Resolution& r) {
    if (!r.model) {
      if (r.error.failure == ReadFailure::kNoSuchKey) return answer({});  // no such model: no keys
      return Fail(call, r.error);
    }
    const std::string base = a.name + "/" + a.ref + "/";
    std::vector<ObjectEntry> entries;
    entries.reserve(r.model->manifest.files.size());
    for (const FileEntry& f : r.model->manifest.files) {
      entries.push_back(
          ObjectEntry{base + f.path, f.size, r.model->ETag(f), r.model->LastModifiedIso()});
    }
    std::sort(entries.begin(), entries.end(),
              [](const ObjectEntry& x, const ObjectEntry& y) { return x.key < y.key; });
    answer(entries);
  });
}

}  // namespace shoal
