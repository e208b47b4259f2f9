// TorrentEngine's public calls.
#include "p2p/torrent_engine.h"

#include <chrono>
#include <cstring>
#include <thread>

#include "libtorrent/announce_entry.hpp"
#include "libtorrent/torrent_info.hpp"
#include "libtorrent/torrent_status.hpp"
#include "p2p/engine_impl.h"
#include "p2p/torrent_metainfo.h"
#include "shoal/log.h"

namespace shoal {

namespace {

Status Stopped() { return Status::Unavailable("the peer-to-peer engine is stopped"); }

Status Unknown(const FileTorrentId& id) {
  return Status::NotFound("no torrent " + id.ToHex() + " in the engine; add its file first");
}

}  // namespace

TorrentEngine::Impl::Impl(const EngineOptions& options, ChunkStore& store)
    : options_(options), store_(store) {}

TorrentEngine::Impl::~Impl() { Stop(); }

void TorrentEngine::Impl::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopped_) return;
    stopped_ = true;
  }
  identity_cv_.notify_all();
  stop_thread_ = true;
  if (thread_.joinable()) thread_.join();
  // Destroying the session aborts it and waits for its threads, including
  // the disk interface's workers. add_mu_ waits out an AddFile or Remove in
  // flight, which uses the session.
  // The sessions are aborted together and then waited for, so they shut
  // down in parallel.
  std::lock_guard<std::mutex> add(add_mu_);
  std::vector<lt::session_proxy> proxies;
  for (auto& session : sessions_) proxies.push_back(session->abort());
  sessions_.clear();
  proxies.clear();
  std::lock_guard<std::mutex> l(mu_);
  torrents_.clear();
  chunk_index_.clear();
}

Status TorrentEngine::Impl::Missing(const FileTorrentId& id) {
  std::lock_guard<std::mutex> l(mu_);
  return stopped_ ? Stopped() : Unknown(id);
}

std::shared_ptr<FileTorrent> TorrentEngine::Impl::Find(const FileTorrentId& id) {
  std::lock_guard<std::mutex> l(mu_);
  if (stopped_) return nullptr;
  auto it = torrents_.find(id);
  return it == torrents_.end() ? nullptr : it->second;
}

lt::add_torrent_params TorrentEngine::Impl::ParamsFor(const FileTorrent& t) {
  lt::add_torrent_params p;
  p.ti = std::const_pointer_cast<lt::torrent_info>(t.info);
  p.save_path = ".";  // unused: the disk interface keeps everything in the store
  // Not paused, not auto-managed, no seed mode. A duplicate is an error, so
  // a re-add cannot get back the handle of the incarnation being removed.
  p.flags = lt::torrent_flags::duplicate_is_error;
  p.trackers = t.trackers;
  p.have_pieces.resize(static_cast<int>(t.layout->num_pieces()), false);
  for (uint64_t i = 0; i < t.layout->num_pieces(); ++i) {
    if (store_.Contains(t.layout->chunks[i]))
      p.have_pieces.set_bit(lt::piece_index_t(static_cast<int>(i)));
  }
  if (!t.download) {
    p.piece_priorities.assign(t.layout->num_pieces(), lt::dont_download);
  } else if (!t.skip.empty()) {
    p.piece_priorities.assign(t.layout->num_pieces(), lt::default_priority);
    for (size_t i = 0; i < t.skip.size() && i < p.piece_priorities.size(); ++i) {
      if (t.skip[i]) p.piece_priorities[i] = lt::dont_download;
    }
  }
  return p;
}

