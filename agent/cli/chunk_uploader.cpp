#include "cli/chunk_uploader.h"

#include <fcntl.h>
#include <unistd.h>

#include <mutex>
#include <thread>

#include "shoal/chunk_hash.h"

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
  int fd = ::open(src.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + src.path, errno);
  buf->resize(src.length);
  size_t done = 0;
  Status s;
  while (done < src.length) {
    ssize_t n =
        ::pread(fd, buf->data() + done, src.length - done, static_cast<off_t>(src.offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      s = n < 0 ? Status::FromErrno("read " + src.path, errno)
                : Status::IOError(src.path + " shrank since it was hashed; publish again");
      break;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return s;
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
  std::vector<std::thread> threads;
  for (int t = 1; t < parallelism; ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  return first_error;
}

}  // namespace shoal
