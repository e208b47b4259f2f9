// libtorrent's entry points of ChunkDiskIoImpl. They run on the network
// thread, copy what they must, and queue the work; every completion is posted
// back to the io_context.
#include <cstdlib>
#include <cstring>

#include "libtorrent/add_torrent_params.hpp"
#include "libtorrent/file_storage.hpp"
#include "p2p/chunk_disk_io_impl.h"
#include "shoal/log.h"

namespace shoal {

DiskIoStats DiskIoCounters::Snapshot() const {
  DiskIoStats s;
  s.blocks_written = blocks_written.load(std::memory_order_relaxed);
  s.blocks_skipped = blocks_skipped.load(std::memory_order_relaxed);
  s.pieces_committed = pieces_committed.load(std::memory_order_relaxed);
  s.pieces_rejected = pieces_rejected.load(std::memory_order_relaxed);
  s.blocks_read = blocks_read.load(std::memory_order_relaxed);
  s.read_failures = read_failures.load(std::memory_order_relaxed);
  s.write_failures = write_failures.load(std::memory_order_relaxed);
  s.write_stalls = write_stalls.load(std::memory_order_relaxed);
  return s;
}

std::unique_ptr<lt::disk_interface> NewChunkDiskIo(lt::io_context& ioc,
                                                   const lt::settings_interface& settings,
                                                   ChunkStore& store, const TorrentCatalog& catalog,
                                                   const ChunkDiskIoOptions& options,
                                                   std::shared_ptr<DiskIoCounters> counters) {
  return std::make_unique<ChunkDiskIoImpl>(ioc, settings, store, catalog, options,
                                           std::move(counters));
}

ChunkDiskIoImpl::ChunkDiskIoImpl(lt::io_context& ioc, const lt::settings_interface& settings,
                                 ChunkStore& store, const TorrentCatalog& catalog,
                                 const ChunkDiskIoOptions& options,
                                 std::shared_ptr<DiskIoCounters> counters)
    : ioc_(ioc),
      settings_(settings),
      store_(store),
      catalog_(catalog),
      counters_(std::move(counters)),
      spans_(static_cast<size_t>(options.threads)),
      jobs_(
          options.threads, [this](int w) { DropIdleSpans(w); },
          [this](std::vector<std::unique_ptr<DiskJob>> done) {
            boost::asio::post(ioc_, [done = std::move(done)] {
              for (const auto& d : done) d->Run();
            });
          }) {
  settings_updated();
}

ChunkDiskIoImpl::~ChunkDiskIoImpl() { jobs_.Stop(); }

std::shared_ptr<ChunkStorage> ChunkDiskIoImpl::Get(lt::storage_index_t idx) const {
  size_t i = static_cast<size_t>(static_cast<int>(idx));
  if (i < storages_.size() && storages_[i] != nullptr) return storages_[i];
  // A job for a storage already removed: it fails as one without a layout.
  auto none = std::make_shared<ChunkStorage>();
  none->pieces.resize(static_cast<size_t>(jobs_.workers()));
  return none;
}

int ChunkDiskIoImpl::WorkerOf(lt::piece_index_t piece) const {
  return static_cast<int>(piece) % jobs_.workers();
}

lt::storage_holder ChunkDiskIoImpl::new_torrent(lt::storage_params const& p,
                                                std::shared_ptr<void> const&) {
  ShortInfoHash key;
  std::memcpy(key.data(), p.info_hash.data(), key.size());
  auto st = std::make_shared<ChunkStorage>();
  st->layout = catalog_.Find(key);
  st->pieces.resize(static_cast<size_t>(jobs_.workers()));
  if (st->layout == nullptr ||
      st->layout->num_pieces() != static_cast<uint64_t>(p.files.num_pieces())) {
    Log(LogLevel::kError, "p2p.disk.unknown_torrent", {{"name", p.files.name()}});
    st->layout = nullptr;
  }
  int idx;
  if (!free_slots_.empty()) {
    idx = free_slots_.back();
    free_slots_.pop_back();
    storages_[static_cast<size_t>(idx)] = std::move(st);
  } else {
    idx = static_cast<int>(storages_.size());
    storages_.push_back(std::move(st));
  }
  return lt::storage_holder(lt::storage_index_t(idx), *this);
}

void ChunkDiskIoImpl::remove_torrent(lt::storage_index_t idx) {
  // Queued jobs keep their own reference; the storage (and any unfinished
  // writers, which then abort) goes when the last of them ends.
  storages_[static_cast<size_t>(static_cast<int>(idx))].reset();
  free_slots_.push_back(static_cast<int>(idx));
}

void ChunkDiskIoImpl::async_read(
    lt::storage_index_t storage, lt::peer_request const& r,
    std::function<void(lt::disk_buffer_holder, lt::storage_error const&)> handler,
    lt::disk_job_flags_t) {
  int w = WorkerOf(r.piece);
  jobs_.Push(static_cast<size_t>(w),
             MakeDiskJob([this, st = Get(storage), r, w, h = std::move(handler)]() mutable {
               char* buf = static_cast<char*>(std::malloc(static_cast<size_t>(r.length)));
               lt::storage_error err;
               if (buf == nullptr) {
                 err = lt::storage_error(lt::error_code(ENOMEM, boost::system::generic_category()),
                                         lt::operation_t::alloc_cache_piece);
               } else {
                 err = ReadBlock(*st, w, static_cast<uint64_t>(static_cast<int>(r.piece)), r.start,
                                 buf, r.length);
               }
               if (err && buf != nullptr) {
                 std::free(buf);
                 buf = nullptr;
               }
               lt::disk_buffer_holder holder(*this, buf, buf == nullptr ? 0 : r.length);
               DiskJobQueue::Complete(MakeDiskJob([h = std::move(h), b = std::move(holder),
                                                   err]() mutable { h(std::move(b), err); }));
             }));
}

bool ChunkDiskIoImpl::async_write(lt::storage_index_t storage, lt::peer_request const& r,
                                  char const* buf, std::shared_ptr<lt::disk_observer> o,
                                  std::function<void(lt::storage_error const&)> handler,
                                  lt::disk_job_flags_t) {
  // The buffer is libtorrent's and valid only during this call.
  // Blocks are at most 16 KiB; anything else is not from a peer and gets
  // its own buffer.
  bool pooled = static_cast<size_t>(r.length) <= BlockPool::kBlockBytes;
  char* raw = pooled ? blocks_.Get() : new char[static_cast<size_t>(r.length)];
  std::memcpy(raw, buf, static_cast<size_t>(r.length));
  auto release = [this, pooled](char* b) {
    if (pooled) {
      blocks_.Put(b);
    } else {
      delete[] b;
    }
  };
  std::unique_ptr<char, decltype(release)> copy(raw, release);
  bool stall = false;
  {
    std::lock_guard<std::mutex> l(write_mu_);
    queued_write_bytes_ += r.length;
    if (queued_write_bytes_ > write_limit_ && o != nullptr) {
      stalled_.push_back(std::move(o));
      stall = true;
      counters_->write_stalls.fetch_add(1, std::memory_order_relaxed);
    }
  }
  int w = WorkerOf(r.piece);
  jobs_.Push(
      static_cast<size_t>(w), MakeDiskJob([this, st = Get(storage), r, w, data = std::move(copy),
                                           h = std::move(handler)]() mutable {
        lt::storage_error err = WritePiece(*st, w, static_cast<uint64_t>(static_cast<int>(r.piece)),
                                           r.start, data.get(), r.length);
        data.reset();
        DiskJobQueue::Complete(MakeDiskJob([h = std::move(h), err] { h(err); }));
        WriteDone(r.length);
      }));
  return stall;
}

void ChunkDiskIoImpl::WriteDone(int len) {
  std::vector<std::shared_ptr<lt::disk_observer>> wake;
  {
    std::lock_guard<std::mutex> l(write_mu_);
    queued_write_bytes_ -= len;
    if (queued_write_bytes_ <= write_limit_ / 2 && !stalled_.empty()) wake.swap(stalled_);
  }
  if (wake.empty()) return;
  // on_disk() must run on the network thread.
  boost::asio::post(ioc_, [wake = std::move(wake)] {
    for (const auto& o : wake) o->on_disk();
  });
}

void ChunkDiskIoImpl::async_hash(
    lt::storage_index_t storage, lt::piece_index_t piece, lt::span<lt::sha256_hash> v2,
    lt::disk_job_flags_t flags,
    std::function<void(lt::piece_index_t, lt::sha1_hash const&, lt::storage_error const&)>
        handler) {
  int w = WorkerOf(piece);
  // `v2` points into a vector the handler owns: the handler is only ever
  // moved, never copied, until it has run.
  jobs_.Push(
      static_cast<size_t>(w),
      MakeDiskJob([this, st = Get(storage), piece, v2, flags, w, h = std::move(handler)]() mutable {
        lt::storage_error err;
        if (flags & lt::disk_interface::v1_hash) {
          err = lt::storage_error(lt::error_code(boost::system::errc::operation_not_supported,
                                                 boost::system::generic_category()),
                                  lt::operation_t::file_read);
        } else {
          err = HashPiece(*st, w, static_cast<uint64_t>(static_cast<int>(piece)), v2);
        }
        DiskJobQueue::Complete(MakeDiskJob(
            [h = std::move(h), piece, err]() mutable { h(piece, lt::sha1_hash(), err); }));
      }));
}

void ChunkDiskIoImpl::async_hash2(
    lt::storage_index_t storage, lt::piece_index_t piece, int offset, lt::disk_job_flags_t,
    std::function<void(lt::piece_index_t, lt::sha256_hash const&, lt::storage_error const&)>
        handler) {
  int w = WorkerOf(piece);
  jobs_.Push(
      static_cast<size_t>(w),
      MakeDiskJob([this, st = Get(storage), piece, offset, w, h = std::move(handler)]() mutable {
        lt::sha256_hash hash;
        lt::storage_error err =
            HashBlock(*st, w, static_cast<uint64_t>(static_cast<int>(piece)), offset, &hash);
        DiskJobQueue::Complete(
            MakeDiskJob([h = std::move(h), piece, hash, err]() mutable { h(piece, hash, err); }));
      }));
}

void ChunkDiskIoImpl::async_clear_piece(lt::storage_index_t storage, lt::piece_index_t piece,
                                        std::function<void(lt::piece_index_t)> handler) {
  int w = WorkerOf(piece);
  jobs_.Push(
      static_cast<size_t>(w),
      MakeDiskJob([this, st = Get(storage), piece, w, h = std::move(handler)]() mutable {
        ClearPiece(*st, w, static_cast<uint64_t>(static_cast<int>(piece)));
        DiskJobQueue::Complete(MakeDiskJob([h = std::move(h), piece]() mutable { h(piece); }));
      }));
}

void ChunkDiskIoImpl::async_check_files(
    lt::storage_index_t, lt::add_torrent_params const*,
    lt::aux::vector<std::string, lt::file_index_t>,
    std::function<void(lt::status_t, lt::storage_error const&)> handler) {
  // The engine passes the store's pieces in have_pieces; with no error
  // libtorrent trusts them, and a chunk evicted since is caught on read.
  boost::asio::post(
      ioc_, [h = std::move(handler)]() mutable { h(lt::status_t::no_error, lt::storage_error()); });
}

void ChunkDiskIoImpl::async_move_storage(
    lt::storage_index_t, std::string p, lt::move_flags_t,
    std::function<void(lt::status_t, std::string const&, lt::storage_error const&)> handler) {
  // Chunks live in the store; there is nothing to move.
  boost::asio::post(ioc_, [h = std::move(handler), p = std::move(p)]() mutable {
    h(lt::status_t::no_error, p, lt::storage_error());
  });
}

void ChunkDiskIoImpl::async_release_files(lt::storage_index_t, std::function<void()> handler) {
  if (handler) boost::asio::post(ioc_, std::move(handler));
}

void ChunkDiskIoImpl::async_stop_torrent(lt::storage_index_t, std::function<void()> handler) {
  if (handler) boost::asio::post(ioc_, std::move(handler));
}

void ChunkDiskIoImpl::async_rename_file(
    lt::storage_index_t, lt::file_index_t index, std::string name,
    std::function<void(std::string const&, lt::file_index_t, lt::storage_error const&)> handler) {
  boost::asio::post(ioc_, [h = std::move(handler), index, n = std::move(name)]() mutable {
    h(n, index, lt::storage_error());
  });
}

void ChunkDiskIoImpl::async_delete_files(lt::storage_index_t, lt::remove_flags_t,
                                         std::function<void(lt::storage_error const&)> handler) {
  // Chunks may be shared with other torrents; only the store's eviction
  // removes them.
  boost::asio::post(ioc_, [h = std::move(handler)]() mutable { h(lt::storage_error()); });
}

void ChunkDiskIoImpl::async_set_file_priority(
    lt::storage_index_t, lt::aux::vector<lt::download_priority_t, lt::file_index_t> prio,
    std::function<void(lt::storage_error const&,
                       lt::aux::vector<lt::download_priority_t, lt::file_index_t>)>
        handler) {
  boost::asio::post(ioc_, [h = std::move(handler), p = std::move(prio)]() mutable {
    h(lt::storage_error(), std::move(p));
  });
}

void ChunkDiskIoImpl::update_stats_counters(lt::counters&) const {}

std::vector<lt::open_file_state> ChunkDiskIoImpl::get_status(lt::storage_index_t) const {
  return {};
}

void ChunkDiskIoImpl::abort(bool) { jobs_.Stop(); }

void ChunkDiskIoImpl::submit_jobs() {}

void ChunkDiskIoImpl::settings_updated() {
  int limit = settings_.get_int(lt::settings_pack::max_queued_disk_bytes);
  std::lock_guard<std::mutex> l(write_mu_);
  write_limit_ = limit < (4 << 20) ? (4 << 20) : limit;
}

void ChunkDiskIoImpl::free_disk_buffer(char* b) { std::free(b); }

lt::storage_error ChunkDiskIoImpl::ToStorageError(const Status& s, lt::operation_t op) {
  using boost::system::errc::errc_t;
  errc_t e;
  switch (s.code()) {
    case Status::Code::kNoSpace:
      e = errc_t::no_space_on_device;
      break;
    case Status::Code::kNotFound:
      e = errc_t::no_such_file_or_directory;
      break;
    case Status::Code::kInvalidArgument:
      e = errc_t::invalid_argument;
      break;
    default:
      e = errc_t::io_error;
      break;
  }
  return lt::storage_error(lt::error_code(e, boost::system::generic_category()), op);
}

}  // namespace shoal
