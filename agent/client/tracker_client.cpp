#include "client/tracker_client.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include "capnp_views.h"
#include "kj_status.h"
#include "shoal/manifest_codec.h"
#include "shoal/manifest_signer.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal {
namespace {

std::string Str(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}
std::optional<VersionId> OptId(capnp::Data::Reader d) {
  if (d.size() != VersionId::kSize) return std::nullopt;
  return VersionId::FromBytes(d.begin());
}
void SetIds(capnp::List<capnp::Data>::Builder out, const std::vector<ChunkId>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) out.set(static_cast<unsigned>(i), Raw(ids[i]));
}
std::vector<ChunkId> GetIds(capnp::List<capnp::Data>::Reader in) {
  std::vector<ChunkId> out;
  for (auto d : in) {
    if (d.size() == ChunkId::kSize) out.push_back(ChunkId::FromBytes(d.begin()));
  }
  return out;
}

}  // namespace

Result<Manifest> VerifySignedManifest(const VersionId& id, const std::string& bytes,
                                      const std::string& signature, const std::string& public_key) {
  if (ComputeVersionId(bytes) != id) {
    return Status::Corruption("manifest bytes do not hash to version " + id.ShortHex());
  }
  SHOAL_RETURN_IF_ERROR(VerifyManifestSignature(id, signature, public_key));
  return DecodeManifest(bytes);
}

struct TrackerClient::Impl {
  Impl(kj::AsyncIoContext io_in, std::string peer_in)
      : io(kj::mv(io_in)), peer(std::move(peer_in)) {}
  kj::AsyncIoContext io;
  std::string peer;
  kj::Own<kj::AsyncIoStream> stream;
  kj::Own<capnp::TwoPartyClient> rpc;
  proto::Registry::Client registry = nullptr;
  Identity identity;
  std::string public_key;

  // Runs `fn` (which waits on promises) and turns any kj::Exception into a Status.
  template <typename Fn>
  Status Call(Fn&& fn) {
    KJ_IF_MAYBE (e, kj::runCatchingExceptions(std::forward<Fn>(fn))) {
      return StatusFromException(*e, "tracker " + peer);
    }
    return Status::OK();
  }

  Result<SignedVersion> FromSigned(proto::SignedManifest::Reader r) {
    SignedVersion v;
    if (r.getVersionId().size() != VersionId::kSize) {
      return Status::Corruption("tracker sent a version id that is not 32 bytes");
    }
    v.id = VersionId::FromBytes(r.getVersionId().begin());
    v.manifest_bytes = Str(r.getManifest());
    v.signature = Str(r.getSignature());
    v.signer_key_id = r.getSignerKeyId();
    Result<Manifest> m = VerifySignedManifest(v.id, v.manifest_bytes, v.signature, public_key);
    if (!m.ok()) return m.status().WithContext("manifest from tracker " + peer);
    v.manifest = std::move(m).value();
    return v;
  }
};

TrackerClient::TrackerClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrackerClient::~TrackerClient() = default;

const Identity& TrackerClient::identity() const { return impl_->identity; }

Result<std::unique_ptr<TrackerClient>> TrackerClient::Connect(const std::string& address,
                                                              const std::string& token,
                                                              const std::string& pinned_key_hex) {
  if (address.empty()) {
    return Status::InvalidArgument(
        "no tracker address; pass --tracker host:port or set SHOAL_TRACKER");
  }
  if (token.empty()) {
    return Status::InvalidArgument("no token; pass --token or set SHOAL_TOKEN");
  }
  auto impl = std::make_unique<Impl>(kj::setupAsyncIo(), address);
  Impl& c = *impl;
  Status s = c.Call([&] {
    auto addr = c.io.provider->getNetwork().parseAddress(address).wait(c.io.waitScope);
    c.stream = addr->connect().wait(c.io.waitScope);
    c.rpc = kj::heap<capnp::TwoPartyClient>(*c.stream);
    auto gateway = c.rpc->bootstrap().castAs<proto::Gateway>();
    auto key = gateway.publicKeyRequest().send().wait(c.io.waitScope);
    c.public_key = Str(key.getKey());
    auto req = gateway.authenticateRequest();
    req.setToken(token);
    auto resp = req.send().wait(c.io.waitScope);
    c.registry = resp.getRegistry();
    auto id = resp.getIdentity();
    c.identity.subject = id.getSubject();
    c.identity.role = static_cast<Role>(static_cast<int>(id.getRole()));
    for (auto ns : id.getNamespaces()) c.identity.namespaces.push_back(ns);
    c.identity.expires_at_ms = id.getExpiresAtMs();
  });
  if (!s.ok()) return s;
  if (!pinned_key_hex.empty() && hex::Encode(reinterpret_cast<const uint8_t*>(c.public_key.data()),
                                             c.public_key.size()) != pinned_key_hex) {
    return Status::PermissionDenied("tracker " + address + " signs with key " +
                                    ManifestKeyId(c.public_key) + ", not the pinned --tracker-key");
  }
  return std::unique_ptr<TrackerClient>(new TrackerClient(std::move(impl)));
}

