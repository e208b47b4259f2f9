#include "rpc/registry_publish.h"

#include "common/blocking_pool.h"
#include "common/tracker_metrics.h"
#include "common/tracker_options.h"
#include "shoal/manifest_codec.h"
#include "shoal/manifest_signer.h"
#include "shoal/utc_time.h"
#include "storage/origin_chunks.h"

namespace shoal::tracker {
namespace {

constexpr size_t kMaxErrorBytes = 512;

std::string Target(const std::string& ns, const std::string& name, const VersionId& id) {
  return ns + "/" + name + ":" + id.ToHex();
}

// A publisher's report of why its upload failed, fit for a one-line error:
// control characters become spaces, and it is cut at kMaxErrorBytes.
std::string OneLine(const std::string& error) {
  std::string out = error.substr(0, kMaxErrorBytes);
  for (char& ch : out) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = ' ';
  }
  return out;
}

std::string Joined(const std::vector<std::string>& tags) {
  std::string out;
  for (const std::string& t : tags) out += (out.empty() ? "" : ",") + t;
  return out;
}

OriginChunks Checks(const RegistryDeps& d) {
  return OriginChunks{d.store, d.origin, d.metrics, d.options.origin_parallelism};
}

}  // namespace

kj::Promise<Result<CommitDone>> StoreCommit(const RegistryDeps& d, const CommitRequest& request,
                                            AuditEntry audit) {
  OriginChunks oc = Checks(d);
  std::shared_ptr<const Manifest> m = request.manifest;
  kj::Promise<Status> checked =
      request.pending ? kj::Promise<Status>(Status::OK())
                      : d.pool.Run<Status>([oc, m] { return EnsureChunksInOrigin(oc, *m); });
  return checked.then([d, request, audit](Status s) mutable -> kj::Promise<Result<CommitDone>> {
    if (!s.ok()) {
      d.metrics.publish_rejected++;
      return Result<CommitDone>(s);
    }
    CommitDone done;
    StoredVersion& v = done.version;
    v.id = ComputeVersionId(*request.bytes);
    v.manifest_bytes = *request.bytes;
    v.signature = d.signer.Sign(v.id);
    v.signer_key_id = d.signer.key_id();
    v.created_at_ms = request.manifest->created_at_ms;
    audit.action = "publish";
    audit.target = Target(request.manifest->ns, request.manifest->name, v.id);
    audit.detail = "tags=" + Joined(*request.tags);
    if (request.pending) audit.detail += request.tag_early ? " pending tag-early" : " pending";
    const int64_t lease_until = NowMs() + d.options.publish_lease_ms;
    // The commit writes the manifest's copy to the origin, so it too runs
    // off the event loop.
    RegistryStore& store = d.store;
    return d.pool.Run<Result<CommitDone>>(
        [&store, request, audit, lease_until, done = std::move(done)]() -> Result<CommitDone> {
          CommitDone out = done;
          const Manifest& m = *request.manifest;
          if (request.pending) {
            Result<CommitOutcome> o = store.CommitPending(m, out.version, *request.tags, audit,
                                                          request.tag_early, lease_until);
            if (!o.ok()) return o.status();
            out.outcome = *o;
          } else {
            Result<bool> created = store.CommitVersion(m, out.version, *request.tags, audit);
            if (!created.ok()) return created.status();
            out.outcome.created = *created;
          }
          return out;
        });
  });
}

Result<uint32_t> RenewVersionUpload(const RegistryDeps& d, const std::string& ns,
                                    const std::string& name, const VersionId& id) {
  const int64_t now = NowMs();
  const int64_t lease = d.options.publish_lease_ms;
  Result<VersionState> state = d.store.RenewUpload(ns, name, id, now, now + lease);
  if (!state.ok()) return state.status();
  return *state == VersionState::kUploading ? static_cast<uint32_t>(lease) : uint32_t{0};
}

kj::Promise<Result<VersionState>> FinishVersionUpload(const RegistryDeps& d, const std::string& ns,
                                                      const std::string& name, const VersionId& id,
                                                      const std::string& error, AuditEntry audit) {
  RegistryStore& store = d.store;
  audit.target = Target(ns, name, id);
  if (!error.empty()) {
    audit.action = "publish-failed";
    audit.detail = OneLine(error);
    Result<VersionState> failed = store.FailUpload(ns, name, id, audit.detail, audit);
    if (failed.ok() && *failed == VersionState::kFailed) d.metrics.uploads_failed++;
    return failed;
  }
  Result<StoredVersion> v = store.GetVersion(ns, name, id);
  if (!v.ok()) return Result<VersionState>(v.status());
  Result<VersionUpload> upload = store.UploadOf(ns, name, id, NowMs());
  if (!upload.ok()) return Result<VersionState>(upload.status());
  if (upload->state == VersionState::kDurable) return Result<VersionState>(VersionState::kDurable);
  if (upload->state == VersionState::kFailed) {
    return Result<VersionState>(FailedVersionError(ns, name, id, upload->detail));
  }
  Result<Manifest> decoded = DecodeManifest(v->manifest_bytes);
  if (!decoded.ok()) return Result<VersionState>(decoded.status().WithContext("stored manifest"));
  auto m = std::make_shared<const Manifest>(std::move(decoded).value());
  audit.action = "durable";
  audit.detail = "tags=" + Joined(upload->held_tags);
  OriginChunks oc = Checks(d);
  TrackerMetrics& metrics = d.metrics;
  return d.pool.Run<Result<VersionState>>(
      [oc, &store, &metrics, m, ns, name, id, audit]() -> Result<VersionState> {
        Status in_origin = EnsureChunksInOrigin(oc, *m);
        if (!in_origin.ok()) {
          return in_origin.WithContext("the upload of " + ns + "/" + name + ":" + id.ShortHex() +
                                       " is not finished");
        }
        Result<VersionState> done = store.FinishUpload(ns, name, id, NowMs(), audit);
        if (done.ok()) metrics.uploads_durable++;
        return done;
      });
}

std::optional<NeedReply> NeedBeforeDurable(const RegistryDeps& d, const std::string& ns,
                                           const std::string& name, const VersionId& id,
                                           const std::vector<ChunkId>& chunks) {
  Result<VersionUpload> upload = d.store.UploadOf(ns, name, id, NowMs());
  if (!upload.ok() || upload->state == VersionState::kDurable) return std::nullopt;
  NeedReply reply;
  if (upload->state == VersionState::kUploading) {
    reply.pending = static_cast<uint32_t>(chunks.size());
    return reply;
  }
  const std::string why = FailedVersionError(ns, name, id, upload->detail).message();
  for (const ChunkId& c : chunks) reply.failed.push_back({c, why});
  return reply;
}

}  // namespace shoal::tracker
