#include "registry_service.h"

#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <unordered_set>

#include "chunk_gc.h"
#include "fetch_requests.h"
#include "record_fill.h"
#include "capnp_views.h"
#include "kj_status.h"
#include "shoal/hash256.h"
#include "shoal/log.h"
#include "shoal/manifest_codec.h"

namespace shoal::tracker {
namespace {

constexpr uint32_t kDefaultPage = 100;
constexpr uint32_t kMaxPage = 1000;


std::vector<ChunkId> ParseChunkIds(capnp::List<capnp::Data>::Reader list) {
  if (list.size() > ManifestLimits::kMaxTotalPieces) {
    ThrowIfError(Status::InvalidArgument("too many chunks in one request (" +
                                         std::to_string(list.size()) + ")"));
  }
  std::vector<ChunkId> ids;
  ids.reserve(list.size());
  for (auto d : list) {
    if (d.size() != ChunkId::kSize) ThrowIfError(Status::InvalidArgument("a chunk id is not 32 bytes"));
    ids.push_back(ChunkId::FromBytes(d.begin()));
  }
  return ids;
}

VersionId ParseVersionId(capnp::Data::Reader d) {
  if (d.size() != VersionId::kSize) ThrowIfError(Status::InvalidArgument("a version id is not 32 bytes"));
  return VersionId::FromBytes(d.begin());
}

uint32_t PageLimit(uint32_t asked) { return asked == 0 ? kDefaultPage : std::min(asked, kMaxPage); }

void FillIdentity(const TokenClaims& c, proto::Identity::Builder out) {
  out.setSubject(c.subject);
  out.setRole(static_cast<proto::Role>(static_cast<int>(c.role)));
  auto ns = out.initNamespaces(static_cast<unsigned>(c.namespaces.size()));
  for (size_t i = 0; i < c.namespaces.size(); ++i) ns.set(static_cast<unsigned>(i), c.namespaces[i]);
  out.setExpiresAtMs(c.expires_at_ms);
}

void FillSigned(const StoredVersion& v, proto::SignedManifest::Builder out) {
  out.setVersionId(Raw(v.id));
  out.setManifest(Raw(v.manifest_bytes));
  out.setSignature(Raw(v.signature));
  out.setSignerKeyId(v.signer_key_id);
}

std::string RandomHex(size_t bytes) {
  std::vector<uint8_t> buf(bytes);
  RAND_bytes(buf.data(), static_cast<int>(buf.size()));
  return hex::Encode(buf.data(), buf.size());
}

// Confirms with HEADs that `ids` are in the origin. Returns the ones found
// with their sizes; the rest go to *missing.
std::vector<std::pair<ChunkId, uint64_t>> CheckOrigin(TrackerContext& ctx,
                                                      const std::vector<ChunkId>& ids,
                                                      std::vector<ChunkId>* missing,
                                                      Status* error) {
  std::vector<std::optional<uint64_t>> sizes(ids.size());
  std::vector<Status> errors(ids.size());
  ParallelFor(ids.size(), ctx.options.origin_parallelism, [&](size_t i) {
    ctx.metrics.origin_checks++;
    Result<ObjectInfo> info = ctx.origin.Head(ChunkKey(ids[i]));
    if (info.ok()) {
      sizes[i] = info->size;
    } else if (!info.status().IsNotFound()) {
      errors[i] = info.status();
    }
  });
  std::vector<std::pair<ChunkId, uint64_t>> found;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (!errors[i].ok() && error->ok()) *error = errors[i];
    if (sizes[i]) {
      found.emplace_back(ids[i], *sizes[i]);
    } else {
      missing->push_back(ids[i]);
    }
  }
  return found;
}

// Runs on the blocking pool. Touches only `ctx`, which outlives every
// connection, so a client that hangs up mid-call cannot pull memory away.
Status RecordStored(TrackerContext& ctx, const std::vector<ChunkId>& ids) {
  std::vector<ChunkId> fresh, missing;
  for (const ChunkId& id : ids) {
    if (ctx.store.HasChunk(id)) {
      ctx.metrics.duplicate_uploads++;
      ctx.leases.Release(id);
    } else {
      fresh.push_back(id);
    }
  }
  Status origin_error;
  auto found = CheckOrigin(ctx, fresh, &missing, &origin_error);
  SHOAL_RETURN_IF_ERROR(ctx.store.AddChunks(found, NowMs()));
  ctx.metrics.chunks_indexed += found.size();
  for (const auto& f : found) ctx.leases.Release(f.first);
  if (!origin_error.ok()) return origin_error.WithContext("checking chunks in the origin");
  if (!missing.empty()) {
    return Status::NotFound(std::to_string(missing.size()) + " reported chunks are not in " +
                            ctx.origin.Describe() + " (first: " + missing[0].ToHex() + ")");
  }
  return Status::OK();
}

// Runs on the blocking pool. Every chunk of `m` must be in the origin.
Status EnsureChunksInOrigin(TrackerContext& ctx, const Manifest& m) {
  std::vector<ChunkId> unknown;
  std::unordered_set<ChunkId> seen;
  for (const FileEntry& f : m.files) {
    for (const ChunkId& id : f.ChunkIds()) {
      if (seen.insert(id).second && !ctx.store.HasChunk(id)) unknown.push_back(id);
    }
  }
  if (unknown.empty()) return Status::OK();
  std::vector<ChunkId> missing;
  Status origin_error;
  auto found = CheckOrigin(ctx, unknown, &missing, &origin_error);
  SHOAL_RETURN_IF_ERROR(ctx.store.AddChunks(found, NowMs()));
  ctx.metrics.chunks_indexed += found.size();
  if (!origin_error.ok()) return origin_error.WithContext("checking chunks in the origin");
  if (!missing.empty()) {
    return Status::NotFound(std::to_string(missing.size()) + " of " + std::to_string(seen.size()) +
                            " chunks of " + m.ns + "/" + m.name + " are not in " +
                            ctx.origin.Describe() + " (first: " + missing[0].ToHex() +
                            "); upload them before committing");
  }
  return Status::OK();
}


class RegistryImpl final : public proto::Registry::Server {
 public:
  RegistryImpl(TrackerContext& ctx, TokenClaims claims)
      : ctx_(ctx), claims_(std::move(claims)), holder_(claims_.id + "/" + RandomHex(8)) {}

