@0xd8f4a0c2b1e3f502;
# The tracker's RPC interfaces, and the records its registry keeps.
#
# A caller connects, presents its token to Gateway.authenticate, and gets a
# Registry capability scoped to that token. Every call on it checks the
# token's role and namespaces (and expiry) again.

using Cxx = import "/capnp/c++.capnp";
using Json = import "/capnp/compat/json.capnp";
using M = import "manifest.capnp";
$Cxx.namespace("shoal::proto");

enum Role {
  read @0;                        # resolve and pull within its namespaces
  write @1;                       # also publish and tag
  admin @2;                       # also delete and run GC
}

struct Identity {
  subject @0 :Text;               # who the token was minted for
  role @1 :Role;
  namespaces @2 :List(Text);      # "*" means every namespace
  expiresAtMs @3 :Int64;          # Unix epoch, milliseconds
}

struct VersionSummary {
  namespace @0 :Text;
  name @1 :Text;
  versionId @2 :Data $Json.hex;
  createdBy @3 :Text;
  createdAtMs @4 :Int64;
  parentVersion @5 :Data $Json.hex;
  totalBytes @6 :UInt64;
  fileCount @7 :UInt32;
  tags @8 :List(Text);            # tags that point at this version now
  state @9 :Text;                 # "durable" (every chunk in the origin), "uploading" or
                                  # "failed"; empty (a tracker from before states) is durable
  stateDetail @10 :Text;          # uploading: who uploads it since when; failed: why
  labels @11 :List(Text);         # the manifest's labels, "key=value", sorted by key; empty for
                                  # a version committed by a tracker from before labels were kept
}

struct ModelSummary {
  namespace @0 :Text;
  name @1 :Text;
  versionCount @2 :UInt32;
  latestVersion @3 :Data $Json.hex;  # the most recently published
  latestAtMs @4 :Int64;
  tags @5 :List(TagPointer);
}

struct TagPointer {
  tag @0 :Text;
  versionId @1 :Data $Json.hex;
}

# One move of a tag; kept forever.
struct TagEvent {
  namespace @0 :Text;
  name @1 :Text;
  tag @2 :Text;
  fromVersion @3 :Data $Json.hex; # empty when the tag was created
  toVersion @4 :Data $Json.hex;   # empty when the tag was removed
  by @5 :Text;
  atMs @6 :Int64;
}

# One write to the registry, for the audit log.
struct AuditRecord {
  seq @0 :UInt64;
  atMs @1 :Int64;
  subject @2 :Text;               # the token's subject
  tokenId @3 :Text;
  action @4 :Text;                # "publish", "tag", "delete", "gc", ...
  target @5 :Text;                # "team-a/llama:3fa2..." or similar
  detail @6 :Text;
}

struct UploadPlan {
  upload @0 :List(Data);          # chunks this caller should upload now
  wait @1 :List(Data);            # chunks another publish is uploading
  leaseMs @2 :UInt32;             # how long this caller's upload claim lasts
}

# A version committed before every chunk was in the origin (Registry.commit
# with `pending`), while its publisher goes on uploading: the registry's
# U|ns|name|<version hex> record. Deleted once the version is durable.
struct PendingUpload {
  state @0 :Text;                 # "uploading" or "failed"
  leaseUntilMs @1 :Int64;         # uploading: reads as failed after this unless renewed
  heldTags @2 :List(Text);        # tags moved to the version once it is durable
  publisher @3 :Text;             # subject of the token whose commit started the upload
  startedAtMs @4 :Int64;          # when that commit was made
  detail @5 :Text;                # failed: why, as the publisher reported it
}

struct GcReport {
  referencedChunks @0 :UInt64;
  unreferencedChunks @1 :UInt64;  # old enough to sweep
  sweptChunks @2 :UInt64;         # 0 on a dry run
  sweptBytes @3 :UInt64;
  youngChunks @4 :UInt64;         # unreferenced but inside the grace period
}

interface Gateway {
  # The only capability a new connection gets.
  authenticate @0 (token :Text) -> (registry :Registry, identity :Identity);
  # The tracker's Ed25519 public key, so clients can check manifests.
  publicKey @1 () -> (keyId :Text, key :Data);

