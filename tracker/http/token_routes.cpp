#include "http/token_routes.h"

#include <capnp/compat/json.h>
#include <capnp/message.h>

#include "auth/token_verifier.h"
#include "http/http_api.h"
#include "proto/record_codec.h"
#include "registry/issued_tokens.h"
#include "registry/registry_store.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

template <typename Builder>
std::string ToJson(Builder b) {
  capnp::JsonCodec codec;
  codec.handleByAnnotation<typename Builder::Builds>();
  return codec.encode(b.asReader()).cStr();
}

HttpResponse ListTokens(const HttpApiDeps& d, const HttpRequest& req) {
  Result<TokenClaims> admin = AuthorizeRequest(d, req, "*", Role::kAdmin);
  if (!admin.ok()) return HttpResponse::FromStatus(admin.status());
  Result<std::vector<TokenClaims>> issued = ListIssuedTokens(d.issued_tokens, d.store);
  if (!issued.ok()) return HttpResponse::FromStatus(issued.status());
  return HttpResponse::Json(200, IssuedTokensJson(*issued, d.tokens.revocations()));
}

HttpResponse RevokeTokens(const HttpApiDeps& d, const HttpRequest& req) {
  Result<TokenClaims> admin = AuthorizeRequest(d, req, "*", Role::kAdmin);
  if (!admin.ok()) return HttpResponse::FromStatus(admin.status());
  auto id = req.query.find("id");
  auto subject = req.query.find("subject");
  if ((id == req.query.end()) == (subject == req.query.end())) {
    return HttpResponse::FromStatus(
        Status::InvalidArgument("name what to revoke: ?id=TOKEN_ID or ?subject=SUBJECT"));
  }
  const bool by_id = id != req.query.end();
  Result<Revocation> r = d.tokens.Revoke(
      by_id ? Revocation::Kind::kTokenId : Revocation::Kind::kSubject,
      by_id ? id->second : subject->second, Revoker{admin->subject, admin->id}, NowMs());
  if (!r.ok()) return HttpResponse::FromStatus(r.status());
  return HttpResponse::Json(200, RevocationJson(*r));
}

}  // namespace

std::string IssuedTokensJson(const std::vector<TokenClaims>& issued,
                             const RevocationList& revocations) {
  std::string out = "[";
  for (const TokenClaims& c : issued) {
    capnp::MallocMessageBuilder b;
    auto t = b.initRoot<proto::IssuedToken>();
    t.setId(c.id);
    t.setSubject(c.subject);
    t.setRole(static_cast<proto::Role>(static_cast<int>(c.role)));
    auto ns = t.initNamespaces(static_cast<unsigned>(c.namespaces.size()));
    for (size_t i = 0; i < c.namespaces.size(); ++i)
      ns.set(static_cast<unsigned>(i), c.namespaces[i]);
    t.setIssuedAtMs(c.issued_at_ms);
    t.setExpiresAtMs(c.expires_at_ms);
    if (std::optional<Revocation> r = revocations.Find(c)) {
      t.setRevoked(true);
      t.setRevokedAtMs(r->at_ms);
      t.setRevokedBy(r->by);
    }
    if (out.size() > 1) out += ",";
    out += ToJson(t);
  }
  return out + "]";
}

std::string RevocationJson(const Revocation& r) {
  capnp::MallocMessageBuilder b;
  auto out = b.initRoot<proto::Revocation>();
  FillRevocation(r, out);
  return ToJson(out);
}

void AddTokenRoutes(HttpServer& server, const HttpApiDeps& d) {
  server.Handle("GET", "/v1/tokens", [d](const HttpRequest& r) { return ListTokens(d, r); });
  server.Handle("POST", "/v1/tokens/revoke",
                [d](const HttpRequest& r) { return RevokeTokens(d, r); });
}

}  // namespace shoal::tracker
