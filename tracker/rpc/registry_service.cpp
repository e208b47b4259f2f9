#include "rpc/registry_service.h"

#include <openssl/rand.h>

#include <algorithm>
#include <unordered_set>

#include "auth/token_verifier.h"
#include "common/blocking_pool.h"
#include "common/tracker_metrics.h"
#include "common/tracker_options.h"
#include "federation/registry_watch.h"
#include "proto/capnp_views.h"
#include "proto/kj_status.h"
#include "proto/record_codec.h"
#include "registry/record_fill.h"
#include "registry/registry_store.h"
#include "rpc/registry_publish.h"
#include "scheduler/fetch_requests.h"
#include "shoal/hash256.h"
#include "shoal/log.h"
#include "shoal/manifest_codec.h"
#include "shoal/manifest_signer.h"
#include "shoal/utc_time.h"
#include "storage/chunk_gc.h"
#include "storage/origin_chunks.h"
#include "storage/upload_leases.h"
#include "swarm/torrent_index.h"

namespace shoal::tracker {
namespace {

constexpr uint32_t kDefaultPage = 100;
constexpr uint32_t kMaxPage = 1000;

// The chunks a request names: no more than one manifest can hold.
std::vector<ChunkId> RequestedChunks(capnp::List<capnp::Data>::Reader list) {
  if (list.size() > ManifestLimits::kMaxTotalPieces) {
    ThrowIfError(Status::InvalidArgument("too many chunks in one request (" +
                                         std::to_string(list.size()) + ")"));
  }
  return ValueOrThrow(ParseChunkIds(list));
}

uint32_t PageLimit(uint32_t asked) { return asked == 0 ? kDefaultPage : std::min(asked, kMaxPage); }

std::string RandomHex(size_t bytes) {
  std::vector<uint8_t> buf(bytes);
  RAND_bytes(buf.data(), static_cast<int>(buf.size()));
  return hex::Encode(buf.data(), buf.size());
}

class RegistryImpl final : public proto::Registry::Server {
 public:
  RegistryImpl(const RegistryDeps& d, TokenClaims claims, kj::Timer& timer)
      : d_(d),
        claims_(std::move(claims)),
        holder_(claims_.id + "/" + RandomHex(8)),
        timer_(timer) {}

 protected:
  kj::Promise<void> planUpload(PlanUploadContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace());
    Require(ns, Role::kWrite);
    NotMirrored(ns);
    auto ids = std::make_shared<std::vector<ChunkId>>(RequestedChunks(p.getChunks()));
    OriginChunks oc = Checks();
    UploadLeases& leases = d_.leases;
    const int64_t ttl = d_.options.upload_lease_ms;
    // A named publish's leases are its token's and that name's, whichever
    // connection or tracker it comes back through.
    std::string upload_id = Text(p.getUploadId());
    if (upload_id.size() > 64) ThrowIfError(Status::InvalidArgument("uploadId over 64 characters"));
    std::string holder = upload_id.empty() ? holder_ : claims_.id + "/publish/" + upload_id;
    return d_.pool
        .Run<Result<UploadPlan>>([oc, &leases, ids, holder = std::move(holder), ttl] {
          return PlanUpload(oc, leases, *ids, holder, ttl);
        })
        .then([c, ttl](Result<UploadPlan> r) mutable {
          ThrowIfError(r.status());
          auto plan = c.getResults().initPlan();
          SetChunkIds(r->upload, plan.initUpload(static_cast<unsigned>(r->upload.size())));
          SetChunkIds(r->wait, plan.initWait(static_cast<unsigned>(r->wait.size())));
          plan.setLeaseMs(static_cast<uint32_t>(ttl));
        });
  }

  kj::Promise<void> chunksStored(ChunksStoredContext c) override {
    auto p = c.getParams();
    Require(Text(p.getNamespace()), Role::kWrite);
    auto ids = std::make_shared<std::vector<ChunkId>>(RequestedChunks(p.getChunks()));
    OriginChunks oc = Checks();
    UploadLeases& leases = d_.leases;
    return d_.pool.Run<Status>([oc, &leases, ids] { return RecordStored(oc, leases, *ids); })
        .then([](Status s) { ThrowIfError(s); });
  }