  # An agent joins: it must heartbeat every heartbeatMs or be dropped after
  # three misses. `control` is how the tracker reaches it later.
  # Peer admission: `peerKey` is the PEM public key of a key pair the agent
  # made. When the cluster admits peers by certificate, `peerCa` is its CA
  # (PEM; every torrent carries it) and `peerCert` the agent's certificate
  # for that key; both empty when peers speak plain BitTorrent.
  # `peerAuthOnly` (with a CA): torrents are plain BitTorrent, not TLS, and
  # peers prove holding such a certificate in the extension handshake.
  registerAgent @2 (token :Text, info :AgentInfo, control :AgentControl, peerKey :Text)
      -> (session :AgentSession, agentId :Text, epoch :UInt64, heartbeatMs :UInt32,
          httpPort :UInt16,     # the tracker's HTTP port, for /announce
          peerCa :Text, peerCert :PeerCert, peerAuthOnly :Bool);
}

interface Registry {
  # Which of these chunks the origin lacks, split into those this caller
  # should upload and those another publish is uploading already.
  # `uploadId` names the publish (at most 64 characters): a publish run
  # again after it was cut off (a dead tracker, Ctrl-C) under the same id
  # and token takes over its own leases at once instead of waiting for them
  # to lapse. Empty: the leases belong to this connection alone.
  planUpload @0 (namespace :Text, chunks :List(Data), uploadId :Text) -> (plan :UploadPlan);

  # Tells the tracker these chunks are now in the origin. It checks them
  # there before believing it.
  chunksStored @1 (namespace :Text, chunks :List(Data)) -> ();

  # Registers a version from canonical manifest bytes and points `tags` at
  # it. Fails unless every chunk is in the origin. Idempotent: committing
  # the same bytes again returns the same signed manifest.
  # `pending`: the version is pullable before it is durable. The chunks in
  # the origin are not checked; the version is stored in state "uploading"
  # with a lease of the tracker's --publish-lease, which the publisher keeps
  # with renewUpload until it calls finishUpload. The tags are held and move
  # to it once it is durable, unless `tagEarly` (they move now). A pending
  # commit of a version still uploading or failed takes it over (a new
  # lease, these tags held); of a durable one, moves the tags now. A commit
  # without `pending` of a version still uploading or failed makes it
  # durable and moves its held tags too. `state` is the version's state
  # after the call ("durable" or "uploading"; an older tracker sends none).
  commit @2 (manifest :Data, tags :List(Text), pending :Bool, tagEarly :Bool)
      -> (signed :M.SignedManifest, created :Bool, state :Text);

  # A tag or a version ID (64 hex digits, or a unique prefix of 8 or more).
  # A version whose upload failed (or lapsed) is refused, naming why; one
  # still uploading resolves, with `state` "uploading" (else "durable").
  resolve @3 (namespace :Text, name :Text, ref :Text) -> (signed :M.SignedManifest, state :Text);

  listModels @4 (namespace :Text, after :Text, limit :UInt32)
      -> (models :List(ModelSummary), next :Text);
  # With `labels` ("key=value"), only the versions that carry every one.
  listVersions @5 (namespace :Text, name :Text, after :Text, limit :UInt32, labels :List(Text))
      -> (versions :List(VersionSummary), next :Text);

  # Moves (or creates) a tag. Returns the version it pointed at before.
  setTag @6 (namespace :Text, name :Text, tag :Text, versionId :Data) -> (previous :Data);
  tagHistory @7 (namespace :Text, name :Text, tag :Text) -> (events :List(TagEvent));

  # Admin only. Refused while a tag points at the version unless `force`.
  deleteVersion @8 (namespace :Text, name :Text, versionId :Data, force :Bool) -> ();

  # Admin only. Mark and sweep of origin chunks no version references.
  gc @9 (dryRun :Bool, graceMs :Int64) -> (report :GcReport);

  # Who this capability acts for.
  whoami @10 () -> (identity :Identity);

