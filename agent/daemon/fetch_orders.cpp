#include "daemon/fetch_orders.h"

#include <chrono>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include "client/tracker_client.h"
#include "daemon/owner_peers.h"
#include "fetch/chunk_fetcher.h"
#include "p2p/torrent_engine.h"
#include "shoal/file_torrent_info.h"
#include "shoal/log.h"

namespace shoal {

// How many versions' manifests are kept.
constexpr size_t kKeepVersions = 8;
// The most owners above this agent a replica order connects to: the first
// live one read the chunk, and those between it and this agent copy it too.
constexpr size_t kMaxOwnerPeers = 3;

struct FetchOrders::Version {
  std::string ns, name;
  VersionId id;
  Manifest manifest;
  // Where each chunk sits: the file and the piece (the first, if repeated).
  std::unordered_map<ChunkId, std::pair<const FileEntry*, uint64_t>> where;
  std::mutex mu;
  std::map<const FileEntry*, FileTorrentId> torrents;  // protected by mu
  // The version's bundles of small files, and each bundle's torrent once
  // added here (protected by mu).
  VersionBundles bundles;
  std::vector<std::optional<FileTorrentId>> bundle_ids;
};

FetchOrders::FetchOrders(PullContext& ctx, std::function<std::string()> announce_url,
                         std::function<std::shared_ptr<const HashRing>()> ring,
                         std::function<std::string()> self_id)
    : ctx_(ctx),
      announce_url_(std::move(announce_url)),
      ring_(std::move(ring)),
      self_id_(std::move(self_id)) {}

FetchOrders::~FetchOrders() = default;

Result<std::shared_ptr<FetchOrders::Version>> FetchOrders::Load(const std::string& ns,
                                                                const std::string& name,
                                                                const VersionId& version) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = versions_.begin(); it != versions_.end(); ++it) {
    if ((*it)->id == version && (*it)->ns == ns && (*it)->name == name) {
      versions_.splice(versions_.begin(), versions_, it);
      return versions_.front();
    }
  }
  auto tracker = TrackerClient::Connect(ctx_.options.tracker, ctx_.options.token);
  if (!tracker.ok()) return tracker.status();
  auto v = (*tracker)->Resolve(ns, name, version.ToHex());
  if (!v.ok()) return v.status();
  auto out = std::make_shared<Version>();
  out->ns = ns;
  out->name = name;
  out->id = version;
  out->manifest = std::move(v->manifest);
  for (const FileEntry& f : out->manifest.files) {
    std::vector<ChunkId> ids = f.ChunkIds();
    for (uint64_t p = 0; p < ids.size(); ++p) out->where.emplace(ids[p], std::make_pair(&f, p));
  }
  out->bundles = VersionBundles::Of(out->manifest);
  out->bundle_ids.resize(out->bundles.bundles.size());
  versions_.push_front(out);
  if (versions_.size() > kKeepVersions) versions_.pop_back();
  return out;
}

Result<FileTorrentId> FetchOrders::Torrent(Version& ver, const FileEntry& f, bool re_add) {
  if (!re_add) {
    std::lock_guard<std::mutex> lock(ver.mu);
    auto t = ver.torrents.find(&f);
    if (t != ver.torrents.end()) return t->second;
  }
  auto id = ctx_.engine.AddFile(f, ver.manifest.piece_size, announce_url_(),
                                TorrentEngine::AddMode::kSeedOnly);
  if (!id.ok()) return id.status();
  std::lock_guard<std::mutex> lock(ver.mu);
  ver.torrents[&f] = *id;
  return *id;
}

Result<std::pair<FileTorrentId, uint64_t>> FetchOrders::Place(Version& ver, const FileEntry& f,
                                                              uint64_t piece, bool re_add) {
  const VersionBundles::Place* at = ver.bundles.Find(f);
  if (at == nullptr) {
    auto id = Torrent(ver, f, re_add);
    if (!id.ok()) return id.status();
    return std::make_pair(*id, piece);
  }
  if (!re_add) {
    std::lock_guard<std::mutex> lock(ver.mu);
    if (ver.bundle_ids[at->bundle]) return std::make_pair(*ver.bundle_ids[at->bundle], at->piece);
  }
  auto b = ctx_.engine.AddBundle(ver.bundles.bundles[at->bundle], ver.manifest.piece_size,
                                 announce_url_(), TorrentEngine::AddMode::kSeedOnly);
  if (!b.ok()) return b.status();
  std::lock_guard<std::mutex> lock(ver.mu);
  ver.bundle_ids[at->bundle] = b->id;
  return std::make_pair(b->id, at->piece);
}