Result<UploadPlan> TrackerClient::PlanUpload(const std::string& ns,
                                             const std::vector<ChunkId>& chunks) {
  UploadPlan plan;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.planUploadRequest();
    req.setNamespace(ns);
    SetIds(req.initChunks(static_cast<unsigned>(chunks.size())), chunks);
    auto resp = req.send().wait(impl_->io.waitScope);
    auto p = resp.getPlan();
    plan.upload = GetIds(p.getUpload());
    plan.wait = GetIds(p.getWait());
    plan.lease_ms = p.getLeaseMs();
  });
  if (!s.ok()) return s;
  return plan;
}

Status TrackerClient::ChunksStored(const std::string& ns, const std::vector<ChunkId>& chunks) {
  return impl_->Call([&] {
    auto req = impl_->registry.chunksStoredRequest();
    req.setNamespace(ns);
    SetIds(req.initChunks(static_cast<unsigned>(chunks.size())), chunks);
    req.send().wait(impl_->io.waitScope);
  });
}

Result<SignedVersion> TrackerClient::Commit(const std::string& manifest_bytes,
                                            const std::vector<std::string>& tags) {
  Result<SignedVersion> out = Status::Unavailable("no answer");
  Status s = impl_->Call([&] {
    auto req = impl_->registry.commitRequest();
    req.setManifest(Raw(manifest_bytes));
    auto t = req.initTags(static_cast<unsigned>(tags.size()));
    for (size_t i = 0; i < tags.size(); ++i) t.set(static_cast<unsigned>(i), tags[i]);
    auto resp = req.send().wait(impl_->io.waitScope);
    out = impl_->FromSigned(resp.getSigned());
    if (out.ok()) out->created = resp.getCreated();
  });
  if (!s.ok()) return s;
  return out;
}

