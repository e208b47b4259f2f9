#include "cli/chunk_uploader.h"

#include <fcntl.h>

#include <mutex>

#include "shoal/chunk_hash.h"
#include "shoal/parallel_for.h"
#include "shoal/posix_file.h"

namespace shoal {

std::unordered_map<ChunkId, ChunkSource> LocateChunks(const Manifest& m, const std::string& dir) {
  std::unordered_map<ChunkId, ChunkSource> out;
  for (const FileEntry& f : m.files) {
    std::vector<ChunkId> ids = f.ChunkIds();
    for (size_t i = 0; i < ids.size(); ++i) {
      uint64_t off = uint64_t{i} * m.piece_size;
      out.emplace(ids[i], ChunkSource{dir + "/" + f.path, off,
                                      std::min<uint64_t>(m.piece_size, f.size - off)});
    }
  }
  return out;
}

namespace {

Status ReadChunk(const ChunkSource& src, std::vector<uint8_t>* buf) {
  Result<ScopedFd> fd = OpenFile(src.path, O_RDONLY);
  if (!fd.ok()) return fd.status();
  buf->resize(src.length);
  Result<size_t> got = PreadFull(fd->get(), buf->data(), src.length, src.offset, src.path);
  if (!got.ok()) return got.status();
  if (*got < src.length) {
    return Status::IOError(src.path + " shrank since it was hashed; publish again");
  }
  return Status::OK();
}

}  // namespace

Status UploadChunks(Origin& origin, const std::vector<ChunkId>& ids,
                    const std::unordered_map<ChunkId, ChunkSource>& sources, int parallelism,
                    UploadStats* stats, const std::function<void(const ChunkId&)>& on_done) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  Status first_error;  // protected by mu
  auto worker = [&] {
    std::vector<uint8_t> buf;
    for (size_t i = next++; i < ids.size() && !failed; i = next++) {
      auto it = sources.find(ids[i]);
      Status s = it == sources.end()
                     ? Status::InvalidArgument("tracker asked for chunk " + ids[i].ShortHex() +
                                               " which this checkpoint does not have")
                     : ReadChunk(it->second, &buf);
      if (s.ok() && !ChunkIdMatches(ids[i], HashBlocks(buf.data(), buf.size()))) {
        s = Status::Corruption(it->second.path + " changed since it was hashed; publish again");
      }
      bool uploaded = false;
      if (s.ok()) s = PutChunkIfAbsent(origin, ids[i], buf.data(), buf.size(), &uploaded);
      std::lock_guard<std::mutex> lock(mu);
      if (!s.ok()) {
        if (first_error.ok()) first_error = s;
        failed = true;
        return;
      }
      (uploaded ? stats->uploaded_chunks : stats->skipped_chunks)++;
      if (uploaded) stats->uploaded_bytes += buf.size();
      stats->done_bytes += buf.size();
      if (on_done) on_done(ids[i]);
    }
  };
  RunOnThreads(parallelism, worker);
  return first_error;
}

}  // namespace shoal
