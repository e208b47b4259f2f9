// The plain face of ReadService: /v1/models/{ns}/{name}:{ref}/files/{path}
// and .../manifest, with a Bearer token.
#include "read/read_service.h"
#include "shoal/manifest_codec.h"

namespace shoal {

void ReadService::ServePlain(const HttpRequest& request, HttpResponder respond) {
  std::shared_ptr<ReadCall> call = Begin(ReadApi::kPlain, request, std::move(respond));
  if (stopped_) return Fail(call, {ReadFailure::kUnavailable, "the agent is stopping"});
  Result<ObjectAddress> address = ParsePlainPath(request.path);
  if (!address.ok()) return Fail(call, {ReadFailure::kBadRequest, address.status().message()});
  std::optional<std::string> bearer = request.BearerToken();
  call->token = bearer ? *bearer : AnonymousToken(request);
  if (call->token.empty()) {
    return Fail(
        call, {ReadFailure::kNoCredentials,
               "no token; send 'Authorization: Bearer <token>' with a read token for namespace '" +
                   address->ns + "'"});
  }
  if (!NotRevoked(call)) return;
  if (!TakeSlot(call)) return;
  ObjectAddress a = std::move(address).value();
  WithModel(call, a, [this, call, a](const Resolution& r) {
    if (!r.model) return Fail(call, r.error);
    const ResolvedModel& m = *r.model;
    if (a.manifest) {
      HttpResponse res = HttpResponse::Json(200, ManifestToJson(m.manifest, m.version));
      res.headers.Set("ETag", "\"" + m.version.ToHex() + "\"");
      return call->Finish(std::move(res));
    }
    const FileEntry* f = m.Find(a.path);
    if (f == nullptr) {
      return Fail(
          call, {ReadFailure::kNoSuchKey, "version " + m.version.ShortHex() + " of " + a.ns + "/" +
                                              a.name + " has no file '" + a.path + "'"});
    }
    AnswerFile(call, r.model, *f);
  });
}

}  // namespace shoal
