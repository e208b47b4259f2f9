#include "client/tracker_client.h"

#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>

#include <algorithm>
#include <random>

#include "proto/capnp_views.h"
#include "proto/kj_status.h"
#include "proto/record_codec.h"
#include "proto/rpc_tls.h"
#include "shoal/manifest_codec.h"
#include "shoal/manifest_signer.h"
#include "shoal/proto/tracker.capnp.h"

namespace shoal {
namespace {

// Listings come in pages of this many.
constexpr uint32_t kPageSize = 500;

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

  // The value read from a reply; a malformed reply throws, naming the tracker.
  template <typename T>
  T FromReply(Result<T> r) {
    ThrowIfError(r.status().WithContext("reply from tracker " + peer));
    return std::move(r).value();
  }

  // Appends every record of `list` read with `read` (a record_codec.h Read).
  template <typename List, typename Read, typename T>
  void ReadAll(List list, Read read, std::vector<T>* out) {
    for (auto r : list) out->push_back(FromReply(read(r)));
  }

  // Runs `page(after)`, one request that returns the reply's `next` token,
  // from the first page until the tracker says there are no more.
  template <typename Page>
  Status CallPages(Page&& page) {
    return Call([&] {
      std::string after;
      do {
        after = page(after);
      } while (!after.empty());
    });
  }