 protected:
  kj::Promise<void> planUpload(PlanUploadContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace());
    Require(ns, Role::kWrite);
    std::vector<ChunkId> ids = ParseChunkIds(p.getChunks());
    std::vector<ChunkId> upload, wait;
    std::unordered_set<ChunkId> seen;
    int64_t now = NowMs();
    for (const ChunkId& id : ids) {
      if (!seen.insert(id).second || ctx_.store.HasChunk(id)) continue;
      if (ctx_.leases.TryClaim(id, holder_, now, ctx_.options.upload_lease_ms)) {
        upload.push_back(id);
      } else {
        wait.push_back(id);
      }
    }
    ctx_.metrics.chunks_planned += upload.size();
    ctx_.metrics.chunks_waited += wait.size();
    auto plan = c.getResults().initPlan();
    auto u = plan.initUpload(static_cast<unsigned>(upload.size()));
    for (size_t i = 0; i < upload.size(); ++i) u.set(static_cast<unsigned>(i), Raw(upload[i]));
    auto w = plan.initWait(static_cast<unsigned>(wait.size()));
    for (size_t i = 0; i < wait.size(); ++i) w.set(static_cast<unsigned>(i), Raw(wait[i]));
    plan.setLeaseMs(static_cast<uint32_t>(ctx_.options.upload_lease_ms));
    return kj::READY_NOW;
  }

  kj::Promise<void> chunksStored(ChunksStoredContext c) override {
    auto p = c.getParams();
    Require(Text(p.getNamespace()), Role::kWrite);
    auto ids = std::make_shared<std::vector<ChunkId>>(ParseChunkIds(p.getChunks()));
    TrackerContext& ctx = ctx_;
    return ctx_.pool.Run<Status>([&ctx, ids] { return RecordStored(ctx, *ids); })
        .then([](Status s) { ThrowIfError(s); });
  }