Result<SignedVersion> TrackerClient::Resolve(const std::string& ns, const std::string& name,
                                             const std::string& ref) {
  Result<SignedVersion> out = Status::Unavailable("no answer");
  Status s = impl_->Call([&] {
    auto req = impl_->registry.resolveRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setRef(ref);
    auto resp = req.send().wait(impl_->io.waitScope);
    out = impl_->FromSigned(resp.getSigned());
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<ModelListing>> TrackerClient::ListModels(const std::string& ns) {
  std::vector<ModelListing> out;
  std::string after;
  Status s = impl_->Call([&] {
    do {
      auto req = impl_->registry.listModelsRequest();
      req.setNamespace(ns);
      req.setAfter(after);
      req.setLimit(500);
      auto resp = req.send().wait(impl_->io.waitScope);
      for (auto m : resp.getModels()) {
        ModelListing l;
        l.ns = m.getNamespace();
        l.name = m.getName();
        l.version_count = m.getVersionCount();
        l.latest = OptId(m.getLatestVersion());
        l.latest_at_ms = m.getLatestAtMs();
        for (auto t : m.getTags()) {
          if (auto id = OptId(t.getVersionId())) l.tags.emplace_back(t.getTag(), *id);
        }
        out.push_back(std::move(l));
      }
      after = resp.getNext();
    } while (!after.empty());
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<VersionListing>> TrackerClient::ListVersions(const std::string& ns,
                                                                const std::string& name) {
  std::vector<VersionListing> out;
  std::string after;
  Status s = impl_->Call([&] {
    do {
      auto req = impl_->registry.listVersionsRequest();
      req.setNamespace(ns);
      req.setName(name);
      req.setAfter(after);
      req.setLimit(500);
      auto resp = req.send().wait(impl_->io.waitScope);
      for (auto v : resp.getVersions()) {
        VersionListing l;
        if (auto id = OptId(v.getVersionId())) l.id = *id;
        l.created_by = v.getCreatedBy();
        l.created_at_ms = v.getCreatedAtMs();
        l.parent = OptId(v.getParentVersion());
        l.total_bytes = v.getTotalBytes();
        l.file_count = v.getFileCount();
        for (auto t : v.getTags()) l.tags.emplace_back(t);
        out.push_back(std::move(l));
      }
      after = resp.getNext();
    } while (!after.empty());
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::optional<VersionId>> TrackerClient::SetTag(const std::string& ns,
                                                       const std::string& name,
                                                       const std::string& tag,
                                                       const VersionId& id) {
  std::optional<VersionId> prev;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.setTagRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setTag(tag);
    req.setVersionId(Raw(id));
    prev = OptId(req.send().wait(impl_->io.waitScope).getPrevious());
  });
  if (!s.ok()) return s;
  return prev;
}

Result<std::vector<TagEventListing>> TrackerClient::TagHistory(const std::string& ns,
                                                               const std::string& name,
                                                               const std::string& tag) {
  std::vector<TagEventListing> out;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.tagHistoryRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setTag(tag);
    auto resp = req.send().wait(impl_->io.waitScope);
    for (auto e : resp.getEvents()) {
      out.push_back({OptId(e.getFromVersion()), OptId(e.getToVersion()), e.getBy(), e.getAtMs()});
    }
  });
  if (!s.ok()) return s;
  return out;
}

Status TrackerClient::DeleteVersion(const std::string& ns, const std::string& name,
                                    const VersionId& id, bool force) {
  return impl_->Call([&] {
    auto req = impl_->registry.deleteVersionRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setVersionId(Raw(id));
    req.setForce(force);
    req.send().wait(impl_->io.waitScope);
  });
}

namespace {
class WarmListenerImpl final : public proto::WarmListener::Server {
 public:
  explicit WarmListenerImpl(std::function<void(const WarmProgress&)> fn) : fn_(std::move(fn)) {}

 protected:
  kj::Promise<void> progress(ProgressContext c) override {
    auto p = c.getParams();
    fn_(WarmProgress{p.getChunksDone(), p.getChunks(), p.getNodesDone(), p.getNodes()});
    return kj::READY_NOW;
  }

 private:
  std::function<void(const WarmProgress&)> fn_;
};
}  // namespace

Result<WarmSummary> TrackerClient::Warm(const std::string& ns, const std::string& name,
                                        const std::string& ref, const std::string& nodes,
                                        std::function<void(const WarmProgress&)> progress) {
  WarmSummary w;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.warmRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setRef(ref);
    req.setNodes(nodes);
    if (progress) req.setListener(kj::heap<WarmListenerImpl>(std::move(progress)));
    auto r = req.send().wait(impl_->io.waitScope);
    w.owners = r.getOwners();
    w.chunks = r.getChunks();
    w.fetched = r.getFetched();
    w.failed = r.getFailed();
    w.bytes = r.getBytes();
    w.nodes = r.getNodes();
    w.nodes_failed = r.getNodesFailed();
  });
  if (!s.ok()) return s;
  return w;
}

Result<NeedSummary> TrackerClient::Need(const std::string& ns, const std::string& name,
                                        const VersionId& version,
                                        const std::vector<ChunkId>& chunks) {
  NeedSummary n;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.needRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setVersionId(Raw(version));
    SetIds(req.initChunks(static_cast<unsigned>(chunks.size())), chunks);
    auto r = req.send().wait(impl_->io.waitScope);
    n.queued = r.getQueued();
    n.pending = r.getPending();
    n.recent = r.getRecent();
    for (auto f : r.getFailed()) {
      if (f.getChunk().size() != ChunkId::kSize) continue;
      n.failed.push_back({ChunkId::FromBytes(f.getChunk().begin()), Text(f.getError())});
    }
  });
  if (!s.ok()) return s;
  return n;
}

Result<GcSummary> TrackerClient::Gc(bool dry_run, int64_t grace_ms) {
  GcSummary g;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.gcRequest();
    req.setDryRun(dry_run);
    req.setGraceMs(grace_ms);
    auto r = req.send().wait(impl_->io.waitScope).getReport();
    g = {r.getReferencedChunks(), r.getUnreferencedChunks(), r.getYoungChunks(), r.getSweptChunks(),
         r.getSweptBytes()};
  });
  if (!s.ok()) return s;
  return g;
}

}  // namespace shoal