Result<std::pair<const FileEntry*, uint64_t>> FetchOrders::Locate(const Version& ver,
                                                                  const ChunkId& chunk) {
  auto at = ver.where.find(chunk);
  if (at == ver.where.end()) {
    return Status::InvalidArgument("chunk " + chunk.ShortHex() + " is not part of " + ver.ns + "/" +
                                   ver.name);
  }
  return at->second;
}

Status FetchOrders::Seed(Version& ver, const FileEntry& f, uint64_t piece) {
  auto at = Place(ver, f, piece, /*re_add=*/false);
  if (!at.ok()) return at.status().WithContext("seed " + f.path);
  Status s = ctx_.fetcher->HandOver({at->first, at->second});
  if (s.IsNotFound()) {  // the engine dropped it
    at = Place(ver, f, piece, /*re_add=*/true);
    if (!at.ok()) return at.status().WithContext("seed " + f.path);
    s = ctx_.fetcher->HandOver({at->first, at->second});
  }
  return s.WithContext("seed " + f.path);
}

void FetchOrders::HoldForNextOwners(Version& ver, const FileEntry& f, uint64_t piece,
                                    const ChunkId& chunk) {
  const int k = ctx_.options.hand_on_owners;
  if (k <= 0) return;  // before asking: asking for the ring makes the agent follow it
  std::shared_ptr<const HashRing> ring = ring_ ? ring_() : nullptr;
  if (ring == nullptr) return;
  std::vector<std::pair<std::string, uint16_t>> receivers;
  for (const PeerAddress& a : OwnersBelow(*ring, self_id_(), chunk, static_cast<size_t>(k))) {
    // whichever of its sessions carries the torrent
    for (uint16_t k = 0; k < a.sessions; ++k)
      receivers.emplace_back(a.ip, static_cast<uint16_t>(a.port + k));
  }
  if (receivers.empty()) return;  // not the first owner on this ring: no one to hand on to
  auto at = Place(ver, f, piece, /*re_add=*/false);
  if (!at.ok()) return;  // Seed reports it
  Status s = ctx_.engine.HoldPiece(at->first, at->second, std::move(receivers),
                                   std::chrono::milliseconds(ctx_.options.hand_on_hold_ms));
  if (!s.ok()) Log(LogLevel::kDebug, "fetch_order.hold_failed", {{"error", s.ToString()}});
}

void FetchOrders::ConnectOwners(const FileTorrentId& id, const ChunkId& chunk) {
  std::shared_ptr<const HashRing> ring = ring_ ? ring_() : nullptr;
  if (ring == nullptr) return;
  for (const PeerAddress& owner : OwnersAbove(*ring, self_id_(), chunk, kMaxOwnerPeers)) {
    // libtorrent ignores a peer it is connected to already.
    Status s = ctx_.engine.ConnectPeer(id, owner.ip, owner.PortFor(id));
    if (s.ok()) {
      ctx_.counters.replica_owner_connects++;
    } else {
      Log(LogLevel::kDebug, "replica_order.connect_failed",
          {{"peer", owner.ip + ":" + std::to_string(owner.PortFor(id))}, {"error", s.ToString()}});
    }
  }
}