Status TorrentEngine::Impl::AddToSession(FileTorrent& t) {
  for (int attempt = 0;; ++attempt) {
    lt::error_code ec;
    lt::add_torrent_params params = ParamsFor(t);
    // With peer TLS the torrent starts paused: its TLS context exists once
    // add_torrent returns, and the certificate must be in it before the
    // torrent announces or connects, or peers turn it away (and back off).
    // Calls on a handle run in order, so resuming after setting it is
    // enough.
    const bool tls = PeerTls();
    if (tls) params.flags |= lt::torrent_flags::paused;
    lt::torrent_handle h = SessionFor(t.id).add_torrent(std::move(params), ec);
    if (!ec) {
      t.handle = h;
      if (tls) {
        PresentCertificate(h);
        SHOAL_RETURN_IF_ERROR(CallLibtorrent("resume", [&] {
          h.resume();
          return Status::OK();
        }));
      }
      return WaitReady(h);
    }
    if (ec != lt::errors::duplicate_torrent || attempt >= 100) {
      return Status::Unavailable("cannot add torrent " + t.id.ToHex() + ": " + ec.message());
    }
    // An earlier incarnation is still being removed.
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

Status TorrentEngine::Impl::WaitReady(const lt::torrent_handle& h) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.add_timeout_ms);
  for (;;) {
    lt::torrent_status st;
    SHOAL_RETURN_IF_ERROR(CallLibtorrent("torrent status", [&] {
      st = h.status({});
      return Status::OK();
    }));
    if (st.errc) return Status::IOError("torrent " + st.name + " failed: " + st.errc.message());
    if (st.state != lt::torrent_status::checking_files &&
        st.state != lt::torrent_status::checking_resume_data) {
      return Status::OK();
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Unavailable("torrent " + st.name + " did not become ready in " +
                                 std::to_string(options_.add_timeout_ms) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Result<std::unique_ptr<TorrentEngine>> TorrentEngine::Start(const EngineOptions& options,
                                                            ChunkStore& store) {
  SHOAL_RETURN_IF_ERROR(options.Validate());
  auto impl = std::make_unique<Impl>(options, store);
  SHOAL_RETURN_IF_ERROR(impl->StartSession());
  return std::unique_ptr<TorrentEngine>(new TorrentEngine(std::move(impl)));
}

TorrentEngine::TorrentEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TorrentEngine::~TorrentEngine() { Stop(); }

void TorrentEngine::Stop() { impl_->Stop(); }

uint16_t TorrentEngine::listen_port() const {
  std::lock_guard<std::mutex> l(impl_->mu_);
  if (impl_->stopped_) return 0;
  return impl_->ListenPort();
}

uint16_t TorrentEngine::sessions() const { return static_cast<uint16_t>(impl_->options_.sessions); }

uint16_t TorrentEngine::listen_port(const FileTorrentId& id) const {
  std::lock_guard<std::mutex> l(impl_->mu_);
  if (impl_->stopped_) return 0;
  return impl_->ListenPort(SessionOf(id, sessions()));
}

Result<TorrentEngine::FileProgress> TorrentEngine::Progress(const FileTorrentId& id) {
  auto t = impl_->Find(id);
  if (t == nullptr) return impl_->Missing(id);
  lt::torrent_handle h;
  uint64_t carried;
  int tracker_peers;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    h = t->handle;
    carried = t->bytes_carried;
    auto reply = impl_->tracker_peers_.find(t->info->name());
    tracker_peers = reply == impl_->tracker_peers_.end() ? -1 : reply->second;
  }
  lt::torrent_status st;
  SHOAL_RETURN_IF_ERROR(CallLibtorrent("torrent status", [&] {
    st = h.status({});
    return Status::OK();
  }));
  if (st.errc) {
    return Status::IOError("torrent " + id.ShortHex() +
                           " stopped on an error: " + st.errc.message());
  }
  FileProgress p;
  p.total_pieces = t->layout->num_pieces();
  p.have_pieces = static_cast<uint64_t>(st.num_pieces);
  p.bytes_from_peers = carried + static_cast<uint64_t>(st.total_payload_download);
  p.peers = st.num_peers;
  p.tracker_peers = tracker_peers;
  p.complete = p.have_pieces == p.total_pieces;
  return p;
}

Status TorrentEngine::ChunkArrived(const FileTorrentId& id, uint64_t piece) {
  auto t = impl_->Find(id);
  if (t == nullptr) return impl_->Missing(id);
  if (piece >= t->layout->num_pieces()) {
    return Status::InvalidArgument("piece " + std::to_string(piece) + " of torrent " +
                                   id.ShortHex() + ", which has " +
                                   std::to_string(t->layout->num_pieces()));
  }
  lt::torrent_handle h;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    h = t->handle;
  }
  lt::piece_index_t p(static_cast<int>(piece));
  const bool bundle = !t->layout->piece_bytes.empty();
  if (!bundle) {
    // A whole piece is worth a round trip to the network thread before it
    // is read; a bundle's piece is one small file, cheaper to hand over
    // again (libtorrent ignores a piece it has).
    bool have = false;
    SHOAL_RETURN_IF_ERROR(CallLibtorrent("have piece", [&] {
      have = h.have_piece(p);
      return Status::OK();
    }));
    if (have) return Status::OK();
  }
  const ChunkId& chunk = t->layout->chunks[piece];
  auto pin = impl_->store_.Pin(chunk);
  if (!pin.ok() && pin.status().IsNotFound()) {
    return Status::Unavailable("chunk " + chunk.ShortHex() + " of piece " + std::to_string(piece) +
                               " left the cache before it could be offered; it is fetched again");
  }
  if (!pin.ok()) return pin.status().WithContext("piece " + std::to_string(piece) + " arrived");
  // libtorrent takes the piece as if a peer had sent it and hash-checks it;
  // the disk interface sees the chunk is stored and writes nothing.
  // add_piece drops data whose size is not libtorrent's own idea of the
  // piece's size, which for a v2 torrent's last piece may include padding:
  // size the buffer by the torrent, and leave the padding zero.
  // The engine's own copy of the metadata: no call into the session.
  const std::shared_ptr<const lt::torrent_info>& ti = t->info;
  const uint64_t chunk_bytes = t->layout->PieceBytes(piece);
  const size_t piece_bytes = std::max<size_t>(static_cast<size_t>(ti->piece_size(p)), chunk_bytes);
  // A bundle's piece is a small file padded to at most twice its size (its
  // size class, shoal/file_torrent_info.h). The vector overload of
  // add_piece hands the buffer over without waiting for the network thread.
  std::vector<char> data(piece_bytes);
  auto got = impl_->store_.Read(chunk, 0, reinterpret_cast<uint8_t*>(data.data()), chunk_bytes);
  if (!got.ok()) return got.status();
  if (*got != chunk_bytes) return Status::Corruption("chunk " + chunk.ShortHex() + " is short");
  return CallLibtorrent("add piece", [&] {
    h.add_piece(p, std::move(data));
    return Status::OK();
  });
}

Status TorrentEngine::PrioritizePieces(const FileTorrentId& id, uint64_t first, uint64_t last) {
  auto t = impl_->Find(id);
  if (t == nullptr) return impl_->Missing(id);
  if (first > last || last >= t->layout->num_pieces()) {
    return Status::InvalidArgument("pieces " + std::to_string(first) + " to " +
                                   std::to_string(last) + " of torrent " + id.ShortHex() +
                                   ", which has " + std::to_string(t->layout->num_pieces()));
  }
  lt::torrent_handle h;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    h = t->handle;
  }
  return CallLibtorrent("prioritize pieces", [&] {
    for (uint64_t i = first; i <= last; ++i) {
      lt::piece_index_t p(static_cast<int>(i));
      if (h.have_piece(p)) continue;
      h.piece_priority(p, lt::top_priority);
      // Earlier pieces first; a few milliseconds apart keeps their order.
      h.set_piece_deadline(p, static_cast<int>(std::min<uint64_t>(i - first, 1000) * 5));
    }
    return Status::OK();
  });
}

Status TorrentEngine::SkipPieces(const FileTorrentId& id, const std::vector<uint64_t>& pieces) {
  auto t = impl_->Find(id);
  if (t == nullptr) return impl_->Missing(id);
  const uint64_t n = t->layout->num_pieces();
  lt::torrent_handle h;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    if (t->skip.empty()) t->skip.assign(n, false);
    for (uint64_t p : pieces) {
      if (p >= n) {
        return Status::InvalidArgument("piece " + std::to_string(p) + " of torrent " +
                                       id.ShortHex() + ", which has " + std::to_string(n));
      }
      t->skip[p] = true;
    }
    h = t->handle;
  }
  // One call for the batch: libtorrent updates its picker once, not once
  // per piece (which, in a bundle of many files, walks every file).
  std::vector<std::pair<lt::piece_index_t, lt::download_priority_t>> prio;
  prio.reserve(pieces.size());
  for (uint64_t p : pieces)
    prio.emplace_back(lt::piece_index_t(static_cast<int>(p)), lt::dont_download);
  return CallLibtorrent("skip pieces", [&] {
    h.prioritize_pieces(prio);
    return Status::OK();
  });
}