  kj::Promise<void> commit(CommitContext c) override {
    auto p = c.getParams();
    auto bytes = std::make_shared<std::string>(Bytes(p.getManifest()));
    Result<Manifest> decoded = DecodeManifest(*bytes);
    if (!decoded.ok()) {
      d_.metrics.publish_rejected++;
      ThrowIfError(decoded.status().WithContext("manifest refused"));
    }
    auto m = std::make_shared<Manifest>(std::move(decoded).value());
    Require(m->ns, Role::kWrite);
    NotMirrored(m->ns);
    if (m->created_by != claims_.subject) {
      d_.metrics.publish_rejected++;
      ThrowIfError(Status::PermissionDenied("manifest says it was created by '" + m->created_by +
                                            "' but the token is for '" + claims_.subject + "'"));
    }
    auto tags = std::make_shared<std::vector<std::string>>();
    for (auto t : p.getTags()) {
      tags->push_back(Text(t));
      ThrowIfError(ValidateTag(tags->back()));
    }
    CommitRequest request{m, bytes, tags, p.getPending(), p.getTagEarly()};
    return StoreCommit(d_, request, MakeAudit("publish", "", ""))
        .then([this, c, m](Result<CommitDone> done) mutable {
          ThrowIfError(done.status());
          if (done->outcome.created) {
            d_.metrics.publishes++;
            d_.torrents.Add(done->version.id, *m);
          }
          if (done->outcome.state == VersionState::kUploading) d_.metrics.pending_commits++;
          ApplyRetention(m->ns, m->name);
          FillSigned(done->version, c.getResults().initSigned());
          c.getResults().setCreated(done->outcome.created);
          c.getResults().setState(VersionStateName(done->outcome.state));
        });
  }

  kj::Promise<void> resolve(ResolveContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName()), ref = Text(p.getRef());
    RequireModel(ns, name, Role::kRead);
    d_.metrics.resolves++;
    VersionId id = ResolveRef(ns, name, ref);
    Result<StoredVersion> v = d_.store.GetVersion(ns, name, id);
    ThrowIfError(v.status());
    VersionUpload upload = ValueOrThrow(d_.store.UploadOf(ns, name, id, NowMs()));
    if (upload.state == VersionState::kFailed) {
      ThrowIfError(FailedVersionError(ns, name, id, upload.detail));
    }
    FillSigned(*v, c.getResults().initSigned());
    c.getResults().setState(VersionStateName(upload.state));
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
    auto models = d_.store.ListModels(ns, Text(p.getAfter()), PageLimit(p.getLimit()), &next);
    ThrowIfError(models.status());
    auto out = c.getResults().initModels(static_cast<unsigned>(models->size()));
    for (size_t i = 0; i < models->size(); ++i) {
      FillModelInfo((*models)[i], out[static_cast<unsigned>(i)]);
    }
    c.getResults().setNext(next);
    return kj::READY_NOW;
  }

