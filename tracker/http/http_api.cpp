#include "http/http_api.h"

#include <capnp/compat/json.h>
#include <capnp/message.h>

#include <algorithm>

#include "agents/agent_directory.h"
#include "auth/token_verifier.h"
#include "common/tracker_metrics.h"
#include "http/token_routes.h"
#include "proto/json_records.h"
#include "proto/record_codec.h"
#include "registry/record_fill.h"
#include "registry/registry_store.h"
#include "shoal/decimal.h"
#include "shoal/manifest_codec.h"
#include "shoal/manifest_signer.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/server/standard_routes.h"
#include "shoal/token.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

// text[from..] cut at every `sep`; empty parts are kept.
std::vector<std::string> Split(const std::string& text, char sep, size_t from) {
  std::vector<std::string> parts;
  size_t start = from;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// "a=1,b=2" -> {"a=1", "b=2"}; empty parts dropped.
std::vector<std::string> SplitLabels(const std::string& text) {
  std::vector<std::string> out = Split(text, ',', 0);
  out.erase(std::remove(out.begin(), out.end(), std::string()), out.end());
  return out;
}

Status Authorize(const HttpApiDeps& d, const HttpRequest& req, const std::string& ns, Role role) {
  return AuthorizeRequest(d, req, ns, role).status();
}

HttpResponse Models(const HttpApiDeps& d, const HttpRequest& req) {
  auto it = req.query.find("ns");
  std::string ns = it == req.query.end() ? "" : it->second;
  Status s = Authorize(d, req, ns.empty() ? "*" : ns, Role::kRead);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  if (!ns.empty()) {
    Status valid = ValidateName("namespace", ns);
    if (!valid.ok()) return HttpResponse::FromStatus(valid);
  }
  std::string next;
  auto models = d.store.ListModels(ns, "", 1000, &next);
  if (!models.ok()) return HttpResponse::FromStatus(models.status());
  return HttpResponse::Json(200, JsonArray<proto::ModelSummary>(*models, FillModelInfo));
}

HttpResponse ModelRoute(const HttpApiDeps& d, const HttpRequest& req) {
  // parts: v1 models NS NAME (versions [REF manifest] | tags TAG history)
  std::vector<std::string> p = Split(req.path, '/', 1);
  if (p.size() < 5) return HttpResponse::Error(404, "no such route: " + req.path);
  const std::string& ns = p[2];
  const std::string& name = p[3];
  Status s = Authorize(d, req, ns, Role::kRead);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  for (const Status& v : {ValidateName("namespace", ns), ValidateName("model name", name)}) {
    if (!v.ok()) return HttpResponse::FromStatus(v);
  }
  if (p.size() == 5 && p[4] == "versions") {
    // ?label=key=value[,key=value...]: only versions with every label.
    std::vector<std::string> labels;
    auto wanted = req.query.find("label");
    if (wanted != req.query.end()) labels = SplitLabels(wanted->second);
    Status bad = CheckLabelFilter(labels);
    if (!bad.ok()) return HttpResponse::FromStatus(bad);
    std::string next;
    auto versions = d.store.ListVersions(ns, name, "", 1000, &next, labels);
    if (!versions.ok()) return HttpResponse::FromStatus(versions.status());
    return HttpResponse::Json(200, JsonArray<proto::VersionSummary>(*versions, FillVersionInfo));
  }
  if (p.size() == 7 && p[4] == "versions" && p[6] == "manifest") {
    auto tagged = d.store.GetTag(ns, name, p[5]);
    if (!tagged.ok()) return HttpResponse::FromStatus(tagged.status());
    std::optional<VersionId> id = *tagged;
    if (!id) {
      if (p[5].size() < 8)
        return HttpResponse::Error(404, "no tag '" + p[5] + "' in " + ns + "/" + name);
      auto found = d.store.ResolveVersionPrefix(ns, name, p[5]);
      if (!found.ok()) return HttpResponse::FromStatus(found.status());
      id = *found;
    }
    auto v = d.store.GetVersion(ns, name, *id);
    if (!v.ok()) return HttpResponse::FromStatus(v.status());
    auto upload = d.store.UploadOf(ns, name, *id, NowMs());
    if (!upload.ok()) return HttpResponse::FromStatus(upload.status());
    if (upload->state == VersionState::kFailed) {
      return HttpResponse::FromStatus(FailedVersionError(ns, name, *id, upload->detail));
    }
    auto m = DecodeManifest(v->manifest_bytes);
    if (!m.ok()) return HttpResponse::FromStatus(m.status());
    HttpResponse r = HttpResponse::Json(200, ManifestToJson(*m, *id));
    r.headers.Set(
        "X-Shoal-Signature",
        hex::Encode(reinterpret_cast<const uint8_t*>(v->signature.data()), v->signature.size()));
    r.headers.Set("X-Shoal-Signer", v->signer_key_id);
    r.headers.Set("ETag", "\"" + id->ToHex() + "\"");
    r.headers.Set("X-Shoal-State", VersionStateName(upload->state));
    return r;
  }
  if (p.size() == 7 && p[4] == "tags" && p[6] == "history") {
    auto events = d.store.TagHistory(ns, name, p[5]);
    if (!events.ok()) return HttpResponse::FromStatus(events.status());
    return HttpResponse::Json(200, JsonArray<proto::TagEvent>(*events, FillTagChange));
  }
  return HttpResponse::Error(404, "no such route: " + req.path);
}

HttpResponse Agents(const HttpApiDeps& d, const HttpRequest& req) {
  Status s = Authorize(d, req, "*", Role::kRead);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  auto fill = [](const AgentRecord& a, proto::AgentListing::Builder o) {
    o.setAgentId(a.id);
    auto info = o.initInfo();
    info.setName(a.name);
    info.setPeerPort(a.peer_port);
    info.setPeerSessions(a.peer_sessions);
    info.setZone(a.zone);
    info.setCacheBytes(a.cache_bytes);
    info.setVersion(a.version);
    o.setAddress(a.address);
    o.setLastHeartbeatMs(a.last_heartbeat_ms);
    o.setHeartbeatMs(static_cast<uint32_t>(a.heartbeat_ms));
    FillAgentStats(a.stats, o.initStats());
  };
  return HttpResponse::Json(200, JsonArray<proto::AgentListing>(d.agents.Members(NowMs()), fill));
}

HttpResponse Audit(const HttpApiDeps& d, const HttpRequest& req) {
  Status s = Authorize(d, req, "*", Role::kAdmin);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  auto it = req.query.find("after");
  uint64_t after = 0;
  if (it != req.query.end()) {
    Result<uint64_t> parsed = ParseDecimal(it->second);
    if (!parsed.ok()) return HttpResponse::FromStatus(parsed.status().WithContext("after"));
    after = *parsed;
  }
  auto log = d.store.AuditLog(after, 1000);
  if (!log.ok()) return HttpResponse::FromStatus(log.status());
  return HttpResponse::Json(200, JsonArray<proto::AuditRecord>(*log, FillAuditRecord));
}

}  // namespace