Result<std::vector<uint64_t>> TorrentEngine::UnavailablePieces(const FileTorrentId& id) {
  auto t = impl_->Find(id);
  if (t == nullptr) return impl_->Missing(id);
  lt::torrent_handle h;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    h = t->handle;
  }
  lt::torrent_status st;
  std::vector<int> avail;
  SHOAL_RETURN_IF_ERROR(CallLibtorrent("piece availability", [&] {
    st = h.status(lt::torrent_handle::query_pieces);
    h.piece_availability(avail);
    return Status::OK();
  }));
  std::vector<uint64_t> out;
  for (int i = 0; i < st.pieces.size(); ++i) {
    if (st.pieces.get_bit(lt::piece_index_t(i))) continue;
    if (i < static_cast<int>(avail.size()) && avail[static_cast<size_t>(i)] > 0) continue;
    out.push_back(static_cast<uint64_t>(i));
  }
  return out;
}

void TorrentEngine::ReannounceAll() {
  std::vector<lt::torrent_handle> handles;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    for (const auto& [id, t] : impl_->torrents_) handles.push_back(t->handle);
  }
  for (lt::torrent_handle& h : handles) {
    (void)CallLibtorrent("re-announce", [&] {
      h.force_reannounce(0, -1, lt::torrent_handle::ignore_min_interval);
      return Status::OK();
    });
  }
}

