// Adding torrents to the engine: one file's (AddFile) or a version's bundle
// of small files (AddBundle). Both build a canonical .torrent, check that
// libtorrent computes the same info-hash, register the pieces' chunks with
// the disk interface, and add the torrent with the pieces the store holds.
#include <cstring>

#include "libtorrent/announce_entry.hpp"
#include "libtorrent/torrent_info.hpp"
#include "p2p/bundle_metainfo.h"
#include "p2p/engine_impl.h"
#include "shoal/log.h"

namespace shoal {

namespace {

// The torrent `meta` describes, loaded by libtorrent and checked against
// the engine's own info-hash and piece count; not yet in the session.
Result<std::shared_ptr<FileTorrent>> LoadTorrent(const TorrentMetainfo& meta,
                                                 const std::string& label,
                                                 const std::string& announce_url,
                                                 TorrentEngine::AddMode mode) {
  const FileTorrentId id = meta.id;
  auto t = std::make_shared<FileTorrent>();
  t->id = id;
  t->download = mode == TorrentEngine::AddMode::kDownload;
  lt::error_code ec;
  auto info = std::make_shared<lt::torrent_info>(
      lt::span<const char>(meta.torrent.data(), static_cast<std::ptrdiff_t>(meta.torrent.size())),
      ec, lt::from_span);
  if (ec) return Status::InvalidArgument(label + ": its torrent does not load: " + ec.message());
  if (std::memcmp(info->info_hashes().v2.data(), id.data(), FileTorrentId::kSize) != 0) {
    return Status::Corruption(label + ": libtorrent computes another info-hash than the engine");
  }
  if (static_cast<uint64_t>(info->num_pieces()) != meta.chunks.size()) {
    return Status::Corruption(label + ": libtorrent sees " + std::to_string(info->num_pieces()) +
                              " pieces, the engine " + std::to_string(meta.chunks.size()));
  }
  t->info = std::move(info);
  auto layout = std::make_shared<TorrentLayout>();
  layout->file_size = meta.file_size;
  layout->piece_size = meta.piece_size;
  layout->chunks = meta.chunks;
  layout->piece_bytes = meta.piece_bytes;
  t->layout = layout;
  if (!announce_url.empty()) t->trackers.push_back(announce_url);
  return t;
}

}  // namespace

Status TorrentEngine::Impl::Rejoin(FileTorrent& existing, const std::string& announce_url,
                                   AddMode mode) {
  lt::torrent_handle h;
  bool start_download = false, add_tracker = !announce_url.empty();
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& u : existing.trackers) {
      if (u == announce_url) add_tracker = false;
    }
    if (add_tracker) existing.trackers.push_back(announce_url);
    if (mode == AddMode::kDownload && (!existing.download || !existing.skip.empty())) {
      existing.download = true;
      existing.skip.clear();  // a new pull wants every piece again
      start_download = true;
    }
    h = existing.handle;
  }
  if (start_download) {
    SHOAL_RETURN_IF_ERROR(CallLibtorrent("download every piece", [&] {
      std::vector<lt::download_priority_t> all(existing.layout->num_pieces(), lt::default_priority);
      h.prioritize_pieces(all);
      return Status::OK();
    }));
  }
  if (add_tracker) {
    SHOAL_RETURN_IF_ERROR(CallLibtorrent("add tracker", [&] {
      h.add_tracker(lt::announce_entry(announce_url));
      return Status::OK();
    }));
  }
  return Status::OK();
}

Result<FileTorrentId> TorrentEngine::Impl::Add(const TorrentMetainfo& meta,
                                               const std::string& label,
                                               const std::string& announce_url, AddMode mode) {
  const FileTorrentId id = meta.id;
  std::lock_guard<std::mutex> add(add_mu_);
  if (auto existing = Find(id)) {
    SHOAL_RETURN_IF_ERROR(Rejoin(*existing, announce_url, mode));
    return id;
  }
  auto loaded = LoadTorrent(meta, label, announce_url, mode);
  if (!loaded.ok()) return loaded.status();
  std::shared_ptr<FileTorrent> t = *loaded;
  std::shared_ptr<const TorrentLayout> layout = t->layout;

  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) return Status::Unavailable("the peer-to-peer engine is stopped");
  }
  catalog_->Register(ShortKeyOf(id), layout);
  Status s = CallLibtorrent("add torrent", [&] { return AddToSession(*t); });
  if (!s.ok()) {
    if (t->handle.is_valid()) SessionFor(t->id).remove_torrent(t->handle);
    catalog_->Unregister(ShortKeyOf(id));
    return s;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    for (uint64_t i = 0; i < layout->num_pieces(); ++i) {
      chunk_index_.emplace(layout->chunks[i], std::make_pair(id, i));
    }
    torrents_[id] = t;
  }
  Log(LogLevel::kInfo, "p2p.torrent.add",
      {{"torrent", id.ShortHex()}, {"what", label}, {"pieces", layout->num_pieces()}});
  return id;
}

Result<FileTorrentId> TorrentEngine::AddFile(const FileEntry& file, uint32_t piece_size,
                                             const std::string& announce_url, AddMode mode) {
  auto ca = impl_->AwaitPeerCa();
  if (!ca.ok()) return ca.status();
  auto meta = BuildTorrentMetainfo(file, piece_size, *ca);
  if (!meta.ok()) return meta.status();
  return impl_->Add(*meta, "file '" + file.path + "'", announce_url, mode);
}

Result<TorrentEngine::Bundle> TorrentEngine::AddBundle(const std::vector<const FileEntry*>& files,
                                                       uint32_t piece_size,
                                                       const std::string& announce_url,
                                                       AddMode mode) {
  auto ca = impl_->AwaitPeerCa();
  if (!ca.ok()) return ca.status();
  auto meta = BuildBundleMetainfo(files, piece_size, *ca);
  if (!meta.ok()) return meta.status();
  auto id = impl_->Add(*meta, "bundle of " + std::to_string(meta->chunks.size()) + " small files",
                       announce_url, mode);
  if (!id.ok()) return id.status();
  Bundle b;
  b.id = *id;
  b.chunks = std::move(meta->chunks);
  return b;
}

}  // namespace shoal