Result<SeedResult> FetchOrders::Run(const std::string& ns, const std::string& name,
                                    const VersionId& version, const std::vector<ChunkId>& chunks,
                                    bool takeover) {
  if (ctx_.origin == nullptr)
    return Status::Unavailable("this agent has no --origin to fetch from");
  auto v = Load(ns, name, version);
  if (!v.ok()) return v.status();
  Version& ver = **v;
  const uint32_t piece_size = ver.manifest.piece_size;
  SeedResult out;
  for (const ChunkId& chunk : chunks) {
    auto at = Locate(ver, chunk);
    if (!at.ok()) return at.status();
    const FileEntry& f = *at->first;
    const uint64_t piece = at->second;
    // The chunk commits owned: in a full cache of owned chunks, an unowned
    // one would be the first evicted, before its hand-over to the engine.
    // Should it go all the same, it is fetched once more before failing.
    ChunkFetch fetch;
    fetch.id = chunk;
    fetch.size = f.ChunkBytes(piece_size, piece);
    fetch.owned = true;
    fetch.streamed = &ctx_.counters.origin_bytes_read;
    Status seeded;
    for (int attempt = 0; attempt < 2; ++attempt) {
      // On this order's thread; a pull or read fetching the chunk now is
      // joined, not repeated.
      const ChunkFetched sent = ctx_.fetcher->FetchNow(fetch);
      if (!sent.status.ok()) return sent.status;
      if (sent.bytes > 0) {
        ++out.chunks;
        out.bytes += sent.bytes;
        (takeover ? ctx_.counters.takeover_fetches : ctx_.counters.owner_fetches)++;
        ctx_.counters.CountOriginFetch(chunk, sent.bytes);
      }
      // NotFound if the chunk was evicted since; Seed below notices that.
      (void)ctx_.store.SetOwned(chunk, true);
      if (sent.bytes > 0) HoldForNextOwners(ver, f, piece, chunk);
      seeded = Seed(ver, f, piece);
      if (!seeded.IsUnavailable() || ctx_.store.Contains(chunk)) break;
    }
    SHOAL_RETURN_IF_ERROR(seeded);
  }
  Log(LogLevel::kDebug, "fetch_order.done",
      {{"model", ns + "/" + name},
       {"chunks", out.chunks},
       {"bytes", out.bytes},
       {"takeover", takeover}});
  return out;
}

Result<uint64_t> FetchOrders::Replicate(const std::string& ns, const std::string& name,
                                        const VersionId& version,
                                        const std::vector<ChunkId>& chunks, int64_t wait_ms) {
  auto v = Load(ns, name, version);
  if (!v.ok()) return v.status();
  Version& ver = **v;
  uint64_t from_peers = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  for (const ChunkId& chunk : chunks) {
    auto at = Locate(ver, chunk);
    if (!at.ok()) return at.status();
    const FileEntry& f = *at->first;
    const uint64_t piece = at->second;
    bool had = ctx_.store.Contains(chunk);
    // Ask again every second: a torrent re-added after an eviction, or
    // dropped, loses the piece's priority.
    auto asked = std::chrono::steady_clock::time_point{};
    bool re_add = false;
    while (!ctx_.store.Contains(chunk)) {
      auto now = std::chrono::steady_clock::now();
      if (ctx_.stopping != nullptr && ctx_.stopping->load()) {
        return Status::Unavailable("replica order cancelled: the agent is stopping");
      }
      if (now >= deadline) {
        return Status::Unavailable("no peer delivered chunk " + chunk.ShortHex() + " of " + f.path +
                                   " in " + std::to_string(wait_ms) + " ms");
      }
      if (now - asked >= std::chrono::seconds(1)) {
        auto at = Place(ver, f, piece, re_add);
        if (!at.ok()) return at.status().WithContext("replicate " + f.path);
        // Before the deadline, so the first requests can go to the owner;
        // again after a re-add, which drops the torrent's peers.
        if (asked == std::chrono::steady_clock::time_point{} || re_add) {
          ConnectOwners(at->first, chunk);
        }
        Status s = ctx_.engine.PrioritizePieces(at->first, at->second, at->second);
        re_add = s.IsNotFound();
        if (!s.ok() && !s.IsNotFound() && !s.IsUnavailable())
          return s.WithContext("replicate " + f.path);
        asked = now;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    (void)ctx_.store.SetOwned(chunk, true);  // NotFound if evicted since: nothing to mark
    if (!had) {
      from_peers += f.ChunkBytes(ver.manifest.piece_size, piece);
      ctx_.counters.replica_chunks++;
    } else {
      SHOAL_RETURN_IF_ERROR(
          Seed(ver, f, piece));  // held already (pulled, or read): offer it to peers
    }
  }
  Log(LogLevel::kDebug, "replica_order.done",
      {{"model", ns + "/" + name}, {"chunks", chunks.size()}, {"bytes", from_peers}});
  return from_peers;
}

}  // namespace shoal