  Result<SignedVersion> FromSigned(proto::SignedManifest::Reader r) {
    SignedVersion v;
    Result<VersionId> id = ParseVersionId(r.getVersionId());
    if (!id.ok()) return id.status().WithContext("reply from tracker " + peer);
    v.id = *id;
    v.manifest_bytes = Bytes(r.getManifest());
    v.signature = Bytes(r.getSignature());
    v.signer_key_id = r.getSignerKeyId();
    Result<Manifest> m = VerifySignedManifest(v.id, v.manifest_bytes, v.signature, public_key);
    if (!m.ok()) return m.status().WithContext("manifest from tracker " + peer);
    v.manifest = std::move(m).value();
    v.upstream = ReadUpstream(r);
    if (!v.upstream.empty()) {
      Status up = v.upstream.Verify(v.id);
      if (!up.ok()) return up.WithContext("manifest from tracker " + peer);
    }
    return v;
  }
};

TrackerClient::TrackerClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TrackerClient::~TrackerClient() = default;

const Identity& TrackerClient::identity() const { return impl_->identity; }

const std::string& TrackerClient::public_key() const { return impl_->public_key; }

Result<WatchReply> TrackerClient::Watch(const std::vector<std::string>& namespaces, uint64_t after,
                                        uint32_t wait_ms) {
  WatchReply out;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.watchRequest();
    auto list = req.initNamespaces(static_cast<unsigned>(namespaces.size()));
    for (size_t i = 0; i < namespaces.size(); ++i)
      list.set(static_cast<unsigned>(i), namespaces[i]);
    req.setAfter(after);
    req.setWaitMs(wait_ms);
    auto resp = req.send().wait(impl_->io.waitScope);
    out.position = resp.getPosition();
    for (auto e : resp.getEvents()) {
      out.events.push_back({e.getSeq(), Text(e.getNamespace()), Text(e.getName()),
                            Text(e.getAction()), e.getAtMs()});
    }
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::unique_ptr<TrackerClient>> TrackerClient::Connect(const TrackerEndpoint& tracker,
                                                              const std::string& token,
                                                              const std::string& pinned_key_hex) {
  std::vector<std::string> addresses = tracker.Addresses();
  if (addresses.empty()) {
    return Status::InvalidArgument(
        "no tracker address; pass --tracker host:port or set SHOAL_TRACKER");
  }
  if (token.empty()) {
    return Status::InvalidArgument("no token; pass --token or set SHOAL_TOKEN");
  }
  // A fleet: start at a random one, so clients spread over the trackers,
  // and go on to the next only when one cannot be reached.
  std::random_device rd;
  const size_t first = addresses.size() > 1 ? rd() % addresses.size() : 0;
  std::string unreachable;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const std::string& one = addresses[(first + i) % addresses.size()];
    auto client = ConnectOne(tracker.At(one), token, pinned_key_hex);
    if (client.ok() || !client.status().IsUnavailable() || addresses.size() == 1) return client;
    unreachable += (unreachable.empty() ? "" : "; ") + client.status().message();
  }
  return Status::Unavailable("no tracker of " + tracker.address + " answered: " + unreachable);
}

Result<std::unique_ptr<TrackerClient>> TrackerClient::ConnectOne(
    const TrackerEndpoint& tracker, const std::string& token, const std::string& pinned_key_hex) {
  const std::string& address = tracker.address;
  auto impl = std::make_unique<Impl>(kj::setupAsyncIo(), address);
  Impl& c = *impl;
  Status s = c.Call([&] {
    c.stream = DialTracker(*c.io.provider, tracker).wait(c.io.waitScope);
    c.rpc = kj::heap<capnp::TwoPartyClient>(*c.stream);
    auto gateway = c.rpc->bootstrap().castAs<proto::Gateway>();
    auto key = gateway.publicKeyRequest().send().wait(c.io.waitScope);
    c.public_key = Bytes(key.getKey());
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
  if (s.code() == Status::Code::kUnavailable && !tracker.tls() &&
      s.message().find("refused this connection") == std::string::npos) {
    // A TLS port closes a plain client's connection without a word; a
    // refusal says why in words.
    return Status::Unavailable(s.message() + " (if it serves TLS, pass --tracker-ca)");
  }
  if (!s.ok()) return s;
  if (!pinned_key_hex.empty() && hex::Encode(reinterpret_cast<const uint8_t*>(c.public_key.data()),
                                             c.public_key.size()) != pinned_key_hex) {
    return Status::PermissionDenied("tracker " + address + " signs with key " +
                                    ManifestKeyId(c.public_key) + ", not the pinned --tracker-key");
  }
  return std::unique_ptr<TrackerClient>(new TrackerClient(std::move(impl)));
}

Result<UploadPlan> TrackerClient::PlanUpload(const std::string& ns,
                                             const std::vector<ChunkId>& chunks,
                                             const std::string& upload_id) {
  UploadPlan plan;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.planUploadRequest();
    req.setNamespace(ns);
    req.setUploadId(upload_id);
    SetChunkIds(chunks, req.initChunks(static_cast<unsigned>(chunks.size())));
    auto resp = req.send().wait(impl_->io.waitScope);
    auto p = resp.getPlan();
    plan.upload = impl_->FromReply(ParseChunkIds(p.getUpload()));
    plan.wait = impl_->FromReply(ParseChunkIds(p.getWait()));
    plan.lease_ms = p.getLeaseMs();
  });
  if (!s.ok()) return s;
  return plan;
}

Status TrackerClient::ChunksStored(const std::string& ns, const std::vector<ChunkId>& chunks) {
  return impl_->Call([&] {
    auto req = impl_->registry.chunksStoredRequest();
    req.setNamespace(ns);
    SetChunkIds(chunks, req.initChunks(static_cast<unsigned>(chunks.size())));
    req.send().wait(impl_->io.waitScope);
  });
}

Result<SignedVersion> TrackerClient::Commit(const std::string& manifest_bytes,
                                            const std::vector<std::string>& tags,
                                            const CommitOptions& options) {
  Result<SignedVersion> out = Status::Unavailable("no answer");
  Status s = impl_->Call([&] {
    auto req = impl_->registry.commitRequest();
    req.setManifest(Raw(manifest_bytes));
    auto t = req.initTags(static_cast<unsigned>(tags.size()));
    for (size_t i = 0; i < tags.size(); ++i) t.set(static_cast<unsigned>(i), tags[i]);
    req.setPending(options.pending);
    req.setTagEarly(options.tag_early);
    auto resp = req.send().wait(impl_->io.waitScope);
    out = impl_->FromSigned(resp.getSigned());
    if (!out.ok()) return;
    out->created = resp.getCreated();
    out->state = impl_->FromReply(ParseVersionState(Text(resp.getState())));
  });
  if (!s.ok()) return s;
  return out;
}

Result<uint32_t> TrackerClient::RenewUpload(const std::string& ns, const std::string& name,
                                            const VersionId& id) {
  uint32_t lease_ms = 0;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.renewUploadRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setVersionId(Raw(id));
    lease_ms = req.send().wait(impl_->io.waitScope).getLeaseMs();
  });
  if (!s.ok()) return s;
  return lease_ms;
}

