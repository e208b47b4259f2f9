// The registry's records (shoal/registry_records.h, shoal/need_reply.h) and
// agents' reports (shoal/agent_stats.h) in their Cap'n Proto form
// (proto/tracker.capnp): one Fill and one Read per record. The tracker fills
// them for its RPC replies, its LevelDB values and its HTTP JSON view;
// clients and the tracker read them back.
//
// Fill writes every field. Read refuses a version or chunk ID of the wrong
// size with InvalidArgument (see capnp_views.h); an optional ID may be empty.
// A version's state reads as ParseVersionState reads it (empty: durable).
#ifndef SHOAL_PROTO_RECORD_CODEC_H_
#define SHOAL_PROTO_RECORD_CODEC_H_

#include "shoal/agent_stats.h"
#include "shoal/manifest_signer.h"
#include "shoal/need_reply.h"
#include "shoal/peer_cert.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/registry_records.h"
#include "shoal/status.h"
#include "shoal/token_revocations.h"

namespace shoal {

void FillVersionInfo(const VersionInfo& v, proto::VersionSummary::Builder out);
Result<VersionInfo> ReadVersionInfo(proto::VersionSummary::Reader in);

// A mirrored version's upstream signature; nothing for an empty one.
void FillUpstream(const UpstreamSignature& u, proto::SignedManifest::Builder out);
// Empty if the record has none.
UpstreamSignature ReadUpstream(proto::SignedManifest::Reader in);

void FillModelInfo(const ModelInfo& m, proto::ModelSummary::Builder out);
Result<ModelInfo> ReadModelInfo(proto::ModelSummary::Reader in);

void FillTagChange(const TagChange& c, proto::TagEvent::Builder out);
Result<TagChange> ReadTagChange(proto::TagEvent::Reader in);

void FillAgentStats(const AgentStats& s, proto::AgentStats::Builder out);
AgentStats ReadAgentStats(proto::AgentStats::Reader in);

void FillPeerCert(const IssuedCert& c, proto::PeerCert::Builder out);
// not_before_ms is not sent, and reads as 0.
IssuedCert ReadPeerCert(proto::PeerCert::Reader in);

void FillRevocation(const Revocation& r, proto::Revocation::Builder out);
// InvalidArgument for a revocation Revocation::Validate refuses.
Result<Revocation> ReadRevocation(proto::Revocation::Reader in);

void FillNeedReply(const NeedReply& r, proto::Registry::NeedResults::Builder out);
Result<NeedReply> ReadNeedReply(proto::Registry::NeedResults::Reader in);

}  // namespace shoal

#endif  // SHOAL_PROTO_RECORD_CODEC_H_
