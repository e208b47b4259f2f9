#include "kv/etcd_codec.h"

#include <capnp/compat/json.h>
#include <capnp/message.h>

#include "shoal/proto/etcd.capnp.h"

namespace shoal::tracker::etcd_codec {

namespace pe = shoal::proto::etcd;

namespace {

// One codec per thread: JsonCodec keeps its handlers in mutable state.
// NON_NULL (the default) writes every field, zeros included, which a
// Compare needs: create_revision 0 is the create-if-absent operand. 64-bit
// integers are written and read as JSON strings, as the gateway does, and
// unknown fields in answers are ignored.
capnp::JsonCodec& Codec() {
  thread_local capnp::JsonCodec* codec = [] {
    auto* c = new capnp::JsonCodec();
    c->handleByAnnotation<pe::RangeRequest>();
    c->handleByAnnotation<pe::RangeResponse>();
    c->handleByAnnotation<pe::PutRequest>();
    c->handleByAnnotation<pe::PutResponse>();
    c->handleByAnnotation<pe::DeleteRangeRequest>();
    c->handleByAnnotation<pe::DeleteRangeResponse>();
    c->handleByAnnotation<pe::TxnRequest>();
    c->handleByAnnotation<pe::TxnResponse>();
    c->handleByAnnotation<pe::LeaseGrantRequest>();
    c->handleByAnnotation<pe::LeaseGrantResponse>();
    c->handleByAnnotation<pe::LeaseRequest>();
    c->handleByAnnotation<pe::LeaseKeepAliveStreamResponse>();
    c->handleByAnnotation<pe::StatusResponse>();
    c->handleByAnnotation<pe::GatewayError>();
    return c;
  }();
  return *codec;
}

capnp::Data::Reader Bytes(const std::string& s) {
  return capnp::Data::Reader(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

std::string String(capnp::Data::Reader d) {
  return std::string(reinterpret_cast<const char*>(d.begin()), d.size());
}

template <typename Builder>
std::string Encode(Builder b) {
  return Codec().encode(b.asReader()).cStr();
}

// Decodes `body` as a T and hands its reader to `read`.
template <typename T, typename Read>
auto Decode(const std::string& body, const char* what, Read read)
    -> Result<decltype(read(std::declval<typename T::Reader>()))> {
  try {
    capnp::MallocMessageBuilder message;
    auto root = message.initRoot<T>();
    Codec().decode(kj::ArrayPtr<const char>(body.data(), body.size()), root);
    return read(root.asReader());
  } catch (const kj::Exception& e) {
    return Status::Corruption(std::string("etcd's answer to ") + what +
                              " is not the expected JSON: " + e.getDescription().cStr());
  }
}

KeyValue FromProto(pe::KeyValue::Reader kv) {
  KeyValue out;
  out.key = String(kv.getKey());
  out.value = String(kv.getValue());
  out.create_revision = kv.getCreateRevision();
  out.mod_revision = kv.getModRevision();
  out.version = kv.getVersion();
  out.lease = kv.getLease();
  return out;
}

RangeResult FromProto(pe::RangeResponse::Reader r) {
  RangeResult out;
  for (auto kv : r.getKvs()) out.kvs.push_back(FromProto(kv));
  out.more = r.getMore();
  out.count = r.getCount();
  out.revision = r.getHeader().getRevision();
  return out;
}

void Fill(const RangeRequest& in, pe::RangeRequest::Builder out) {
  out.setKey(Bytes(in.key));
  if (!in.range_end.empty()) out.setRangeEnd(Bytes(in.range_end));
  out.setLimit(in.limit);
  out.setRevision(in.revision);
  out.setKeysOnly(in.keys_only);
  out.setCountOnly(in.count_only);
  if (in.descending) {
    out.setSortOrder(pe::SortOrder::DESCEND);
    out.setSortTarget(pe::SortTarget::KEY);
  }
}

void Fill(const std::string& key, const std::string& value, int64_t lease,
          pe::PutRequest::Builder out) {
  out.setKey(Bytes(key));
  out.setValue(Bytes(value));
  out.setLease(lease);
}

void Fill(const std::string& key, const std::string& range_end,
          pe::DeleteRangeRequest::Builder out) {
  out.setKey(Bytes(key));
  if (!range_end.empty()) out.setRangeEnd(Bytes(range_end));
}

void Fill(const Compare& in, pe::Compare::Builder out) {
  out.setKey(Bytes(in.key));
  switch (in.op) {
    case Compare::Op::kEqual:
      out.setResult(pe::CompareResult::EQUAL);
      break;
    case Compare::Op::kNotEqual:
      out.setResult(pe::CompareResult::NOT_EQUAL);
      break;
    case Compare::Op::kGreater:
      out.setResult(pe::CompareResult::GREATER);
      break;
    case Compare::Op::kLess:
      out.setResult(pe::CompareResult::LESS);
      break;
  }
  switch (in.target) {
    case Compare::Target::kVersion:
      out.setTarget(pe::CompareTarget::VERSION);
      out.setVersion(in.number);
      break;
    case Compare::Target::kCreateRevision:
      out.setTarget(pe::CompareTarget::CREATE);
      out.setCreateRevision(in.number);
      break;
    case Compare::Target::kModRevision:
      out.setTarget(pe::CompareTarget::MOD);
      out.setModRevision(in.number);
      break;
    case Compare::Target::kValue:
      out.setTarget(pe::CompareTarget::VALUE);
      out.setValue(Bytes(in.value));
      break;
    case Compare::Target::kLease:
      out.setTarget(pe::CompareTarget::LEASE);
      out.setLease(in.number);
      break;
  }
}

void Fill(const TxnOp& in, pe::RequestOp::Builder out) {
  switch (in.kind) {
    case TxnOp::Kind::kPut:
      Fill(in.key, in.value, in.lease, out.initRequestPut());
      break;
    case TxnOp::Kind::kDelete:
      Fill(in.key, in.range_end, out.initRequestDeleteRange());
      break;
    case TxnOp::Kind::kRange: {
      RangeRequest r;
      r.key = in.key;
      r.range_end = in.range_end;
      r.limit = in.limit;
      Fill(r, out.initRequestRange());
      break;
    }
  }
}

}  // namespace

std::string EncodeRange(const RangeRequest& request) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<pe::RangeRequest>();
  Fill(request, root);
  return Encode(root);
}

std::string EncodePut(const std::string& key, const std::string& value, int64_t lease) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<pe::PutRequest>();
  Fill(key, value, lease, root);
  return Encode(root);
}

std::string EncodeDelete(const std::string& key, const std::string& range_end) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<pe::DeleteRangeRequest>();
  Fill(key, range_end, root);
  return Encode(root);
}