Result<VersionState> TrackerClient::FinishUpload(const std::string& ns, const std::string& name,
                                                 const VersionId& id, const std::string& error) {
  VersionState state = VersionState::kDurable;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.finishUploadRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setVersionId(Raw(id));
    req.setError(error);
    auto resp = req.send().wait(impl_->io.waitScope);
    state = impl_->FromReply(ParseVersionState(Text(resp.getState())));
  });
  if (!s.ok()) return s;
  return state;
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
    if (out.ok()) out->state = impl_->FromReply(ParseVersionState(Text(resp.getState())));
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<ModelInfo>> TrackerClient::ListModels(const std::string& ns) {
  std::vector<ModelInfo> out;
  Status s = impl_->CallPages([&](const std::string& after) {
    auto req = impl_->registry.listModelsRequest();
    req.setNamespace(ns);
    req.setAfter(after);
    req.setLimit(kPageSize);
    auto resp = req.send().wait(impl_->io.waitScope);
    impl_->ReadAll(resp.getModels(), ReadModelInfo, &out);
    return Text(resp.getNext());
  });
  if (!s.ok()) return s;
  return out;
}

Result<std::vector<VersionInfo>> TrackerClient::ListVersions(
    const std::string& ns, const std::string& name, const std::vector<std::string>& labels) {
  SHOAL_RETURN_IF_ERROR(CheckLabelFilter(labels));
  std::vector<VersionInfo> out;
  Status s = impl_->CallPages([&](const std::string& after) {
    auto req = impl_->registry.listVersionsRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setAfter(after);
    req.setLimit(kPageSize);
    auto wanted = req.initLabels(static_cast<unsigned>(labels.size()));
    for (size_t i = 0; i < labels.size(); ++i) wanted.set(static_cast<unsigned>(i), labels[i]);
    auto resp = req.send().wait(impl_->io.waitScope);
    impl_->ReadAll(resp.getVersions(), ReadVersionInfo, &out);
    return Text(resp.getNext());
  });
  if (!s.ok()) return s;
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const VersionInfo& v) { return !v.HasLabels(labels); }),
            out.end());
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
    prev = impl_->FromReply(
        ParseOptionalVersionId(req.send().wait(impl_->io.waitScope).getPrevious()));
  });
  if (!s.ok()) return s;
  return prev;
}

Result<std::vector<TagChange>> TrackerClient::TagHistory(const std::string& ns,
                                                         const std::string& name,
                                                         const std::string& tag) {
  std::vector<TagChange> out;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.tagHistoryRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setTag(tag);
    impl_->ReadAll(req.send().wait(impl_->io.waitScope).getEvents(), ReadTagChange, &out);
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

Result<NeedReply> TrackerClient::Need(const std::string& ns, const std::string& name,
                                      const VersionId& version,
                                      const std::vector<ChunkId>& chunks) {
  NeedReply n;
  Status s = impl_->Call([&] {
    auto req = impl_->registry.needRequest();
    req.setNamespace(ns);
    req.setName(name);
    req.setVersionId(Raw(version));
    SetChunkIds(chunks, req.initChunks(static_cast<unsigned>(chunks.size())));
    n = impl_->FromReply(ReadNeedReply(req.send().wait(impl_->io.waitScope)));
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