  # Has each chunk's owner on the ring fetch it from the origin and seed it,
  # ahead of a scale-out, paced like every origin fetch. `nodes` also has
  # agents take the whole version into their caches from the swarm: "" (none),
  # "all", a count N (the N least loaded), or "label=value" ("zone=..." or a
  # label an agent registered with). Write role. Returns once every order
  # has been answered; `listener` (optional) hears progress meanwhile.
  warm @11 (namespace :Text, name :Text, ref :Text, nodes :Text, listener :WarmListener)
      -> (owners :UInt32, chunks :UInt32, fetched :UInt32, bytes :UInt64, failed :UInt32,
          nodes :UInt32, nodesFailed :UInt32);

  # Asks for chunks of a version that no peer offered the caller: the
  # tracker has each one's owner fetch it from the origin and seed it. Read
  # role on the namespace; every chunk must belong to the version. The
  # tracker keeps a cluster-wide budget of origin fetches in flight and
  # orders the queue by need (chunks pullers wait for first, in the order
  # asked), so ask in file order. Returns at once. Ask again for chunks
  # still missing a few seconds later: a chunk delivered recently is not
  # fetched again (its seeders are being found), one delivered long ago is
  # (its holder may have evicted it). `failed` lists chunks no owner could
  # fetch, with the last error. A version still uploading has every chunk
  # answered `pending` and no fetch ordered (its publisher's agent seeds
  # it; the origin may lack it yet); a failed one has every chunk `failed`,
  # with the reason.
  need @12 (namespace :Text, name :Text, versionId :Data, chunks :List(Data))
      -> (queued :UInt32, pending :UInt32, recent :UInt32, failed :List(FailedChunk));

  # Keeps a version committed with `pending` uploading: its lease runs
  # `leaseMs` from now (renew well before that; a lapsed lease reads as
  # failed). Write role. 0 for a version that is durable already; a failed
  # or lapsed one is refused (failed precondition), naming why.
  renewUpload @13 (namespace :Text, name :Text, versionId :Data) -> (leaseMs :UInt32);

  # Ends the upload of a version committed with `pending`. Write role.
  # Empty `error`: every chunk must be in the origin now (refused, naming
  # how many are missing, if not); the version becomes durable and its held
  # tags move to it. A durable version answers "durable" again; a failed or
  # lapsed one is refused. Otherwise the upload failed: the version becomes
  # "failed" with `error` as the reason and resolves no more (a durable one
  # stays durable). `state` is the version's state after the call.
  finishUpload @14 (namespace :Text, name :Text, versionId :Data, error :Text) -> (state :Text);

  # What changed in `namespaces` (read role on each) from position `after`:
  # versions committed, made durable, failed or deleted, and tags moved, in
  # the order the registry took them. Answers as soon as there is such a
  # change, or after `waitMs` (at most 60000) with none; `position` (never
  # 0) is where the next call starts. `after` 0 answers at once with the
  # current position and no events: a follower reads the whole state once, then
  # watches from there. A tracker that mirrors another (--follow) learns of
  # a publish upstream this way.
  watch @15 (namespaces :List(Text), after :UInt64, waitMs :UInt32)
      -> (position :UInt64, events :List(ModelEvent));
}

# One change watch reports.
struct ModelEvent {
  seq @0 :UInt64;                 # its position
  namespace @1 :Text;
  name @2 :Text;
  action @3 :Text;                # "publish", "durable", "publish-failed", "tag", "delete",
                                  # "retention"
  atMs @4 :Int64;
}

struct FailedChunk {
  chunk @0 :Data;
  error @1 :Text;
}

# Progress of a warm, as the tracker sees it.
interface WarmListener {
  progress @0 (chunksDone :UInt32, chunks :UInt32, nodesDone :UInt32, nodes :UInt32) -> ();
}

# --- Agents -----------------------------------------------------------------

struct AgentInfo {
  name @0 :Text;                  # stable node name, e.g. the host name
  peerPort @1 :UInt16;            # BitTorrent listen port; the address is the connection's
  zone @2 :Text;                  # topology label; same-zone peers are preferred
  cacheBytes @3 :UInt64;          # cache capacity; weights ring ownership
  version @4 :Text;               # shoald's version
  labels @5 :List(Text);          # "key=value", for `shoal warm --nodes key=value`
  away @6 :Bool;                  # this tracker is not the agent's home in a fleet: heartbeat
                                  # here less often (registerAgent's heartbeatMs says how often)
  peerSessions @7 :UInt16;        # peer sessions on peerPort and the ports after it (0: one);
                                  # a torrent is on peerPort + its session (SessionOf)
}