  kj::Promise<void> commit(CommitContext c) override {
    auto p = c.getParams();
    auto bytes = std::make_shared<std::string>(reinterpret_cast<const char*>(p.getManifest().begin()),
                                               p.getManifest().size());
    Result<Manifest> decoded = DecodeManifest(*bytes);
    if (!decoded.ok()) {
      ctx_.metrics.publish_rejected++;
      ThrowIfError(decoded.status().WithContext("manifest refused"));
    }
    auto m = std::make_shared<Manifest>(std::move(decoded).value());
    Require(m->ns, Role::kWrite);
    if (m->created_by != claims_.subject) {
      ctx_.metrics.publish_rejected++;
      ThrowIfError(Status::PermissionDenied("manifest says it was created by '" + m->created_by +
                                            "' but the token is for '" + claims_.subject + "'"));
    }
    auto tags = std::make_shared<std::vector<std::string>>();
    for (auto t : p.getTags()) {
      tags->push_back(Text(t));
      ThrowIfError(ValidateTag(tags->back()));
    }
    TrackerContext& ctx = ctx_;
    return ctx_.pool.Run<Status>([&ctx, m] { return EnsureChunksInOrigin(ctx, *m); })
        .then([this, c, m, bytes, tags](Status s) mutable {
          if (!s.ok()) ctx_.metrics.publish_rejected++;
          ThrowIfError(s);
          StoredVersion v;
          v.id = ComputeVersionId(*bytes);
          v.manifest_bytes = *bytes;
          v.signature = ctx_.signer.Sign(v.id);
          v.signer_key_id = ctx_.signer.key_id();
          v.created_at_ms = m->created_at_ms;
          std::string tag_list;
          for (const std::string& t : *tags) tag_list += (tag_list.empty() ? "" : ",") + t;
          Result<bool> created = ctx_.store.CommitVersion(
              *m, v, *tags,
              MakeAudit("publish", m->ns + "/" + m->name + ":" + v.id.ToHex(), "tags=" + tag_list));
          ThrowIfError(created.status());
          if (*created) {
            ctx_.metrics.publishes++;
            ctx_.torrents.Add(*m);
          }
          ApplyRetention(m->ns, m->name);
          FillSigned(v, c.getResults().initSigned());
          c.getResults().setCreated(*created);
        });
  }

