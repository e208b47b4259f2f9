// The JSON bodies EtcdClient sends to etcd's gateway and reads back,
// through Cap'n Proto's JsonCodec and proto/etcd.capnp. Cap'n Proto stays
// inside etcd_codec.cpp; this header is plain C++.
//
// Decoders fail with Corruption when a body is not the JSON they expect.
// Thread-safety: every function may be called from any thread.
#ifndef SHOAL_TRACKER_ETCD_CODEC_H_
#define SHOAL_TRACKER_ETCD_CODEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kv/etcd_client.h"
#include "shoal/status.h"

namespace shoal::tracker::etcd_codec {

std::string EncodeRange(const RangeRequest& request);
std::string EncodePut(const std::string& key, const std::string& value, int64_t lease);
std::string EncodeDelete(const std::string& key, const std::string& range_end);
std::string EncodeTxn(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                      const std::vector<TxnOp>& failure);
std::string EncodeLeaseGrant(int64_t ttl_s);
// The body of /v3/lease/keepalive and /v3/lease/revoke.
std::string EncodeLeaseId(int64_t lease);

Result<RangeResult> DecodeRange(const std::string& body);
// The revision in the answer's header: a put's revision.
Result<int64_t> DecodeRevision(const std::string& body);
Result<int64_t> DecodeDeleted(const std::string& body);
Result<TxnResult> DecodeTxn(const std::string& body);
// The new lease's ID; a non-empty `error` field fails with Unavailable.
Result<int64_t> DecodeLeaseGrant(const std::string& body);
// The TTL left after a keepalive; 0 when the lease does not exist.
Result<int64_t> DecodeKeepAliveTtl(const std::string& body);
Result<EtcdClient::MemberStatus> DecodeStatus(const std::string& body);

// A non-200 answer's gRPC status ({"error":..,"code":..}).
struct GatewayError {
  int code = 2;         // gRPC code; 2 (unknown) when the body is not a gRPC status
  std::string message;  // etcd's message, e.g. "etcdserver: request is too large"
};
GatewayError DecodeGatewayError(int http_status, const std::string& body);

}  // namespace shoal::tracker::etcd_codec

#endif  // SHOAL_TRACKER_ETCD_CODEC_H_