struct AgentStats {
  cachedBytes @0 :UInt64;
  cachedChunks @1 :UInt64;
  bytesFromPeers @2 :UInt64;
  bytesFromOrigin @3 :UInt64;
  bytesToPeers @4 :UInt64;
  torrents @5 :UInt32;
  peers @6 :UInt32;
  originBytesRead @7 :UInt64;     # since the agent started, counted as they arrive (a fetch still
                                  # running included): the tracker waits for an owner while this grows
}

struct AgentListing {
  agentId @0 :Text;
  info @1 :AgentInfo;
  address @2 :Text;               # as the tracker sees it
  lastHeartbeatMs @3 :Int64;
  stats @4 :AgentStats;
  heartbeatMs @5 :UInt32;         # how often it heartbeats here
}

# What the tracker can ask of an agent, over the agent's own connection.
interface AgentControl {
  status @0 () -> (stats :AgentStats);
  # Fetch these chunks of a version from the origin into the cache and seed
  # them: the tracker's order to a chunk's owner.
  # `takeover` is set when an earlier owner did not deliver.
  fetch @1 (namespace :Text, name :Text, versionId :Data, chunks :List(Data), takeover :Bool)
      -> (fetched :UInt32, bytes :UInt64);
  # Take a whole version into the cache from the swarm (chunks no peer has
  # are asked of their owners, as in a pull), without writing it out: the
  # tracker's order to a node named by `shoal warm --nodes`.
  prefetch @2 (namespace :Text, name :Text, versionId :Data)
      -> (bytes :UInt64, bytesFromPeers :UInt64, bytesFromOrigin :UInt64);
  # Take these chunks of a version from the swarm (never the origin), hold
  # them as owned and seed them: the tracker's order to a chunk's owners 2..R
  # once its first owner has delivered it.
  replicate @3 (namespace :Text, name :Text, versionId :Data, chunks :List(Data))
      -> (bytesFromPeers :UInt64);
}

# An agent's membership; dropping it (or missing heartbeats) leaves the ring.
interface AgentSession {
  # `revocationsSeen`: the generation of the agent's revocation list (0 at
  # first), and `revocationsSource` the `source` it came from; the reply
  # brings the revocations after it, so an agent refuses a revoked token
  # within one heartbeat. `ringSeen` is the epoch of this session's ring the
  # agent holds (0: none); when the ring has moved since, `ring` brings the
  # changes, unless there are too many (then `ring.delta` is false and the
  # agent asks ring() for everyone). `heartbeatMs` is the interval the agent
  # keeps, as it was last told (0: an agent that keeps registerAgent's
  # heartbeatMs, and is held to it); the reply's `heartbeatMs` is how long
  # to wait before the next heartbeat: a tracker with many agents tells
  # them to heartbeat less often.
  heartbeat @0 (stats :AgentStats, revocationsSeen :UInt64, revocationsSource :UInt64,
                ringSeen :UInt64, heartbeatMs :UInt32)
      -> (epoch :UInt64, revocations :RevocationDelta, ring :RingDelta, heartbeatMs :UInt32);
  # The live members and their weights, for computing chunk owners. With
  # `sinceEpoch` (an epoch of this session's ring the agent holds) the reply
  # may be only what changed since: `delta` set, and `changes` in order.
  # Otherwise (and for sinceEpoch 0) `snapshot` is an encoded RingSnapshot
  # message, the ring at `snapshotEpoch`, and `changes` follow it.
  ring @1 (sinceEpoch :UInt64)
      -> (epoch :UInt64, delta :Bool, changes :List(RingChange), snapshot :Data,
          snapshotEpoch :UInt64);
  # A new peer certificate for `peerKey`, before the last one expires. The
  # token is checked again: one no longer valid gets none.
  renewPeerCert @2 (token :Text, peerKey :Text) -> (peerCert :PeerCert);
  # A BitTorrent announce from the agent's own libtorrent, relayed over this
  # session: `query` is the query string of GET /announce, token included.
  # Answered as /announce would (its HTTP status and bencoded body), with the
  # address of this connection as the peer's.
  announce @3 (query :Text) -> (status :UInt16, body :Data);
  # What changed in the agent's swarms since its last batch, all at once.
  # An entry put in a swarm this way is held for as long as this session
  # lives: it needs no re-announcing, and every entry of the session is
  # removed when it ends. Each torrent must be a file of a published
  # version in a namespace the agent's token may read. At most 4096
  # entries; more fails the whole call. `replies` matches `entries` one to
  # one; `intervalMs` and `seedIntervalMs` are the announce intervals the
  # tracker tells a leecher and a seeder over /announce.
  announceBatch @4 (entries :List(SwarmEntry))
      -> (replies :List(SwarmReply), intervalMs :UInt32, seedIntervalMs :UInt32);
}