  kj::Promise<void> resolve(ResolveContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName()), ref = Text(p.getRef());
    Require(ns, Role::kRead);
    ThrowIfError(ValidateName("model name", name));
    ctx_.metrics.resolves++;
    VersionId id = ResolveRef(ns, name, ref);
    Result<StoredVersion> v = ctx_.store.GetVersion(ns, name, id);
    ThrowIfError(v.status());
    FillSigned(*v, c.getResults().initSigned());
    return kj::READY_NOW;
  }

  kj::Promise<void> listModels(ListModelsContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace());
    if (ns.empty()) {
      Require("*", Role::kRead);  // every namespace: only an all-namespace token
    } else {
      Require(ns, Role::kRead);
    }
    std::string next;
    auto models = ctx_.store.ListModels(ns, Text(p.getAfter()), PageLimit(p.getLimit()), &next);
    ThrowIfError(models.status());
    auto out = c.getResults().initModels(static_cast<unsigned>(models->size()));
    for (size_t i = 0; i < models->size(); ++i) {
      FillModelSummary((*models)[i], out[static_cast<unsigned>(i)]);
    }
    c.getResults().setNext(next);
    return kj::READY_NOW;
  }

  kj::Promise<void> listVersions(ListVersionsContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName());
    Require(ns, Role::kRead);
    ThrowIfError(ValidateName("model name", name));
    std::string next;
    auto versions = ctx_.store.ListVersions(ns, name, Text(p.getAfter()), PageLimit(p.getLimit()), &next);
    ThrowIfError(versions.status());
    auto tags = ctx_.store.TagsOf(ns, name);
    auto out = c.getResults().initVersions(static_cast<unsigned>(versions->size()));
    for (size_t i = 0; i < versions->size(); ++i) {
      const VersionInfo& v = (*versions)[i];
      FillVersionSummary(v, TagsOn(v.id, tags), out[static_cast<unsigned>(i)]);
    }
    c.getResults().setNext(next);
    return kj::READY_NOW;
  }

  kj::Promise<void> setTag(SetTagContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName()), tag = Text(p.getTag());
    Require(ns, Role::kWrite);
    ThrowIfError(ValidateName("model name", name));
    ThrowIfError(ValidateTag(tag));
    VersionId id = ParseVersionId(p.getVersionId());
    ThrowIfError(ctx_.store.GetVersion(ns, name, id).status());
    std::optional<VersionId> prev = ctx_.store.GetTag(ns, name, tag);
    if (prev && *prev == id) return kj::READY_NOW;
    TagChange change{ns, name, tag, prev, id, claims_.subject, NowMs()};
    ThrowIfError(ctx_.store.SetTag(
        change, MakeAudit("tag", ns + "/" + name + ":" + tag,
                          (prev ? prev->ToHex() : std::string("(new)")) + " -> " + id.ToHex())));
    ctx_.metrics.tag_moves++;
    if (prev) c.getResults().setPrevious(Raw(*prev));
    return kj::READY_NOW;
  }

  kj::Promise<void> tagHistory(TagHistoryContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName()), tag = Text(p.getTag());
    Require(ns, Role::kRead);
    ThrowIfError(ValidateName("model name", name));
    ThrowIfError(ValidateTag(tag));
    auto events = ctx_.store.TagHistory(ns, name, tag);
    auto out = c.getResults().initEvents(static_cast<unsigned>(events.size()));
    for (size_t i = 0; i < events.size(); ++i) FillTagEvent(events[i], out[static_cast<unsigned>(i)]);
    return kj::READY_NOW;
  }

  kj::Promise<void> deleteVersion(DeleteVersionContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName());
    Require(ns, Role::kAdmin);
    ThrowIfError(ValidateName("model name", name));
    VersionId id = ParseVersionId(p.getVersionId());
    Result<StoredVersion> doomed = ctx_.store.GetVersion(ns, name, id);
    ThrowIfError(doomed.status());
    std::string tagged;
    for (const auto& [tag, target] : ctx_.store.TagsOf(ns, name)) {
      if (target == id) tagged += (tagged.empty() ? "'" : ", '") + tag + "'";
    }
    if (!tagged.empty() && !p.getForce()) {
      ThrowIfError(Status::InvalidArgument("version " + id.ShortHex() + " of " + ns + "/" + name +
                                           " is tagged " + tagged +
                                           "; move the tag first or pass --force"));
    }
    ThrowIfError(ctx_.store.DeleteVersion(
        ns, name, id, MakeAudit("delete", ns + "/" + name + ":" + id.ToHex(),
                                p.getForce() ? "forced" : "")));
    ctx_.metrics.deletes++;
    Unindex(*doomed);
    return kj::READY_NOW;
  }

  kj::Promise<void> gc(GcContext c) override {
    Require("*", Role::kAdmin);  // chunks are shared by every namespace
    bool dry = c.getParams().getDryRun();
    int64_t grace = c.getParams().getGraceMs();
    if (grace < 0) grace = ctx_.options.gc_grace_ms;
    TrackerContext& ctx = ctx_;
    return ctx_.pool.Run<Result<GcResult>>([&ctx, dry, grace] { return RunChunkGc(ctx, dry, grace); })
        .then([this, c, dry](Result<GcResult> r) mutable {
          ThrowIfError(r.status());
          auto out = c.getResults().initReport();
          out.setReferencedChunks(r->referenced);
          out.setUnreferencedChunks(r->unreferenced);
          out.setSweptChunks(r->swept);
          out.setSweptBytes(r->swept_bytes);
          out.setYoungChunks(r->young);
          ThrowIfError(ctx_.store.Audit(MakeAudit(
              "gc", "chunks", (dry ? "dry-run " : "") + std::string("swept=") + std::to_string(r->swept))));
        });
  }

  kj::Promise<void> warm(WarmContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName()), ref = Text(p.getRef());
    Require(ns, Role::kWrite);
    ThrowIfError(ValidateName("model name", name));
    VersionId id = ResolveRef(ns, name, ref);
    Result<StoredVersion> v = ctx_.store.GetVersion(ns, name, id);
    ThrowIfError(v.status());
    Result<Manifest> m = DecodeManifest(v->manifest_bytes);
    ThrowIfError(m.status());
    ThrowIfError(ctx_.store.Audit(MakeAudit("warm", ns + "/" + name + ":" + id.ToHex(),
                                            "nodes=" + Text(p.getNodes()))));
    return RunWarm(ctx_, ns, name, id, *m, c);
  }

  kj::Promise<void> need(NeedContext c) override {
    std::string ns = Text(c.getParams().getNamespace()), name = Text(c.getParams().getName());
    Require(ns, Role::kRead);
    ThrowIfError(ValidateName("model name", name));
    AnswerNeed(ctx_, ns, name, c);
    return kj::READY_NOW;
  }

  kj::Promise<void> whoami(WhoamiContext c) override {
    FillIdentity(claims_, c.getResults().initIdentity());
    return kj::READY_NOW;
  }

 private:
  void Require(const std::string& ns, Role role) {
    Status s = claims_.Check(ns, role, NowMs());
    if (!s.ok()) {
      ctx_.metrics.auth_denied++;
      ThrowIfError(s);
    }
    if (ns != "*") ThrowIfError(ValidateName("namespace", ns));
  }

  AuditEntry MakeAudit(std::string action, std::string target, std::string detail) const {
    AuditEntry a;
    a.at_ms = NowMs();
    a.subject = claims_.subject;
    a.token_id = claims_.id;
    a.action = std::move(action);
    a.target = std::move(target);
    a.detail = std::move(detail);
    return a;
  }

  VersionId ResolveRef(const std::string& ns, const std::string& name, const std::string& ref) {
    if (ValidateTag(ref).ok()) {
      if (auto id = ctx_.store.GetTag(ns, name, ref)) return *id;
    }
    bool hex = ref.size() >= 8 && ref.size() <= 64 &&
               std::all_of(ref.begin(), ref.end(), [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); });
    if (!hex) {
      ThrowIfError(Status::NotFound("no tag '" + ref.substr(0, 130) + "' in " + ns + "/" + name));
    }
    Result<VersionId> id = ctx_.store.ResolveVersionPrefix(ns, name, ref);
    ThrowIfError(id.status());
    return *id;
  }

  // Keeps the newest keep_versions versions, and every tagged one.
  void ApplyRetention(const std::string& ns, const std::string& name) {
    uint32_t keep = ctx_.options.keep_versions;
    if (keep == 0) return;
    std::string next;
    auto versions = ctx_.store.ListVersions(ns, name, "", kMaxPage, &next);
    if (!versions.ok() || versions->size() <= keep) return;
    auto tags = ctx_.store.TagsOf(ns, name);
    for (size_t i = keep; i < versions->size(); ++i) {
      const VersionId& id = (*versions)[i].id;
      bool tagged = std::any_of(tags.begin(), tags.end(), [&](const auto& t) { return t.second == id; });
      if (tagged) continue;
      AuditEntry a = MakeAudit("retention", ns + "/" + name + ":" + id.ToHex(),
                               "keep_versions=" + std::to_string(keep));
      Result<StoredVersion> doomed = ctx_.store.GetVersion(ns, name, id);
      if (doomed.ok() && ctx_.store.DeleteVersion(ns, name, id, a).ok()) {
        ctx_.metrics.deletes++;
        Unindex(*doomed);
      }
    }
  }

  // A deleted version's files may no longer be announced on its account.
  void Unindex(const StoredVersion& v) {
    Result<Manifest> m = DecodeManifest(v.manifest_bytes);
    if (m.ok()) ctx_.torrents.Remove(*m);
  }

  TrackerContext& ctx_;
  const TokenClaims claims_;
  const std::string holder_;  // names this capability's upload leases
};

