#include "proto/record_codec.h"

#include "proto/capnp_views.h"

namespace shoal {

void FillVersionInfo(const VersionInfo& v, proto::VersionSummary::Builder out) {
  out.setNamespace(v.ns);
  out.setName(v.name);
  out.setVersionId(Raw(v.id));
  out.setCreatedBy(v.created_by);
  out.setCreatedAtMs(v.created_at_ms);
  if (v.parent) out.setParentVersion(Raw(*v.parent));
  out.setTotalBytes(v.total_bytes);
  out.setFileCount(v.file_count);
  auto tags = out.initTags(static_cast<unsigned>(v.tags.size()));
  for (size_t i = 0; i < v.tags.size(); ++i) tags.set(static_cast<unsigned>(i), v.tags[i]);
  out.setState(VersionStateName(v.state));
  out.setStateDetail(v.state_detail);
  auto labels = out.initLabels(static_cast<unsigned>(v.labels.size()));
  for (size_t i = 0; i < v.labels.size(); ++i) labels.set(static_cast<unsigned>(i), v.labels[i]);
}

Result<VersionInfo> ReadVersionInfo(proto::VersionSummary::Reader in) {
  VersionInfo v;
  v.ns = Text(in.getNamespace());
  v.name = Text(in.getName());
  Result<VersionId> id = ParseVersionId(in.getVersionId());
  if (!id.ok()) return id.status();
  v.id = *id;
  v.created_by = Text(in.getCreatedBy());
  v.created_at_ms = in.getCreatedAtMs();
  Result<std::optional<VersionId>> parent = ParseOptionalVersionId(in.getParentVersion());
  if (!parent.ok()) return parent.status().WithContext("parent");
  v.parent = *parent;
  v.total_bytes = in.getTotalBytes();
  v.file_count = in.getFileCount();
  for (auto t : in.getTags()) v.tags.push_back(Text(t));
  Result<VersionState> state = ParseVersionState(Text(in.getState()));
  if (!state.ok()) return state.status();
  v.state = *state;
  v.state_detail = Text(in.getStateDetail());
  for (auto l : in.getLabels()) v.labels.push_back(Text(l));
  return v;
}

void FillUpstream(const UpstreamSignature& u, proto::SignedManifest::Builder out) {
  if (u.empty()) return;
  auto up = out.initUpstream();
  up.setTracker(u.tracker);
  up.setSignature(Raw(u.signature));
  up.setSignerKeyId(u.signer_key_id);
  up.setPublicKey(Raw(u.public_key));
  up.setCopiedAtMs(u.copied_at_ms);
}

UpstreamSignature ReadUpstream(proto::SignedManifest::Reader in) {
  UpstreamSignature u;
  if (!in.hasUpstream()) return u;
  auto up = in.getUpstream();
  u.tracker = Text(up.getTracker());
  u.signature = Bytes(up.getSignature());
  u.signer_key_id = Text(up.getSignerKeyId());
  u.public_key = Bytes(up.getPublicKey());
  u.copied_at_ms = up.getCopiedAtMs();
  return u;
}

void FillModelInfo(const ModelInfo& m, proto::ModelSummary::Builder out) {
  out.setNamespace(m.ns);
  out.setName(m.name);
  out.setVersionCount(m.version_count);
  if (m.latest) {
    out.setLatestVersion(Raw(*m.latest));
    out.setLatestAtMs(m.latest_at_ms);
  }
  auto tags = out.initTags(static_cast<unsigned>(m.tags.size()));
  for (size_t i = 0; i < m.tags.size(); ++i) {
    tags[static_cast<unsigned>(i)].setTag(m.tags[i].first);
    tags[static_cast<unsigned>(i)].setVersionId(Raw(m.tags[i].second));
  }
}

Result<ModelInfo> ReadModelInfo(proto::ModelSummary::Reader in) {
  ModelInfo m;
  m.ns = Text(in.getNamespace());
  m.name = Text(in.getName());
  m.version_count = in.getVersionCount();
  Result<std::optional<VersionId>> latest = ParseOptionalVersionId(in.getLatestVersion());
  if (!latest.ok()) return latest.status().WithContext("latest version");
  m.latest = *latest;
  m.latest_at_ms = in.getLatestAtMs();
  for (auto t : in.getTags()) {
    Result<VersionId> id = ParseVersionId(t.getVersionId());
    if (!id.ok()) return id.status().WithContext("tag " + Text(t.getTag()));
    m.tags.emplace_back(Text(t.getTag()), *id);
  }
  return m;
}

void FillTagChange(const TagChange& c, proto::TagEvent::Builder out) {
  out.setNamespace(c.ns);
  out.setName(c.name);
  out.setTag(c.tag);
  if (c.from) out.setFromVersion(Raw(*c.from));
  if (c.to) out.setToVersion(Raw(*c.to));
  out.setBy(c.by);
  out.setAtMs(c.at_ms);
}

Result<TagChange> ReadTagChange(proto::TagEvent::Reader in) {
  TagChange c;
  c.ns = Text(in.getNamespace());
  c.name = Text(in.getName());
  c.tag = Text(in.getTag());
  Result<std::optional<VersionId>> from = ParseOptionalVersionId(in.getFromVersion());
  if (!from.ok()) return from.status().WithContext("tag " + c.tag + " moved from");
  Result<std::optional<VersionId>> to = ParseOptionalVersionId(in.getToVersion());
  if (!to.ok()) return to.status().WithContext("tag " + c.tag + " moved to");
  c.from = *from;
  c.to = *to;
  c.by = Text(in.getBy());
  c.at_ms = in.getAtMs();
  return c;
}

void FillPeerCert(const IssuedCert& c, proto::PeerCert::Builder out) {
  out.setPem(c.cert_pem);
  out.setNotAfterMs(c.not_after_ms);
}

IssuedCert ReadPeerCert(proto::PeerCert::Reader in) {
  IssuedCert c;
  c.cert_pem = in.getPem();
  c.not_after_ms = in.getNotAfterMs();
  return c;
}

void FillRevocation(const Revocation& r, proto::Revocation::Builder out) {
  out.setSeq(r.seq);
  out.setKind(r.kind == Revocation::Kind::kSubject ? proto::Revocation::Kind::SUBJECT
                                                   : proto::Revocation::Kind::TOKEN_ID);
  out.setValue(r.value);
  out.setCutoffMs(r.cutoff_ms);
  out.setAtMs(r.at_ms);
  out.setBy(r.by);
}

Result<Revocation> ReadRevocation(proto::Revocation::Reader in) {
  Revocation r;
  r.seq = in.getSeq();
  r.kind = in.getKind() == proto::Revocation::Kind::SUBJECT ? Revocation::Kind::kSubject
                                                            : Revocation::Kind::kTokenId;
  r.value = Text(in.getValue());
  r.cutoff_ms = in.getCutoffMs();
  r.at_ms = in.getAtMs();
  r.by = Text(in.getBy());
  SHOAL_RETURN_IF_ERROR(r.Validate());
  return r;
}

void FillAgentStats(const AgentStats& s, proto::AgentStats::Builder out) {
  out.setCachedBytes(s.cached_bytes);
  out.setCachedChunks(s.cached_chunks);
  out.setBytesFromPeers(s.bytes_from_peers);
  out.setBytesFromOrigin(s.bytes_from_origin);
  out.setBytesToPeers(s.bytes_to_peers);
  out.setTorrents(s.torrents);
  out.setPeers(s.peers);
  out.setOriginBytesRead(s.origin_bytes_read);
}

AgentStats ReadAgentStats(proto::AgentStats::Reader in) {
  AgentStats s;
  s.cached_bytes = in.getCachedBytes();
  s.cached_chunks = in.getCachedChunks();
  s.bytes_from_peers = in.getBytesFromPeers();
  s.bytes_from_origin = in.getBytesFromOrigin();
  s.bytes_to_peers = in.getBytesToPeers();
  s.torrents = in.getTorrents();
  s.peers = in.getPeers();
  s.origin_bytes_read = in.getOriginBytesRead();
  return s;
}

void FillNeedReply(const NeedReply& r, proto::Registry::NeedResults::Builder out) {
  out.setQueued(r.queued);
  out.setPending(r.pending);
  out.setRecent(r.recent);
  auto failed = out.initFailed(static_cast<unsigned>(r.failed.size()));
  for (size_t i = 0; i < r.failed.size(); ++i) {
    failed[static_cast<unsigned>(i)].setChunk(Raw(r.failed[i].first));
    failed[static_cast<unsigned>(i)].setError(r.failed[i].second);
  }
}

Result<NeedReply> ReadNeedReply(proto::Registry::NeedResults::Reader in) {
  NeedReply r;
  r.queued = in.getQueued();
  r.pending = in.getPending();
  r.recent = in.getRecent();
  for (auto f : in.getFailed()) {
    Result<ChunkId> chunk = ParseChunkId(f.getChunk());
    if (!chunk.ok()) return chunk.status().WithContext("failed chunk");
    r.failed.emplace_back(*chunk, Text(f.getError()));
  }
  return r;
}

}  // namespace shoal
