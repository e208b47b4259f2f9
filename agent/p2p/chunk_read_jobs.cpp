// The read side of ChunkDiskIoImpl: blocks served to peers from the store.
//
// Each worker keeps the last few chunk files it read open (as ChunkSpans,
// which pin their chunks), so a peer reading a piece block by block costs
// one pread per block rather than an open, a pin and a close.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "p2p/chunk_disk_io_impl.h"
#include "shoal/log.h"

namespace shoal {

namespace {

constexpr size_t kSpanCacheSize = 4;
constexpr auto kSpanIdle = std::chrono::seconds(2);

}  // namespace

lt::storage_error ChunkDiskIoImpl::ReadBlock(ChunkStorage& st, int worker, uint64_t piece,
                                             int offset, char* out, int len) {
  auto fail = [&](const Status& s) {
    uint64_t n = counters_->read_failures.fetch_add(1, std::memory_order_relaxed);
    // A peer asks for a piece block by block: log the first failure and then
    // one in a hundred, not sixteen lines per lost piece.
    if (n % 100 == 0) {
      Log(LogLevel::kWarn, "p2p.disk.read_failed",
          {{"piece", piece}, {"error", s}, {"failures", n + 1}});
    }
    return ToStorageError(s, lt::operation_t::file_read);
  };
  if (st.layout == nullptr || piece >= st.layout->num_pieces()) {
    return fail(Status::NotFound("piece " + std::to_string(piece) + " is not in this torrent"));
  }
  const ChunkId& id = st.layout->chunks[piece];
  auto now = std::chrono::steady_clock::now();
  auto& entries = spans_[static_cast<size_t>(worker)].entries;
  size_t i = 0;
  while (i < entries.size() && entries[i].span.id() != id) ++i;
  if (i == entries.size()) {
    auto span = store_.OpenSpan(id, 0, st.layout->PieceBytes(piece));
    if (!span.ok()) return fail(span.status());
    if (entries.size() == kSpanCacheSize) entries.erase(entries.begin());
    entries.push_back(SpanCache::Entry{std::move(*span), now});
    i = entries.size() - 1;
  } else if (i + 1 != entries.size()) {
    SpanCache::Entry e = std::move(entries[i]);
    entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
    entries.push_back(std::move(e));
    i = entries.size() - 1;
  }
  SpanCache::Entry& e = entries[i];
  e.last_use = now;
  // libtorrent pads a v2 file to whole pieces with a pad file, and may ask
  // for a block that runs past the file's end: the pad is zeros.
  uint64_t real = static_cast<uint64_t>(offset) >= e.span.length()
                      ? 0
                      : std::min<uint64_t>(static_cast<uint64_t>(len),
                                           e.span.length() - static_cast<uint64_t>(offset));
  if (real < static_cast<uint64_t>(len)) {
    std::memset(out + real, 0, static_cast<size_t>(static_cast<uint64_t>(len) - real));
  }
  // Not PreadFull: its error text is built per call, and this runs for
  // every 16 KiB block a peer asks for.
  size_t done = 0;
  while (done < real) {
    ssize_t n = ::pread(e.span.fd(), out + done, static_cast<size_t>(real) - done,
                        static_cast<off_t>(e.span.offset() + static_cast<uint64_t>(offset) + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      Status s = n < 0 ? Status::FromErrno("read chunk " + id.ShortHex(), errno)
                       : Status::NotFound("chunk " + id.ShortHex() + " is shorter than recorded");
      entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
      return fail(s);
    }
    done += static_cast<size_t>(n);
  }
  counters_->blocks_read.fetch_add(1, std::memory_order_relaxed);
  return lt::storage_error();
}

void ChunkDiskIoImpl::DropIdleSpans(int worker) {
  auto now = std::chrono::steady_clock::now();
  auto& entries = spans_[static_cast<size_t>(worker)].entries;
  for (size_t i = 0; i < entries.size();) {
    if (now - entries[i].last_use > kSpanIdle) {
      entries.erase(entries.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

}  // namespace shoal
