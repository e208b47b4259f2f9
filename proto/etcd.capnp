@0xe0911e0bbd22e2d0;
# etcd v3's JSON gateway (grpc-gateway over etcdserverpb), as the tracker's
# etcd client speaks it: POST /v3/kv/range, /v3/kv/put, /v3/kv/deleterange,
# /v3/kv/txn, /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke and
# /v3/maintenance/status.
#
# Only the fields the client uses are declared; the decoder ignores the rest.
# Field names follow the gateway's JSON ($Json.name where it is snake_case),
# keys and values travel base64-encoded ($Json.base64), and 64-bit integers
# travel as JSON strings, which JsonCodec writes and reads. These structs
# never touch disk, so their field numbers may change freely.

using Cxx = import "/capnp/c++.capnp";
using Json = import "/capnp/compat/json.capnp";
$Cxx.namespace("shoal::proto::etcd");

struct ResponseHeader {
  clusterId @0 :UInt64 $Json.name("cluster_id");  # the cluster's ID
  memberId @1 :UInt64 $Json.name("member_id");    # the member that answered
  revision @2 :Int64;                              # the store's revision when the request ran
  raftTerm @3 :UInt64 $Json.name("raft_term");    # the Raft term when the request ran
}

struct KeyValue {
  key @0 :Data $Json.base64;                               # the key's bytes
  createRevision @1 :Int64 $Json.name("create_revision");  # revision of the key's last creation
  modRevision @2 :Int64 $Json.name("mod_revision");        # revision of its last change
  version @3 :Int64;                                       # changes since creation, from 1
  value @4 :Data $Json.base64;                             # the value's bytes
  lease @5 :Int64;                                         # the lease that owns it; 0 if none
}

enum SortOrder {
  none @0 $Json.name("NONE");        # key order, ascending
  ascend @1 $Json.name("ASCEND");    # ascending by the sort target
  descend @2 $Json.name("DESCEND");  # descending by the sort target
}

enum SortTarget {
  key @0 $Json.name("KEY");          # by key
  version @1 $Json.name("VERSION");  # by version
  create @2 $Json.name("CREATE");    # by create revision
  mod @3 $Json.name("MOD");          # by mod revision
  value @4 $Json.name("VALUE");      # by value
}

struct RangeRequest {
  key @0 :Data $Json.base64;                          # first key, or the only key
  rangeEnd @1 :Data $Json.base64 $Json.name("range_end");  # end, exclusive; empty: only `key`
  limit @2 :Int64;                                    # most keys returned; 0: no limit
  revision @3 :Int64;                                 # read at this revision; 0: the newest
  sortOrder @4 :SortOrder $Json.name("sort_order");   # how to sort
  sortTarget @5 :SortTarget $Json.name("sort_target");  # what to sort by
  serializable @6 :Bool;                              # read the member's local state (may be stale)
  keysOnly @7 :Bool $Json.name("keys_only");          # leave values out
  countOnly @8 :Bool $Json.name("count_only");        # only count the keys
}

struct RangeResponse {
  header @0 :ResponseHeader;  # who answered, at which revision
  kvs @1 :List(KeyValue);     # the keys found, in key order
  more @2 :Bool;              # more keys lie in the range past `limit`
  count @3 :Int64;            # keys in the whole range
}

struct PutRequest {
  key @0 :Data $Json.base64;              # the key to write
  value @1 :Data $Json.base64;            # its new value
  lease @2 :Int64;                        # attach to this lease; 0: none
  prevKv @3 :Bool $Json.name("prev_kv");  # return the key-value pair it replaced
}

struct PutResponse {
  header @0 :ResponseHeader;                  # revision is the put's revision
  prevKv @1 :KeyValue $Json.name("prev_kv");  # the replaced pair, if asked and present
}

struct DeleteRangeRequest {
  key @0 :Data $Json.base64;                               # first key, or the only key
  rangeEnd @1 :Data $Json.base64 $Json.name("range_end");  # end, exclusive; empty: only `key`
  prevKv @2 :Bool $Json.name("prev_kv");                   # return the deleted pairs
}

struct DeleteRangeResponse {
  header @0 :ResponseHeader;                          # revision after the delete
  deleted @1 :Int64;                                  # how many keys were deleted
  prevKvs @2 :List(KeyValue) $Json.name("prev_kvs");  # the deleted pairs, if asked
}

