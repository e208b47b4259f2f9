#include "http_api.h"

#include <capnp/compat/json.h>
#include <capnp/message.h>

#include "announce_handler.h"
#include "record_fill.h"
#include "shoal/decimal.h"
#include "shoal/manifest_codec.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/service/standard_routes.h"

namespace shoal::tracker {
namespace {

std::vector<std::string> Split(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Checks the request's bearer token for `role` on `ns`.
Status Authorize(TrackerContext& ctx, const HttpRequest& req, const std::string& ns, Role role) {
  std::optional<std::string> token = req.BearerToken();
  if (!token) return Status::PermissionDenied("send a token as 'Authorization: Bearer <token>'");
  Result<TokenClaims> claims = ctx.tokens.Verify(*token);
  if (!claims.ok()) {
    ctx.metrics.auth_denied++;
    return claims.status();
  }
  Status s = claims->Check(ns, role, NowMs());
  if (!s.ok()) ctx.metrics.auth_denied++;
  return s;
}

template <typename Reader>
std::string ToJson(Reader r) {
  capnp::JsonCodec codec;
  codec.handleByAnnotation<typename Reader::Reads>();
  return codec.encode(r).cStr();
}

std::string VersionsJson(TrackerContext& ctx, const std::string& ns, const std::string& name,
                         const std::vector<VersionInfo>& versions) {
  auto tags = ctx.store.TagsOf(ns, name);
  std::string out = "[";
  for (const VersionInfo& v : versions) {
    capnp::MallocMessageBuilder b;
    auto o = b.initRoot<proto::VersionSummary>();
    FillVersionSummary(v, TagsOn(v.id, tags), o);
    if (out.size() > 1) out += ",";
    out += ToJson(o.asReader());
  }
  return out + "]";
}

HttpResponse Models(TrackerContext& ctx, const HttpRequest& req) {
  auto it = req.query.find("ns");
  std::string ns = it == req.query.end() ? "" : it->second;
  Status s = Authorize(ctx, req, ns.empty() ? "*" : ns, Role::kRead);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  if (!ns.empty()) {
    Status valid = ValidateName("namespace", ns);
    if (!valid.ok()) return HttpResponse::FromStatus(valid);
  }
  std::string next;
  auto models = ctx.store.ListModels(ns, "", 1000, &next);
  if (!models.ok()) return HttpResponse::FromStatus(models.status());
  std::string out = "[";
  for (const ModelInfo& m : *models) {
    capnp::MallocMessageBuilder b;
    auto o = b.initRoot<proto::ModelSummary>();
    FillModelSummary(m, o);
    if (out.size() > 1) out += ",";
    out += ToJson(o.asReader());
  }
  return HttpResponse::Json(200, out + "]");
}

HttpResponse ModelRoute(TrackerContext& ctx, const HttpRequest& req) {
  // parts: v1 models NS NAME (versions [REF manifest] | tags TAG history)
  std::vector<std::string> p = Split(req.path);
  if (p.size() < 5) return HttpResponse::Error(404, "no such route: " + req.path);
  const std::string& ns = p[2];
  const std::string& name = p[3];
  Status s = Authorize(ctx, req, ns, Role::kRead);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  for (const Status& v : {ValidateName("namespace", ns), ValidateName("model name", name)}) {
    if (!v.ok()) return HttpResponse::FromStatus(v);
  }
  if (p.size() == 5 && p[4] == "versions") {
    std::string next;
    auto versions = ctx.store.ListVersions(ns, name, "", 1000, &next);
    if (!versions.ok()) return HttpResponse::FromStatus(versions.status());
    return HttpResponse::Json(200, VersionsJson(ctx, ns, name, *versions));
  }
  if (p.size() == 7 && p[4] == "versions" && p[6] == "manifest") {
    std::optional<VersionId> id = ctx.store.GetTag(ns, name, p[5]);
    if (!id) {
      if (p[5].size() < 8)
        return HttpResponse::Error(404, "no tag '" + p[5] + "' in " + ns + "/" + name);
      auto found = ctx.store.ResolveVersionPrefix(ns, name, p[5]);
      if (!found.ok()) return HttpResponse::FromStatus(found.status());
      id = *found;
    }
    auto v = ctx.store.GetVersion(ns, name, *id);
    if (!v.ok()) return HttpResponse::FromStatus(v.status());
    auto m = DecodeManifest(v->manifest_bytes);
    if (!m.ok()) return HttpResponse::FromStatus(m.status());
    HttpResponse r = HttpResponse::Json(200, ManifestToJson(*m, *id));
    r.headers.Set(
        "X-Shoal-Signature",
        hex::Encode(reinterpret_cast<const uint8_t*>(v->signature.data()), v->signature.size()));
    r.headers.Set("X-Shoal-Signer", v->signer_key_id);
    r.headers.Set("ETag", "\"" + id->ToHex() + "\"");
    return r;
  }
  if (p.size() == 7 && p[4] == "tags" && p[6] == "history") {
    std::string out = "[";
    for (const TagChange& e : ctx.store.TagHistory(ns, name, p[5])) {
      capnp::MallocMessageBuilder b;
      auto o = b.initRoot<proto::TagEvent>();
      FillTagEvent(e, o);
      if (out.size() > 1) out += ",";
      out += ToJson(o.asReader());
    }
    return HttpResponse::Json(200, out + "]");
  }
  return HttpResponse::Error(404, "no such route: " + req.path);
}

HttpResponse Agents(TrackerContext& ctx, const HttpRequest& req) {
  Status s = Authorize(ctx, req, "*", Role::kRead);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  std::string out = "[";
  for (const AgentRecord& a : ctx.agents.Members(NowMs())) {
    capnp::MallocMessageBuilder b;
    auto o = b.initRoot<proto::AgentListing>();
    o.setAgentId(a.id);
    auto info = o.initInfo();
    info.setName(a.name);
    info.setPeerPort(a.peer_port);
    info.setZone(a.zone);
    info.setCacheBytes(a.cache_bytes);
    info.setVersion(a.version);
    o.setAddress(a.address);
    o.setLastHeartbeatMs(a.last_heartbeat_ms);
    auto st = o.initStats();
    st.setCachedBytes(a.cached_bytes);
    st.setCachedChunks(a.cached_chunks);
    st.setBytesFromPeers(a.bytes_from_peers);
    st.setBytesFromOrigin(a.bytes_from_origin);
    st.setBytesToPeers(a.bytes_to_peers);
    st.setTorrents(a.torrents);
    st.setPeers(a.peers);
    if (out.size() > 1) out += ",";
    out += ToJson(o.asReader());
  }
  return HttpResponse::Json(200, out + "]");
}

HttpResponse Audit(TrackerContext& ctx, const HttpRequest& req) {
  Status s = Authorize(ctx, req, "*", Role::kAdmin);
  if (!s.ok()) return HttpResponse::FromStatus(s);
  auto it = req.query.find("after");
  uint64_t after = 0;
  if (it != req.query.end()) {
    Result<uint64_t> parsed = ParseDecimal(it->second);
    if (!parsed.ok()) return HttpResponse::FromStatus(parsed.status().WithContext("after"));
    after = *parsed;
  }
  std::string out = "[";
  for (const AuditEntry& a : ctx.store.AuditLog(after, 1000)) {
    capnp::MallocMessageBuilder b;
    auto o = b.initRoot<proto::AuditRecord>();
    FillAuditRecord(a, o);
    if (out.size() > 1) out += ",";
    out += ToJson(o.asReader());
  }
  return HttpResponse::Json(200, out + "]");
}

// Token checks and registry operations.
void CollectRegistry(MetricsWriter& w, const TrackerMetrics& m) {
  w.AddCounter("shoal_tracker_auth_total", "Token checks at authentication", m.auth_ok,
               {{"result", "ok"}});
  w.AddCounter("shoal_tracker_auth_total", "Token checks at authentication", m.auth_denied,
               {{"result", "denied"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.publishes,
               {{"op", "publish"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.publish_rejected,
               {{"op", "publish_rejected"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.resolves,
               {{"op", "resolve"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.tag_moves,
               {{"op", "tag"}});
  w.AddCounter("shoal_tracker_registry_ops_total", "Registry operations", m.deletes,
               {{"op", "delete"}});
  w.AddCounter("shoal_tracker_upload_chunks_total", "Chunks in upload plans", m.chunks_planned,
               {{"decision", "upload"}});
  w.AddCounter("shoal_tracker_upload_chunks_total", "Chunks in upload plans", m.chunks_waited,
               {{"decision", "wait"}});
  w.AddCounter("shoal_tracker_chunks_indexed_total", "Chunks confirmed in the origin",
               m.chunks_indexed);
  w.AddCounter("shoal_tracker_duplicate_uploads_total",
               "Chunks reported stored that the origin already had", m.duplicate_uploads);
  w.AddCounter("shoal_tracker_origin_checks_total", "HEAD requests to confirm chunks",
               m.origin_checks);
  w.AddCounter("shoal_tracker_gc_runs_total", "Completed GC sweeps", m.gc_runs);
  w.AddCounter("shoal_tracker_gc_swept_chunks_total", "Chunks deleted by GC", m.gc_swept_chunks);
  w.AddCounter("shoal_tracker_gc_swept_bytes_total", "Bytes deleted by GC", m.gc_swept_bytes);
}

void CollectAnnounces(MetricsWriter& w, const TrackerMetrics& m) {
  w.AddCounter("shoal_tracker_announces_total", "Announce requests", m.announces);
  const char* kAnnounceRefused = "Announces answered with a failure, by reason";
  w.AddCounter("shoal_tracker_announces_refused_total", kAnnounceRefused, m.announce_refused_token,
               {{"reason", "token"}});
  w.AddCounter("shoal_tracker_announces_refused_total", kAnnounceRefused,
               m.announce_refused_malformed, {{"reason", "malformed"}});
  w.AddCounter("shoal_tracker_announces_refused_total", kAnnounceRefused,
               m.announce_refused_torrent, {{"reason", "torrent"}});
  w.AddCounter("shoal_tracker_announces_refused_total", kAnnounceRefused, m.announce_refused_full,
               {{"reason", "full"}});
}

// Origin fetch orders, replicas and the ring they go by.
void CollectFetches(MetricsWriter& w, const TrackerMetrics& m, const TrackerOptions& options,
                    AgentDirectory& agents) {
  w.AddCounter("shoal_tracker_fetch_orders_total", "Fetch orders sent to chunk owners",
               m.fetch_orders);
  w.AddCounter("shoal_tracker_fetch_order_chunks_total", "Chunks in fetch orders",
               m.fetch_order_chunks);
  w.AddCounter("shoal_tracker_fetch_order_failures_total", "Fetch orders that failed",
               m.fetch_order_failures);
  w.AddCounter("shoal_tracker_need_requests_total", "Asks for chunks no peer offered",
               m.need_requests);
  w.AddCounter("shoal_tracker_need_chunks_total", "Chunks in those asks", m.need_chunks);
  w.AddCounter("shoal_tracker_origin_fetches_total",
               "Chunks fetched from the origin on the tracker's order, by reason", m.owner_fetches,
               {{"reason", "owner"}});
  w.AddCounter("shoal_tracker_origin_fetches_total",
               "Chunks fetched from the origin on the tracker's order, by reason",
               m.takeover_fetches, {{"reason", "takeover"}});
  w.AddCounter("shoal_tracker_origin_fetch_bytes_total",
               "Bytes owners fetched from the origin on order", m.origin_fetch_bytes);
  w.AddCounter("shoal_tracker_takeovers_total",
               "Fetch orders handed to the next owner (failure or timeout)", m.takeovers);
  w.AddCounter("shoal_tracker_warms_total", "Warm requests", m.warms);
  w.AddCounter("shoal_tracker_prefetch_orders_total",
               "Whole-version orders to nodes named by warm --nodes", m.prefetch_orders);
  w.AddCounter("shoal_tracker_replica_orders_total",
               "Chunks ordered copied from the swarm to owners 2..R", m.replica_orders);
  w.AddCounter("shoal_tracker_replica_failures_total",
               "Replica orders the owner could not carry out", m.replica_failures);
  w.AddGauge("shoal_tracker_replicas_queued", "Replica orders waiting or in flight",
             static_cast<double>(m.replicas_queued));
  w.AddGauge("shoal_tracker_replicas", "Owners per chunk", static_cast<double>(options.replicas));
  w.AddGauge("shoal_tracker_fetch_queue", "Chunks waiting for a fetch order",
             static_cast<double>(m.fetch_queue));
  w.AddGauge("shoal_tracker_fetches_in_flight", "Fetch orders sent and not yet answered",
             static_cast<double>(m.fetches_in_flight));
  w.AddGauge("shoal_tracker_origin_budget", "Fetch orders allowed in flight across the cluster",
             static_cast<double>(options.origin_budget));
  w.AddGauge("shoal_tracker_takeover_timeout_seconds",
             "Time after which an order goes to the next owner",
             static_cast<double>(m.takeover_timeout_ms) / 1000.0);
  w.AddGauge("shoal_tracker_ring_members", "Agents on the ring of chunk owners",
             static_cast<double>(m.ring_members));
  w.AddGauge("shoal_tracker_agents", "Live registered agents",
             static_cast<double>(agents.Members(NowMs()).size()));
  w.AddGauge("shoal_tracker_ring_epoch", "Membership epoch", static_cast<double>(agents.epoch()));
}

// RPC connections the listener closed.
void CollectRpc(MetricsWriter& w, const TrackerMetrics& m) {
  const char* kRefused = "RPC connections the tracker closed, by reason";
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused, m.rpc_refused_too_large,
               {{"reason", "message_too_large"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused,
               m.rpc_refused_message_timeout, {{"reason", "message_timeout"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused, m.rpc_refused_auth_timeout,
               {{"reason", "auth_timeout"}});
  w.AddCounter("shoal_tracker_rpc_connections_refused_total", kRefused,
               m.rpc_refused_unauthenticated, {{"reason", "too_many_unauthenticated"}});
  w.AddGauge("shoal_tracker_rpc_unauthenticated_connections",
             "RPC connections that have not authenticated yet",
             static_cast<double>(m.rpc_unauthenticated));
}

// Swarms, torrents, uploads in progress and the origin client's counters.
void CollectState(MetricsWriter& w, TrackerContext& ctx) {
  SwarmStats ss = ctx.swarm.Stats(NowMs());
  w.AddGauge("shoal_tracker_swarms", "Torrents with at least one live peer",
             static_cast<double>(ss.swarms));
  w.AddGauge("shoal_tracker_swarm_peers", "Live peers summed over swarms",
             static_cast<double>(ss.peers));
  w.AddGauge("shoal_tracker_torrents",
             "Distinct file torrents of published versions, which may be announced",
             static_cast<double>(ctx.torrents.size()));
  w.AddGauge("shoal_tracker_upload_leases", "Chunk uploads in progress",
             static_cast<double>(ctx.leases.size()));
  OriginCounters oc = ctx.origin.counters();
  const std::pair<const char*, const OpCounters*> ops[] = {{"get", &oc.get},
                                                           {"put", &oc.put},
                                                           {"head", &oc.head},
                                                           {"list", &oc.list},
                                                           {"delete", &oc.del}};
  for (const auto& [op, c] : ops) {
    w.AddCounter("shoal_origin_requests_total", "Origin requests, retries included", c->requests,
                 {{"op", op}});
    w.AddCounter("shoal_origin_bytes_total", "Origin payload bytes", c->bytes, {{"op", op}});
    w.AddCounter("shoal_origin_errors_total", "Origin calls that failed", c->errors, {{"op", op}});
  }
}

void AddCollectors(MetricsRegistry& metrics, TrackerContext& ctx) {
  metrics.AddCollector([&ctx](MetricsWriter& w) {
    const TrackerMetrics& m = ctx.metrics;
    CollectRegistry(w, m);
    CollectAnnounces(w, m);
    CollectFetches(w, m, ctx.options, ctx.agents);
    CollectRpc(w, m);
    CollectState(w, ctx);
  });
}

}  // namespace

void AddTrackerRoutes(HttpServer& server, MetricsRegistry& metrics, TrackerContext& ctx) {
  AddCollectors(metrics, ctx);
  AddStandardRoutes(server, metrics, [&ctx] { return ctx.store.Ping(); });
  server.Handle("GET", "/v1/public-key", [&ctx](const HttpRequest&) {
    return HttpResponse::Json(
        200, "{\"keyId\":\"" + ctx.signer.key_id() + "\",\"ed25519\":\"" +
                 hex::Encode(reinterpret_cast<const uint8_t*>(ctx.signer.public_key().data()),
                             ctx.signer.public_key().size()) +
                 "\"}");
  });
  server.Handle("GET", "/v1/models", [&ctx](const HttpRequest& r) { return Models(ctx, r); });
  server.Handle("GET", "/v1/models/*", [&ctx](const HttpRequest& r) { return ModelRoute(ctx, r); });
  AnnounceDeps announce{ctx.tokens,
                        ctx.torrents,
                        ctx.swarm,
                        ctx.metrics,
                        ctx.options.announce_interval_ms,
                        ctx.options.seed_announce_interval_ms};
  server.Handle("GET", "/announce",
                [announce](const HttpRequest& r) { return HandleAnnounce(announce, r); });
  server.Handle("GET", "/v1/agents", [&ctx](const HttpRequest& r) { return Agents(ctx, r); });
  server.Handle("GET", "/v1/audit", [&ctx](const HttpRequest& r) { return Audit(ctx, r); });
}

}  // namespace shoal::tracker
