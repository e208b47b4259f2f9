#include "origin/s3_error.h"

#include "origin/xml_reader.h"

namespace shoal {

S3ErrorBody ParseS3Error(const std::string& body) {
  S3ErrorBody out;
  if (body.empty()) return out;
  Result<XmlElement> doc = ParseXml(body);
  if (!doc.ok() || doc->name != "Error") return out;
  out.code = doc->ChildText("Code");
  out.message = doc->ChildText("Message");
  return out;
}

Status S3ErrorToStatus(int http_status, const S3ErrorBody& e, const S3ErrorContext& c) {
  const std::string what = c.operation + " " + c.object;
  const std::string code = e.code.empty() ? "HTTP " + std::to_string(http_status) : e.code;
  const std::string detail = e.message.empty() ? "" : " (" + e.message + ")";
  if (e.code == "NoSuchBucket") {
    return Status::NotFound(what + ": bucket '" + c.bucket + "' does not exist at " + c.endpoint +
                            "; create it or fix the bucket name");
  }
  if (e.code == "SignatureDoesNotMatch") {
    return Status::PermissionDenied(what + ": SignatureDoesNotMatch: " + c.endpoint +
                                    " rejected the signature; the secret key does not belong to "
                                    "access key " +
                                    c.access_key + " (check AWS_SECRET_ACCESS_KEY)");
  }
  if (e.code == "InvalidAccessKeyId") {
    return Status::PermissionDenied(what + ": InvalidAccessKeyId: access key " + c.access_key +
                                    " is unknown to " + c.endpoint);
  }
  if (e.code == "PermanentRedirect" || e.code == "AuthorizationHeaderMalformed" ||
      e.code == "IllegalLocationConstraintException") {
    return Status::InvalidArgument(what + ": " + e.code +
                                   ": the bucket lives elsewhere; check the "
                                   "region (AWS_REGION) and the endpoint" +
                                   detail);
  }
  if (http_status == 403) {
    return Status::PermissionDenied(what + ": " + code + ": access denied to access key " +
                                    c.access_key + detail);
  }
  if (http_status == 404) {
    if (e.code == "NoSuchUpload") {
      return Status::NotFound(what + ": the multipart upload no longer exists");
    }
    return Status::NotFound(what + " does not exist");
  }
  if (http_status == 416) {
    return Status::InvalidArgument(what + ": the range reaches past the end of the object");
  }
  if (http_status >= 500 || http_status == 429) {
    return Status::Unavailable(what + ": " + code + " from " + c.endpoint + detail);
  }
  return Status::IOError(what + ": " + code + detail);
}

}  // namespace shoal
