// The write side of ChunkDiskIoImpl, run on the worker that owns the piece:
// blocks into a ChunkWriter, then the piece's hashes and its commit.
#include <algorithm>
#include <cstring>

#include "p2p/chunk_disk_io_impl.h"
#include "shoal/log.h"
#include "shoal/sha256.h"

namespace shoal {

namespace {

lt::storage_error NoLayout() {
  return lt::storage_error(
      lt::error_code(boost::system::errc::no_such_device, boost::system::generic_category()),
      lt::operation_t::file_open);
}

void CopyDigest(const Digest& d, lt::sha256_hash* out) {
  std::memcpy(out->data(), d.data(), Digest::kSize);
}

}  // namespace

lt::storage_error ChunkDiskIoImpl::WritePiece(ChunkStorage& st, int worker, uint64_t piece,
                                              int offset, const char* data, int len) {
  if (st.layout == nullptr) return NoLayout();
  const TorrentLayout& layout = *st.layout;
  if (piece >= layout.num_pieces())
    return ToStorageError(Status::InvalidArgument("piece"), lt::operation_t::file_write);
  // Blocks past the file's end belong to libtorrent's pad file: zeros that
  // are not part of the chunk.
  uint64_t piece_bytes = layout.PieceBytes(piece);
  if (static_cast<uint64_t>(offset) >= piece_bytes) return lt::storage_error();
  if (static_cast<uint64_t>(offset) + static_cast<uint64_t>(len) > piece_bytes) {
    len = static_cast<int>(piece_bytes - static_cast<uint64_t>(offset));
  }
  PieceState& ps = st.pieces[static_cast<size_t>(worker)][piece];
  if (ps.writer == nullptr && !ps.pin.valid()) {
    const ChunkId& id = layout.chunks[piece];
    // The store may already hold this chunk, from another torrent or from
    // the origin: keep it pinned until the piece is hashed, and write nothing.
    auto pin = store_.Pin(id);
    if (pin.ok()) {
      ps.pin = std::move(*pin);
    } else {
      auto w = store_.BeginWrite(id, layout.PieceBytes(piece));
      if (w.ok()) {
        ps.writer = std::move(*w);
      } else if (w.status().code() == Status::Code::kAlreadyExists && (pin = store_.Pin(id)).ok()) {
        ps.pin = std::move(*pin);
      } else {
        counters_->write_failures.fetch_add(1, std::memory_order_relaxed);
        Log(LogLevel::kWarn, "p2p.disk.begin_write_failed",
            {{"chunk", id.ShortHex()}, {"error", w.status()}});
        st.pieces[static_cast<size_t>(worker)].erase(piece);
        return ToStorageError(w.status(), lt::operation_t::file_write);
      }
    }
  }
  if (ps.writer == nullptr) {
    counters_->blocks_skipped.fetch_add(1, std::memory_order_relaxed);
    return lt::storage_error();
  }
  Status s = ps.writer->WriteAt(static_cast<uint64_t>(offset),
                                reinterpret_cast<const uint8_t*>(data), static_cast<size_t>(len));
  if (!s.ok()) {
    counters_->write_failures.fetch_add(1, std::memory_order_relaxed);
    Log(LogLevel::kWarn, "p2p.disk.write_failed",
        {{"chunk", ps.writer->id().ShortHex()}, {"offset", offset}, {"error", s}});
    return ToStorageError(s, lt::operation_t::file_write);
  }
  counters_->blocks_written.fetch_add(1, std::memory_order_relaxed);
  return lt::storage_error();
}

lt::storage_error ChunkDiskIoImpl::HashPiece(ChunkStorage& st, int worker, uint64_t piece,
                                             lt::span<lt::sha256_hash> v2) {
  if (st.layout == nullptr) return NoLayout();
  const TorrentLayout& layout = *st.layout;
  if (piece >= layout.num_pieces()) return NoLayout();
  uint64_t blocks = layout.PieceBlocks(piece);
  uint64_t span = static_cast<uint64_t>(v2.size());
  auto& map = st.pieces[static_cast<size_t>(worker)];
  auto it = map.find(piece);
  if (it != map.end() && it->second.writer != nullptr) {
    ChunkWriter& w = *it->second.writer;
    bool whole = true;
    for (uint64_t i = 0; i < blocks; ++i) {
      auto h = w.BlockHash(i);
      whole = whole && h.ok();
      if (i >= span) continue;
      if (h.ok()) {
        CopyDigest(*h, &v2[static_cast<std::ptrdiff_t>(i)]);
      } else {
        v2[static_cast<std::ptrdiff_t>(i)].clear();
      }
    }
    lt::storage_error err;
    if (whole) {
      Status s = w.Commit();
      if (s.ok()) {
        counters_->pieces_committed.fetch_add(1, std::memory_order_relaxed);
      } else if (s.IsCorruption()) {
        // libtorrent sees the same mismatch in the hashes and fetches the
        // piece again; the bad bytes are dropped with the writer.
        //
        // Beware what else libtorrent 2.0.8 does then. For a v2-only
        // torrent, torrent::piece_failed() queues a request for the piece's
        // 16 KiB block hashes (base 0) and sends it to the next peer it
        // talks to. A peer that cannot answer (any peer that never
        // downloaded that piece itself: every seeder started from
        // have_pieces) rejects it, and hash_picker::hashes_rejected() then
        // indexes its per-512-pieces table with a block index: out of
        // bounds, a null dereference for a file of one piece ("segfault at
        // 8"). Fixed upstream after 2.0.8 (arvidn/libtorrent#8630), and in
        // the libtorrent deploy/libtorrent/ builds (docs/security.md); a
        // Debian build still crashes, and nothing here can stop libtorrent
        // asking. So Shoal peers still never send bytes that fail the hash: the store hashes a
        // chunk file again when it changed since it was last known good (ChunkStoreImpl::
        // OpenChunkFile), and a damaged chunk is dropped, not served.
        counters_->pieces_rejected.fetch_add(1, std::memory_order_relaxed);
      } else {
        counters_->write_failures.fetch_add(1, std::memory_order_relaxed);
        Log(LogLevel::kWarn, "p2p.disk.commit_failed",
            {{"chunk", w.id().ShortHex()}, {"error", s}});
        err = ToStorageError(s, lt::operation_t::file_write);
      }
    }
    map.erase(it);
    return err;
  }
  // No writer: the store held the chunk already (or the piece was never
  // written). Hash what the store has; a missing chunk gives wrong hashes,
  // not an error, so libtorrent treats the piece as not had.
  uint64_t want = std::min(blocks, span);
  if (want > 0 &&
      !HashStoredBlocks(layout.chunks[piece], 0, want, layout.PieceBytes(piece), v2.data())) {
    for (uint64_t i = 0; i < want; ++i) v2[static_cast<std::ptrdiff_t>(i)].clear();
  }
  if (it != map.end()) map.erase(it);
  return lt::storage_error();
}

lt::storage_error ChunkDiskIoImpl::HashBlock(ChunkStorage& st, int worker, uint64_t piece,
                                             int offset, lt::sha256_hash* out) {
  if (st.layout == nullptr) return NoLayout();
  const TorrentLayout& layout = *st.layout;
  if (piece >= layout.num_pieces()) return NoLayout();
  uint64_t block = static_cast<uint64_t>(offset) / kBlockSize;
  auto& map = st.pieces[static_cast<size_t>(worker)];
  auto it = map.find(piece);
  if (it != map.end() && it->second.writer != nullptr) {
    auto h = it->second.writer->BlockHash(block);
    if (h.ok()) {
      CopyDigest(*h, out);
      return lt::storage_error();
    }
  }
  if (!HashStoredBlocks(layout.chunks[piece], block, 1, layout.PieceBytes(piece), out)) {
    out->clear();
  }
  return lt::storage_error();
}

void ChunkDiskIoImpl::ClearPiece(ChunkStorage& st, int worker, uint64_t piece) {
  // Dropping the state aborts an unfinished writer and releases any pin.
  if (st.layout == nullptr) return;
  st.pieces[static_cast<size_t>(worker)].erase(piece);
}

bool ChunkDiskIoImpl::HashStoredBlocks(const ChunkId& id, uint64_t first_block, uint64_t count,
                                       uint64_t chunk_bytes, lt::sha256_hash* out) {
  constexpr size_t kStep = 1u << 20;
  std::unique_ptr<uint8_t[]> buf(new uint8_t[kStep]);
  Sha256 sha;
  uint64_t pos = first_block * kBlockSize;
  uint64_t end = std::min<uint64_t>(chunk_bytes, (first_block + count) * kBlockSize);
  uint64_t i = 0;
  while (pos < end) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kStep, end - pos));
    auto got = store_.Read(id, pos, buf.get(), want);
    if (!got.ok() || *got != want) return false;
    for (size_t b = 0; b < want; b += kBlockSize, ++i) {
      CopyDigest(sha.Hash(buf.get() + b, std::min<size_t>(kBlockSize, want - b)), &out[i]);
    }
    pos += want;
  }
  return true;
}

}  // namespace shoal