// One registered agent's membership; dropping it (the connection closing)
// removes the agent.
class AgentSessionImpl final : public proto::AgentSession::Server {
 public:
  AgentSessionImpl(TrackerContext& ctx, std::string id, proto::AgentControl::Client control)
      : ctx_(ctx), id_(std::move(id)) {
    ctx_.agent_controls.erase(id_);
    ctx_.agent_controls.emplace(id_, kj::mv(control));
  }
  ~AgentSessionImpl() noexcept(false) {
    ctx_.agent_controls.erase(id_);
    ctx_.agents.Leave(id_);
    Log(LogLevel::kInfo, "agent.leave", {{"agent", id_}});
  }

 protected:
  kj::Promise<void> heartbeat(HeartbeatContext c) override {
    auto s = c.getParams().getStats();
    AgentRecord r;
    r.id = id_;
    r.cached_bytes = s.getCachedBytes();
    r.cached_chunks = s.getCachedChunks();
    r.bytes_from_peers = s.getBytesFromPeers();
    r.bytes_from_origin = s.getBytesFromOrigin();
    r.bytes_to_peers = s.getBytesToPeers();
    r.torrents = s.getTorrents();
    r.peers = s.getPeers();
    if (!ctx_.agents.Heartbeat(r, NowMs())) {
      ThrowIfError(Status::Unavailable("agent " + id_ + " missed its heartbeats and was dropped; register again"));
    }
    c.getResults().setEpoch(ctx_.agents.epoch());
    return kj::READY_NOW;
  }

  kj::Promise<void> ring(RingContext c) override {
    std::vector<AgentRecord> members = ctx_.agents.Members(NowMs());
    auto out = c.getResults().initMembers(static_cast<unsigned>(members.size()));
    for (size_t i = 0; i < members.size(); ++i) {
      out[static_cast<unsigned>(i)].setAgentId(members[i].id);
      out[static_cast<unsigned>(i)].setWeight(members[i].cache_bytes);
    }
    c.getResults().setEpoch(ctx_.agents.epoch());
    return kj::READY_NOW;
  }

 private:
  TrackerContext& ctx_;
  const std::string id_;
};