# One torrent's state, as an agent reports it in AgentSession.announceBatch.
struct SwarmEntry {
  infoHash @0 :Data;              # 20 bytes, as announced over /announce
  state @1 :State;
  left @2 :UInt64;                # bytes still wanted, while downloading
  port @3 :UInt16;                # the agent's BitTorrent port for this torrent
  zone @4 :Text;                  # the agent's zone; same-zone peers come first
  numwant @5 :UInt32;             # at most this many peers (the tracker caps it at 200)
  wantPeers @6 :Bool;             # false: record the state only, no peer list

  enum State {
    downloading @0;
    seeding @1;
    stopped @2;                   # leave the swarm
  }
}

# The tracker's answer to one SwarmEntry.
struct SwarmReply {
  error @0 :Text;                 # empty: recorded; else why this entry was refused
  peers @1 :Data;                 # compact IPv4 peers (BEP 23), if it wanted peers
  peers6 @2 :Data;                # compact IPv6 peers (BEP 7)
  complete @3 :UInt32;            # seeders in the swarm
  incomplete @4 :UInt32;          # leechers
}

# A token the tracker no longer honours (shoal/token_revocations.h).
struct Revocation {
  seq @0 :UInt64;                 # position in the tracker's list, from 1
  kind @1 :Kind;
  value @2 :Text;                 # the token id, or the subject
  cutoffMs @3 :Int64;             # subject: tokens issued at or before this are dead
  atMs @4 :Int64;                 # when it was revoked
  by @5 :Text;                    # who revoked it

  enum Kind {
    tokenId @0;
    subject @1;
  }
}

# How the ring changed after the epoch an agent holds.
struct RingDelta {
  delta @0 :Bool;                 # true: apply `changes` to the ring at ringSeen to get `epoch`'s
  changes @1 :List(RingChange);   # oldest first
}

# Every member of the ring at one epoch (AgentSession.ring's snapshot).
struct RingSnapshot {
  members @0 :List(RingMember);
}

# One member joining (or joining again with a new weight) or leaving.
struct RingChange {
  agentId @0 :Text;
  weight @1 :UInt64;              # cache bytes, when it joined
  left @2 :Bool;
}

# The revocations an agent has not seen yet.
struct RevocationDelta {
  generation @0 :UInt64;          # the tracker's; sent back as revocationsSeen
  reset @1 :Bool;                 # true: `revocations` is the whole list; replace, not add
  revocations @2 :List(Revocation);
  source @3 :UInt64;              # random per tracker start: another source means a reset
}

# A token `shoal-tracker token create` issued, as `token list` shows it:
# its claims and whether it was revoked, never its MAC.
struct IssuedToken {
  id @0 :Text;
  subject @1 :Text;
  role @2 :Role;
  namespaces @3 :List(Text);
  issuedAtMs @4 :Int64;
  expiresAtMs @5 :Int64;
  revoked @6 :Bool;
  revokedAtMs @7 :Int64;          # 0 unless revoked
  revokedBy @8 :Text;             # empty unless revoked
}

# GET /v1/tokens's array, wrapped so the CLI can decode it as one struct.
struct IssuedTokenList {
  tokens @0 :List(IssuedToken);
}

struct PeerCert {
  pem @0 :Text;
  notAfterMs @1 :Int64;           # when it expires, ms since the epoch
}

struct RingMember {
  agentId @0 :Text;
  weight @1 :UInt64;              # cache bytes
}