  kj::Promise<void> listVersions(ListVersionsContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName());
    RequireModel(ns, name, Role::kRead);
    std::string next;
    std::vector<std::string> labels;
    for (auto l : p.getLabels()) labels.push_back(Text(l));
    ThrowIfError(CheckLabelFilter(labels));
    auto versions =
        d_.store.ListVersions(ns, name, Text(p.getAfter()), PageLimit(p.getLimit()), &next, labels);
    ThrowIfError(versions.status());
    auto out = c.getResults().initVersions(static_cast<unsigned>(versions->size()));
    for (size_t i = 0; i < versions->size(); ++i) {
      FillVersionInfo((*versions)[i], out[static_cast<unsigned>(i)]);
    }
    c.getResults().setNext(next);
    return kj::READY_NOW;
  }

  kj::Promise<void> setTag(SetTagContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName()), tag = Text(p.getTag());
    RequireModel(ns, name, Role::kWrite);
    NotMirrored(ns);
    ThrowIfError(ValidateTag(tag));
    VersionId id = ValueOrThrow(ParseVersionId(p.getVersionId()));
    ThrowIfError(d_.store.GetVersion(ns, name, id).status());
    std::optional<VersionId> prev = ValueOrThrow(d_.store.GetTag(ns, name, tag));
    if (prev && *prev == id) return kj::READY_NOW;
    TagChange change{ns, name, tag, prev, id, claims_.subject, NowMs()};
    prev = ValueOrThrow(d_.store.SetTag(
        change, MakeAudit("tag", ns + "/" + name + ":" + tag,
                          (prev ? prev->ToHex() : std::string("(new)")) + " -> " + id.ToHex())));
    d_.metrics.tag_moves++;
    if (prev) c.getResults().setPrevious(Raw(*prev));
    return kj::READY_NOW;
  }

  kj::Promise<void> tagHistory(TagHistoryContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName()), tag = Text(p.getTag());
    RequireModel(ns, name, Role::kRead);
    ThrowIfError(ValidateTag(tag));
    std::vector<TagChange> events = ValueOrThrow(d_.store.TagHistory(ns, name, tag));
    auto out = c.getResults().initEvents(static_cast<unsigned>(events.size()));
    for (size_t i = 0; i < events.size(); ++i)
      FillTagChange(events[i], out[static_cast<unsigned>(i)]);
    return kj::READY_NOW;
  }

  kj::Promise<void> deleteVersion(DeleteVersionContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName());
    RequireModel(ns, name, Role::kAdmin);
    VersionId id = ValueOrThrow(ParseVersionId(p.getVersionId()));
    Result<StoredVersion> doomed = d_.store.GetVersion(ns, name, id);
    ThrowIfError(doomed.status());
    std::string tagged;
    for (const auto& [tag, target] : ValueOrThrow(d_.store.TagsOf(ns, name))) {
      if (target == id) tagged += (tagged.empty() ? "'" : ", '") + tag + "'";
    }
    if (!tagged.empty() && !p.getForce()) {
      ThrowIfError(Status::InvalidArgument("version " + id.ShortHex() + " of " + ns + "/" + name +
                                           " is tagged " + tagged +
                                           "; move the tag first or pass --force"));
    }
    ThrowIfError(d_.store.DeleteVersion(
        ns, name, id,
        MakeAudit("delete", ns + "/" + name + ":" + id.ToHex(), p.getForce() ? "forced" : "")));
    d_.metrics.deletes++;
    Unindex(*doomed);
    return kj::READY_NOW;
  }

  kj::Promise<void> gc(GcContext c) override {
    Require("*", Role::kAdmin);  // chunks are shared by every namespace
    bool dry = c.getParams().getDryRun();
    int64_t grace = c.getParams().getGraceMs();
    if (grace < 0) grace = d_.options.gc_grace_ms;
    RegistryStore& store = d_.store;
    Origin& origin = d_.origin;
    UploadLeases& leases = d_.leases;
    TrackerMetrics& metrics = d_.metrics;
    return d_.pool
        .Run<Result<GcResult>>([&store, &origin, &leases, &metrics, dry, grace] {
          return RunChunkGc(store, origin, leases, metrics, dry, grace);
        })
        .then([this, c, dry](Result<GcResult> r) mutable {
          ThrowIfError(r.status());
          auto out = c.getResults().initReport();
          out.setReferencedChunks(r->referenced);
          out.setUnreferencedChunks(r->unreferenced);
          out.setSweptChunks(r->swept);
          out.setSweptBytes(r->swept_bytes);
          out.setYoungChunks(r->young);
          ThrowIfError(d_.store.Audit(MakeAudit(
              "gc", "chunks",
              (dry ? "dry-run " : "") + std::string("swept=") + std::to_string(r->swept))));
        });
  }

  kj::Promise<void> warm(WarmContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName()), ref = Text(p.getRef());
    RequireModel(ns, name, Role::kWrite);
    VersionId id = ResolveRef(ns, name, ref);
    Result<StoredVersion> v = d_.store.GetVersion(ns, name, id);
    ThrowIfError(v.status());
    Result<Manifest> m = DecodeManifest(v->manifest_bytes);
    ThrowIfError(m.status());
    ThrowIfError(d_.store.Audit(
        MakeAudit("warm", ns + "/" + name + ":" + id.ToHex(), "nodes=" + Text(p.getNodes()))));
    return RunWarm(d_.warm, ns, name, id, *m, c);
  }

  kj::Promise<void> need(NeedContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName());
    RequireModel(ns, name, Role::kRead);
    const VersionId id = ValueOrThrow(ParseVersionId(p.getVersionId()));
    if (auto held =
            NeedBeforeDurable(d_, ns, name, id, ValueOrThrow(ParseChunkIds(p.getChunks())))) {
      FillNeedReply(*held, c.getResults());
      return kj::READY_NOW;
    }
    return AnswerNeed(d_.warm, ns, name, c);
  }

  kj::Promise<void> renewUpload(RenewUploadContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName());
    RequireModel(ns, name, Role::kWrite);
    VersionId id = ValueOrThrow(ParseVersionId(p.getVersionId()));
    c.getResults().setLeaseMs(ValueOrThrow(RenewVersionUpload(d_, ns, name, id)));
    return kj::READY_NOW;
  }

  kj::Promise<void> finishUpload(FinishUploadContext c) override {
    auto p = c.getParams();
    std::string ns = Text(p.getNamespace()), name = Text(p.getName());
    RequireModel(ns, name, Role::kWrite);
    VersionId id = ValueOrThrow(ParseVersionId(p.getVersionId()));
    return FinishVersionUpload(d_, ns, name, id, Text(p.getError()), MakeAudit("", "", ""))
        .then([c](Result<VersionState> state) mutable {
          c.getResults().setState(VersionStateName(ValueOrThrow(state)));
        });
  }

  kj::Promise<void> watch(WatchContext c) override {
    auto p = c.getParams();
    std::vector<std::string> namespaces;
    for (auto n : p.getNamespaces()) {
      namespaces.push_back(Text(n));
      Require(namespaces.back(), Role::kRead);
    }
    if (namespaces.empty() || namespaces.size() > 64) {
      ThrowIfError(Status::InvalidArgument("watch names 1 to 64 namespaces"));
    }
    return AnswerWatch(WatchDeps{d_.store, d_.pool, d_.changes, timer_}, std::move(namespaces),
                       p.getAfter(), p.getWaitMs(), c);
  }

  kj::Promise<void> whoami(WhoamiContext c) override {
    StillValid();
    FillIdentity(claims_, c.getResults().initIdentity());
    return kj::READY_NOW;
  }

 private:
  // The token was verified when this capability was made; it may have
  // expired or been revoked since.
  void StillValid() {
    Status s = d_.tokens.StillValid(claims_, NowMs());
    if (!s.ok()) {
      d_.metrics.auth_denied++;
      ThrowIfError(s);
    }
  }

  void Require(const std::string& ns, Role role) {
    StillValid();
    Status s = claims_.Check(ns, role, NowMs());
    if (!s.ok()) {
      d_.metrics.auth_denied++;
      ThrowIfError(s);
    }
    if (ns != "*") ThrowIfError(ValidateName("namespace", ns));
  }

  // A mirrored namespace (--follow) takes its versions and tags from the
  // upstream alone.
  void NotMirrored(const std::string& ns) {
    if (!d_.options.follow.Mirrors(ns)) return;
    d_.metrics.publish_rejected++;
    ThrowIfError(Status::PermissionDenied("namespace '" + ns + "' is a read-only mirror of " +
                                          d_.options.follow.upstream +
                                          "; publish and tag it there"));
  }

  void RequireModel(const std::string& ns, const std::string& name, Role role) {
    Require(ns, role);
    ThrowIfError(ValidateName("model name", name));
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
      if (auto id = ValueOrThrow(d_.store.GetTag(ns, name, ref))) return *id;
    }
    bool hex = ref.size() >= 8 && ref.size() <= 64 &&
               std::all_of(ref.begin(), ref.end(),
                           [](char ch) { return std::isxdigit(static_cast<unsigned char>(ch)); });
    if (!hex) {
      ThrowIfError(Status::NotFound("no tag '" + ref.substr(0, 130) + "' in " + ns + "/" + name));
    }
    Result<VersionId> id = d_.store.ResolveVersionPrefix(ns, name, ref);
    ThrowIfError(id.status());
    return *id;
  }

  // Keeps the newest keep_versions versions, and every tagged one.
  void ApplyRetention(const std::string& ns, const std::string& name) {
    uint32_t keep = d_.options.keep_versions;
    if (keep == 0) return;
    std::string next;
    auto versions = d_.store.ListVersions(ns, name, "", kMaxPage, &next);
    if (!versions.ok() || versions->size() <= keep) return;
    for (size_t i = keep; i < versions->size(); ++i) {
      // A version still uploading may hold tags, to move once it is durable.
      if (!(*versions)[i].tags.empty() || (*versions)[i].state == VersionState::kUploading) {
        continue;
      }
      const VersionId& id = (*versions)[i].id;
      AuditEntry a = MakeAudit("retention", ns + "/" + name + ":" + id.ToHex(),
                               "keep_versions=" + std::to_string(keep));
      Result<StoredVersion> doomed = d_.store.GetVersion(ns, name, id);
      if (doomed.ok() && d_.store.DeleteVersion(ns, name, id, a).ok()) {
        d_.metrics.deletes++;
        Unindex(*doomed);
      }
    }
  }

  // A deleted version's files may no longer be announced on its account.
  void Unindex(const StoredVersion& v) { d_.torrents.Remove(v.id); }

  // What the checks against the origin touch; copied onto the blocking
  // pool, so a client that hangs up mid-call cannot pull memory away.
  OriginChunks Checks() const {
    return OriginChunks{d_.store, d_.origin, d_.metrics, d_.options.origin_parallelism};
  }

  const RegistryDeps d_;
  const TokenClaims claims_;
  const std::string holder_;  // names this capability's upload leases
  kj::Timer& timer_;
};

}  // namespace

kj::Own<proto::Registry::Server> NewRegistry(const RegistryDeps& deps, TokenClaims claims,
                                             kj::Timer& timer) {
  return kj::heap<RegistryImpl>(deps, std::move(claims), timer);
}

}  // namespace shoal::tracker