class GatewayImpl final : public proto::Gateway::Server {
 public:
  GatewayImpl(TrackerContext& ctx, std::string peer_address, kj::Function<void()> on_authenticated)
      : ctx_(ctx), peer_address_(std::move(peer_address)), on_authenticated_(kj::mv(on_authenticated)) {}

 protected:
  kj::Promise<void> authenticate(AuthenticateContext c) override {
    Result<TokenClaims> claims = ctx_.tokens.Verify(Text(c.getParams().getToken()));
    if (claims.ok() && claims->expires_at_ms <= NowMs()) {
      claims = Status::PermissionDenied("token for '" + claims->subject +
                                        "' has expired; mint a new one with "
                                        "`shoal-tracker token create`");
    }
    if (!claims.ok()) {
      ctx_.metrics.auth_denied++;
      ThrowIfError(claims.status());
    }
    ctx_.metrics.auth_ok++;
    on_authenticated_();
    FillIdentity(*claims, c.getResults().initIdentity());
    c.getResults().setRegistry(kj::heap<RegistryImpl>(ctx_, std::move(claims).value()));
    return kj::READY_NOW;
  }

  kj::Promise<void> registerAgent(RegisterAgentContext c) override {
    auto p = c.getParams();
    Result<TokenClaims> claims = ctx_.tokens.Verify(Text(p.getToken()));
    Status s = claims.ok() ? claims->Check("*", Role::kRead, NowMs()) : claims.status();
    if (!s.ok()) {
      ctx_.metrics.auth_denied++;
      ThrowIfError(s.WithContext("agent registration needs a token for every namespace (--ns '*')"));
    }
    on_authenticated_();
    auto info = p.getInfo();
    AgentRecord r;
    r.name = Text(info.getName()).substr(0, 128);
    r.address = peer_address_;
    r.peer_port = info.getPeerPort();
    r.zone = Text(info.getZone()).substr(0, 64);
    r.cache_bytes = info.getCacheBytes();
    r.version = Text(info.getVersion()).substr(0, 64);
    for (auto label : info.getLabels()) {
      if (r.labels.size() < 32) r.labels.push_back(Text(label).substr(0, 128));
    }
    if (r.name.empty() || r.peer_port == 0) {
      ThrowIfError(Status::InvalidArgument("agent registration needs a name and a peer port"));
    }
    r.id = r.name + "@" + r.address + ":" + std::to_string(r.peer_port);
    std::string id = r.id;
    uint64_t epoch = ctx_.agents.Join(std::move(r), NowMs());
    Log(LogLevel::kInfo, "agent.join", {{"agent", id}, {"epoch", epoch}});
    auto results = c.getResults();
    results.setSession(kj::heap<AgentSessionImpl>(ctx_, id, p.getControl()));
    results.setAgentId(id);
    results.setEpoch(epoch);
    results.setHeartbeatMs(static_cast<uint32_t>(ctx_.agents.heartbeat_ms()));
    results.setHttpPort(ctx_.http_port);
    return kj::READY_NOW;
  }

  kj::Promise<void> publicKey(PublicKeyContext c) override {
    c.getResults().setKeyId(ctx_.signer.key_id());
    c.getResults().setKey(Raw(ctx_.signer.public_key()));
    return kj::READY_NOW;
  }

 private:
  TrackerContext& ctx_;
  const std::string peer_address_;  // the connection's remote IP
  kj::Function<void()> on_authenticated_;
};

}  // namespace

Status ValidateTag(const std::string& tag) {
  if (tag.empty() || tag.size() > 128) {
    return Status::InvalidArgument("tag '" + tag.substr(0, 130) + "' must be 1 to 128 bytes");
  }
  bool all_hex = tag.size() >= 8;
  for (char ch : tag) {
    bool ok = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
    if (!ok) {
      return Status::InvalidArgument("tag '" + tag + "' may only hold letters, digits and . _ -");
    }
    if (!std::isxdigit(static_cast<unsigned char>(ch))) all_hex = false;
  }
  if (all_hex) {
    return Status::InvalidArgument("tag '" + tag + "' looks like a version id; pick a tag with a "
                                   "non-hex letter");
  }
  return Status::OK();
}

kj::Own<proto::Gateway::Server> NewGateway(TrackerContext& ctx, const std::string& peer_address,
                                           kj::Function<void()> on_authenticated) {
  return kj::heap<GatewayImpl>(ctx, peer_address, kj::mv(on_authenticated));
}

}  // namespace shoal::tracker
