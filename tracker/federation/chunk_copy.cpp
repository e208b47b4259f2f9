#include "federation/chunk_copy.h"

#include <thread>
#include <unordered_set>

#include "common/tracker_metrics.h"
#include "registry/registry_store.h"
#include "shoal/byte_stream.h"
#include "shoal/chunk_hash.h"
#include "shoal/merkle.h"
#include "shoal/origin.h"
#include "shoal/parallel_for.h"
#include "shoal/utc_time.h"

namespace shoal::tracker {
namespace {

// Reads one chunk from the upstream, checks it and stores it here.
Status CopyOne(const ChunkCopyDeps& d, const ChunkRef& c) {
  d.pacer.Take(c.size);
  StringSink sink;
  sink.str().reserve(c.size);
  Status got = d.from.Get(ChunkKey(c.id), 0, Origin::kToEnd, sink);
  if (!got.ok()) return got.WithContext("reading chunk " + c.id.ToHex() + " upstream");
  const std::string& bytes = sink.str();
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  if (bytes.size() != c.size || !ChunkIdMatches(c.id, HashBlocks(data, bytes.size()))) {
    d.metrics.follow_chunks_refused++;
    return Status::Corruption("chunk " + c.id.ToHex() + " in " + d.from.Describe() + " is " +
                              std::to_string(bytes.size()) + " bytes that do not hash to its ID (" +
                              std::to_string(c.size) + " bytes expected); not copied");
  }
  SHOAL_RETURN_IF_ERROR(
      d.to.Put(ChunkKey(c.id), data, bytes.size()).WithContext("storing chunk " + c.id.ToHex()));
  SHOAL_RETURN_IF_ERROR(d.store.AddChunks({{c.id, c.size}}, NowMs()));
  d.metrics.follow_chunks_copied++;
  d.metrics.follow_bytes_copied += c.size;
  return Status::OK();
}

}  // namespace

std::vector<ChunkRef> ChunksOf(const Manifest& m) {
  std::vector<ChunkRef> out;
  std::unordered_set<ChunkId> seen;
  for (const FileEntry& f : m.files) {
    const std::vector<ChunkId> ids = f.ChunkIds();
    for (size_t i = 0; i < ids.size(); ++i) {
      const uint64_t start = static_cast<uint64_t>(i) * m.piece_size;
      const uint64_t size = std::min<uint64_t>(m.piece_size, f.size - start);
      if (seen.insert(ids[i]).second) out.push_back({ids[i], size});
    }
  }
  return out;
}

void CopyPacer::Take(uint64_t bytes) {
  if (rate_ == 0 || bytes == 0) return;
  std::chrono::steady_clock::time_point at;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (next_ < now) next_ = now;
    at = next_;
    next_ += std::chrono::microseconds(bytes * 1000000 / rate_);
  }
  std::this_thread::sleep_until(at);
}

Status CopyChunks(const ChunkCopyDeps& d, const std::vector<ChunkRef>& chunks,
                  const std::atomic<bool>& stop, std::atomic<uint64_t>* bytes_left) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first;
  RunOnThreads(std::min<int>(d.parallelism, static_cast<int>(chunks.size())), [&] {
    for (size_t i = next++; i < chunks.size(); i = next++) {
      if (failed || stop) return;
      Status s = CopyOne(d, chunks[i]);
      if (!s.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (first.ok()) first = s;
        failed = true;
        return;
      }
      if (bytes_left != nullptr) *bytes_left -= chunks[i].size;
    }
  });
  if (!first.ok()) return first;
  if (stop) return Status::Unavailable("the mirror is stopping");
  return Status::OK();
}

}  // namespace shoal::tracker