enum CompareResult {
  equal @0 $Json.name("EQUAL");         # target == operand
  greater @1 $Json.name("GREATER");     # target > operand
  less @2 $Json.name("LESS");           # target < operand
  notEqual @3 $Json.name("NOT_EQUAL");  # target != operand
}

enum CompareTarget {
  version @0 $Json.name("VERSION");  # the key's version
  create @1 $Json.name("CREATE");    # its create revision
  mod @2 $Json.name("MOD");          # its mod revision
  value @3 $Json.name("VALUE");      # its value
  lease @4 $Json.name("LEASE");      # its lease
}

struct Compare {
  result @0 :CompareResult;  # the comparison
  target @1 :CompareTarget;  # which attribute of the key; must match the union member set
  key @2 :Data $Json.base64;  # the key compared; an absent key has version/create/mod 0
  union {
    version @3 :Int64;                                       # operand for VERSION
    createRevision @4 :Int64 $Json.name("create_revision");  # operand for CREATE
    modRevision @5 :Int64 $Json.name("mod_revision");        # operand for MOD
    value @6 :Data $Json.base64;                             # operand for VALUE
    lease @7 :Int64;                                         # operand for LEASE
  }
}

struct RequestOp {
  union {
    requestRange @0 :RangeRequest $Json.name("request_range");  # a read
    requestPut @1 :PutRequest $Json.name("request_put");        # a write
    requestDeleteRange @2 :DeleteRangeRequest $Json.name("request_delete_range");  # a delete
  }
}

struct ResponseOp {
  union {
    responseRange @0 :RangeResponse $Json.name("response_range");  # answers request_range
    responsePut @1 :PutResponse $Json.name("response_put");        # answers request_put
    responseDeleteRange @2 :DeleteRangeResponse $Json.name("response_delete_range");  # answers a delete
  }
}

struct TxnRequest {
  compare @0 :List(Compare);    # all must hold for `success` to run
  success @1 :List(RequestOp);  # run if every compare holds
  failure @2 :List(RequestOp);  # run otherwise
}

struct TxnResponse {
  header @0 :ResponseHeader;        # revision after the txn
  succeeded @1 :Bool;               # whether the compares held (absent means false)
  responses @2 :List(ResponseOp);   # one per op of the branch that ran, in order
}

struct LeaseGrantRequest {
  ttl @0 :Int64 $Json.name("TTL");  # seconds
  id @1 :Int64 $Json.name("ID");    # the lease ID wanted; 0: the server picks
}

struct LeaseGrantResponse {
  header @0 :ResponseHeader;         # who answered
  id @1 :Int64 $Json.name("ID");     # the new lease
  ttl @2 :Int64 $Json.name("TTL");   # its TTL in seconds, as granted
  error @3 :Text;                    # why the grant failed, if it did
}

struct LeaseRequest {
  id @0 :Int64 $Json.name("ID");  # the lease to keep alive or revoke
}

struct LeaseKeepAliveResponse {
  header @0 :ResponseHeader;        # who answered
  id @1 :Int64 $Json.name("ID");    # the lease
  ttl @2 :Int64 $Json.name("TTL");  # its TTL after the refresh; 0 (absent): no such lease
}

# /v3/lease/keepalive is a stream; the gateway wraps each message.
struct LeaseKeepAliveStreamResponse {
  result @0 :LeaseKeepAliveResponse;  # the one answer to our one request
}

struct LeaseRevokeResponse {
  header @0 :ResponseHeader;  # who answered
}

struct StatusRequest {}

struct StatusResponse {
  header @0 :ResponseHeader;  # member_id is the member that answered
  version @1 :Text;           # etcd's version, e.g. "3.4.23"
  leader @2 :UInt64;          # the leader's member ID; 0 while there is none
  raftIndex @3 :UInt64;       # the member's Raft index
  raftTerm @4 :UInt64;        # the member's Raft term
  errors @5 :List(Text);      # alarms, e.g. "NOSPACE"
}

# The body of a non-200 answer: a gRPC status.
struct GatewayError {
  error @0 :Text;    # the message
  message @1 :Text;  # the same message (newer gateways)
  code @2 :Int32;    # the gRPC code: 3 invalid argument, 5 not found, 14 unavailable, ...
}