std::string EncodeTxn(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                      const std::vector<TxnOp>& failure) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<pe::TxnRequest>();
  auto c = root.initCompare(compares.size());
  for (size_t i = 0; i < compares.size(); ++i) Fill(compares[i], c[i]);
  auto s = root.initSuccess(success.size());
  for (size_t i = 0; i < success.size(); ++i) Fill(success[i], s[i]);
  auto f = root.initFailure(failure.size());
  for (size_t i = 0; i < failure.size(); ++i) Fill(failure[i], f[i]);
  return Encode(root);
}

std::string EncodeLeaseGrant(int64_t ttl_s) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<pe::LeaseGrantRequest>();
  root.setTtl(ttl_s);
  return Encode(root);
}

std::string EncodeLeaseId(int64_t lease) {
  capnp::MallocMessageBuilder message;
  auto root = message.initRoot<pe::LeaseRequest>();
  root.setId(lease);
  return Encode(root);
}

Result<RangeResult> DecodeRange(const std::string& body) {
  return Decode<pe::RangeResponse>(body, "range",
                                   [](pe::RangeResponse::Reader r) { return FromProto(r); });
}

Result<int64_t> DecodeRevision(const std::string& body) {
  return Decode<pe::PutResponse>(
      body, "put", [](pe::PutResponse::Reader r) { return r.getHeader().getRevision(); });
}

Result<int64_t> DecodeDeleted(const std::string& body) {
  return Decode<pe::DeleteRangeResponse>(
      body, "deleterange", [](pe::DeleteRangeResponse::Reader r) { return r.getDeleted(); });
}

Result<TxnResult> DecodeTxn(const std::string& body) {
  return Decode<pe::TxnResponse>(body, "txn", [](pe::TxnResponse::Reader r) {
    TxnResult out;
    out.succeeded = r.getSucceeded();
    out.revision = r.getHeader().getRevision();
    for (auto op : r.getResponses()) {
      TxnOpResult res;
      switch (op.which()) {
        case pe::ResponseOp::RESPONSE_RANGE:
          res.kind = TxnOp::Kind::kRange;
          res.range = FromProto(op.getResponseRange());
          break;
        case pe::ResponseOp::RESPONSE_PUT:
          res.kind = TxnOp::Kind::kPut;
          break;
        case pe::ResponseOp::RESPONSE_DELETE_RANGE:
          res.kind = TxnOp::Kind::kDelete;
          res.deleted = op.getResponseDeleteRange().getDeleted();
          break;
      }
      out.results.push_back(std::move(res));
    }
    return out;
  });
}

Result<int64_t> DecodeLeaseGrant(const std::string& body) {
  std::string error;
  Result<int64_t> id =
      Decode<pe::LeaseGrantResponse>(body, "lease grant", [&](pe::LeaseGrantResponse::Reader r) {
        error = r.getError().cStr();
        return r.getId();
      });
  if (id.ok() && !error.empty()) return Status::Unavailable("etcd refused a lease: " + error);
  return id;
}

Result<int64_t> DecodeKeepAliveTtl(const std::string& body) {
  return Decode<pe::LeaseKeepAliveStreamResponse>(
      body, "lease keepalive",
      [](pe::LeaseKeepAliveStreamResponse::Reader r) { return r.getResult().getTtl(); });
}

Result<EtcdClient::MemberStatus> DecodeStatus(const std::string& body) {
  return Decode<pe::StatusResponse>(body, "status", [](pe::StatusResponse::Reader r) {
    EtcdClient::MemberStatus out;
    out.member_id = r.getHeader().getMemberId();
    out.leader_id = r.getLeader();
    out.version = r.getVersion().cStr();
    return out;
  });
}

GatewayError DecodeGatewayError(int http_status, const std::string& body) {
  Result<GatewayError> parsed =
      Decode<pe::GatewayError>(body, "a failed request", [](pe::GatewayError::Reader r) {
        GatewayError e;
        e.code = r.getCode();
        e.message = r.hasMessage() && r.getMessage().size() > 0 ? r.getMessage().cStr()
                                                                : r.getError().cStr();
        return e;
      });
  if (parsed.ok() && !parsed->message.empty()) return *parsed;
  // Not a gRPC status: a proxy's page, or an endpoint that is not etcd.
  GatewayError e;
  e.code = http_status == 502 || http_status == 503 || http_status == 504 ? 14 : 2;
  std::string excerpt = body.substr(0, 120);
  for (char& c : excerpt) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  e.message = "HTTP " + std::to_string(http_status) + (excerpt.empty() ? "" : ": " + excerpt);
  return e;
}

}  // namespace shoal::tracker::etcd_codec