Status TorrentEngine::ConnectPeer(const FileTorrentId& id, const std::string& ip, uint16_t port) {
  auto t = impl_->Find(id);
  if (t == nullptr) return impl_->Missing(id);
  boost::system::error_code ec;
  auto addr = boost::asio::ip::make_address(ip, ec);
  if (ec || port == 0) {
    return Status::InvalidArgument("peer address '" + ip + ":" + std::to_string(port) +
                                   "' is not an IP address and port");
  }
  lt::torrent_handle h;
  {
    std::lock_guard<std::mutex> l(impl_->mu_);
    h = t->handle;
  }
  return CallLibtorrent("connect peer", [&] {
    h.connect_peer(lt::tcp::endpoint(addr, port));
    return Status::OK();
  });
}

Status TorrentEngine::HoldPiece(const FileTorrentId& id, uint64_t piece,
                                std::vector<std::pair<std::string, uint16_t>> receivers,
                                std::chrono::milliseconds hold) {
  auto t = impl_->Find(id);
  if (t == nullptr) return impl_->Missing(id);
  if (piece >= t->layout->num_pieces()) {
    return Status::InvalidArgument("piece " + std::to_string(piece) + " is out of range");
  }
  impl_->holds_->Hold(id, static_cast<uint32_t>(piece), std::move(receivers),
                      PieceHolds::Clock::now() + hold);
  return Status::OK();
}

Status TorrentEngine::Remove(const FileTorrentId& id) {
  std::lock_guard<std::mutex> add(impl_->add_mu_);
  std::lock_guard<std::mutex> l(impl_->mu_);
  if (impl_->stopped_) return Stopped();
  auto it = impl_->torrents_.find(id);
  if (it == impl_->torrents_.end()) return Unknown(id);
  std::shared_ptr<FileTorrent> t = it->second;
  impl_->torrents_.erase(it);
  impl_->tracker_peers_.erase(t->info->name());
  for (uint64_t i = 0; i < t->layout->num_pieces(); ++i) {
    auto range = impl_->chunk_index_.equal_range(t->layout->chunks[i]);
    for (auto e = range.first; e != range.second;) {
      e = e->second.first == id ? impl_->chunk_index_.erase(e) : std::next(e);
    }
  }
  impl_->SessionFor(id).remove_torrent(t->handle);
  impl_->catalog_->Unregister(ShortKeyOf(id));
  Log(LogLevel::kInfo, "p2p.torrent.remove", {{"torrent", id.ShortHex()}});
  return Status::OK();
}

void TorrentEngine::ChunkEvicted(const ChunkId& id) {
  std::lock_guard<std::mutex> l(impl_->evict_mu_);
  impl_->evicted_.push_back(id);
}

}  // namespace shoal