Result<TokenClaims> AuthorizeRequest(const HttpApiDeps& d, const HttpRequest& req,
                                     const std::string& ns, Role role) {
  std::optional<std::string> token = req.BearerToken();
  Result<TokenClaims> claims = d.tokens.Authorize(token ? *token : "", ns, role, NowMs());
  if (!claims.ok()) d.metrics.auth_denied++;
  return claims;
}

void AddTrackerRoutes(HttpServer& server, MetricsRegistry& metrics, const HttpApiDeps& d) {
  RegistryStore& store = d.store;
  AddStandardRoutes(server, metrics, [&store] { return store.Ping(); });
  server.Handle("GET", "/v1/public-key", [d](const HttpRequest&) {
    return HttpResponse::Json(
        200, "{\"keyId\":\"" + d.signer.key_id() + "\",\"ed25519\":\"" +
                 hex::Encode(reinterpret_cast<const uint8_t*>(d.signer.public_key().data()),
                             d.signer.public_key().size()) +
                 "\"}");
  });
  server.Handle("GET", "/v1/models", [d](const HttpRequest& r) { return Models(d, r); });
  server.Handle("GET", "/v1/models/*", [d](const HttpRequest& r) { return ModelRoute(d, r); });
  server.Handle("GET", "/announce", [announce = d.announce](const HttpRequest& r) {
    return HandleAnnounce(announce, r);
  });
  server.Handle("GET", "/v1/agents", [d](const HttpRequest& r) { return Agents(d, r); });
  server.Handle("GET", "/v1/audit", [d](const HttpRequest& r) { return Audit(d, r); });
  AddTokenRoutes(server, d);
}

}  // namespace shoal::tracker
