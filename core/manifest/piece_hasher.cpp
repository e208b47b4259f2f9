#include "shoal/piece_hasher.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include "shoal/merkle.h"
#include "shoal/parallel_for.h"
#include "shoal/posix_file.h"
#include "shoal/sha256.h"

namespace shoal {
namespace {

int Log2(uint64_t pow2) {
  int h = 0;
  while ((uint64_t{1} << h) < pow2) ++h;
  return h;
}

// A span of consecutive pieces of one file, hashed by one worker.
struct Task {
  size_t file;
  uint64_t first_piece;
  uint64_t piece_count;
};

struct FileState {
  std::string path;
  uint64_t size = 0;
  std::vector<Digest> piece_roots;  // written by workers at distinct indices
};

// Reads exactly `len` bytes; a short read means the file shrank under the hasher.
Status ReadFully(int fd, uint8_t* buf, size_t len, uint64_t offset, const std::string& path) {
  Result<size_t> got = PreadFull(fd, buf, len, offset, path);
  if (!got.ok()) return got.status();
  if (*got < len) {
    return Status::IOError(path +
                           " shrank while it was being hashed; hash it again once it is stable");
  }
  return Status::OK();
}

// Reads one piece in `buf`-sized preads and returns its 16 KiB leaf hashes;
// with `keep`, the piece's bytes stay in *keep (resized to the piece).
Status HashPiece(int fd, const FileState& file, uint64_t start, uint64_t len,
                 std::vector<uint8_t>& buf, std::vector<uint8_t>* keep, Sha256& sha,
                 std::vector<Digest>* leaves) {
  if (keep != nullptr) keep->resize(len);
  for (uint64_t off = 0; off < len; off += buf.size()) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), len - off));
    uint8_t* dst = keep != nullptr ? keep->data() + off : buf.data();
    SHOAL_RETURN_IF_ERROR(ReadFully(fd, dst, n, start + off, file.path));
    for (size_t b = 0; b < n; b += kBlockSize) {
      leaves->push_back(sha.Hash(dst + b, std::min<size_t>(kBlockSize, n - b)));
    }
  }
  return Status::OK();
}

// Hashes the pieces of one task into file.piece_roots, handing each piece
// to `sink` when there is one. `piece` is the worker's whole-piece buffer,
// kept from task to task: a fresh one would be faulted in and zeroed.
Status HashTask(const Task& task, FileState& file, int fd, uint32_t piece_size, bool single_piece,
                std::vector<uint8_t>& buf, std::vector<uint8_t>& piece, const PieceSink& sink,
                Sha256& sha) {
  const uint64_t leaves_per_piece = piece_size / kBlockSize;
  std::vector<Digest> leaves;
  for (uint64_t p = task.first_piece; p < task.first_piece + task.piece_count; ++p) {
    uint64_t start = p * piece_size;
    uint64_t len = std::min<uint64_t>(piece_size, file.size - start);
    leaves.clear();
    leaves.reserve(BlockCount(len));
    SHOAL_RETURN_IF_ERROR(
        HashPiece(fd, file, start, len, buf, sink ? &piece : nullptr, sha, &leaves));
    uint64_t width = single_piece ? NextPowerOfTwo(leaves.size()) : leaves_per_piece;
    file.piece_roots[p] = MerkleRoot(std::move(leaves), width);
    leaves = {};
    if (sink) {
      HashedPiece hashed{&file.path, start, ChunkId::From(file.piece_roots[p]), &piece};
      sink(hashed);
    }
  }
  return Status::OK();
}

}  // namespace

Status ValidatePieceSize(uint64_t piece_size) {
  if (!IsPowerOfTwo(piece_size) || piece_size < kMinPieceSize || piece_size > kMaxPieceSize) {
    return Status::InvalidArgument("piece size " + std::to_string(piece_size) +
                                   " must be a power of two from 16 KiB to 64 MiB");
  }
  return Status::OK();
}

Status HashOptions::Validate() const {
  SHOAL_RETURN_IF_ERROR(ValidatePieceSize(piece_size));
  if (threads < 0) return Status::InvalidArgument("threads must be >= 0");
  if (read_size == 0 || read_size % kBlockSize != 0) {
    return Status::InvalidArgument("read size must be a positive multiple of 16 KiB");
  }
  return Status::OK();
}

PiecesRoot PiecesRootFromLayer(const std::vector<ChunkId>& layer, uint32_t piece_size) {
  std::vector<Digest> leaves;
  leaves.reserve(layer.size());
  for (const ChunkId& c : layer) leaves.push_back(Digest::From(c));
  return PiecesRoot::From(
      MerkleRoot(std::move(leaves), NextPowerOfTwo(layer.size()), Log2(piece_size / kBlockSize)));
}

FileHashes FileHashesFromRoots(uint64_t size, std::vector<Digest> piece_roots,
                               uint32_t piece_size) {
  FileHashes out;
  out.size = size;
  if (size == 0) return out;
  if (size <= piece_size) {
    out.pieces_root = PiecesRoot::From(piece_roots[0]);
    return out;
  }
  out.piece_layer.reserve(piece_roots.size());
  for (const Digest& d : piece_roots) out.piece_layer.push_back(ChunkId::From(d));
  out.pieces_root = PiecesRootFromLayer(out.piece_layer, piece_size);
  return out;
}

Digest PieceRoot(const uint8_t* data, size_t len, uint64_t offset, uint32_t piece_size) {
  std::vector<Digest> leaves = HashBlocks(data, len);
  // A whole piece pads to piece_size / 16 KiB either way.
  const bool whole_file = offset == 0 && len < piece_size;
  uint64_t width = whole_file ? NextPowerOfTwo(leaves.size()) : piece_size / kBlockSize;
  return MerkleRoot(std::move(leaves), width);
}

FileHashes HashBuffer(const uint8_t* data, uint64_t len, uint32_t piece_size) {
  std::vector<Digest> roots;
  for (uint64_t off = 0; off < len; off += piece_size) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(piece_size, len - off));
    roots.push_back(PieceRoot(data + off, n, off, piece_size));
  }
  return FileHashesFromRoots(len, std::move(roots), piece_size);
}

std::vector<ChunkId> FileChunkIds(const FileHashes& file) {
  if (file.size == 0) return {};
  if (file.piece_layer.empty()) return {ChunkId::From(file.pieces_root)};
  return file.piece_layer;
}

namespace {

// Stats every file and cuts it into tasks of consecutive pieces.
Status PlanTasks(const std::vector<std::string>& paths, uint32_t piece_size,
                 std::vector<FileState>* files, std::vector<Task>* tasks, uint64_t* bytes_total) {
  files->resize(paths.size());
  // Tasks of at least 16 MiB keep per-task overhead small at small piece sizes.
  const uint64_t pieces_per_task = std::max<uint64_t>(1, (16u << 20) / piece_size);
  for (size_t i = 0; i < paths.size(); ++i) {
    struct stat st;
    if (::stat(paths[i].c_str(), &st) != 0) return Status::FromErrno("stat " + paths[i], errno);
    if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(paths[i] + " is not a regular file");
    FileState& f = (*files)[i];
    f.path = paths[i];
    f.size = static_cast<uint64_t>(st.st_size);
    *bytes_total += f.size;
    uint64_t pieces = (f.size + piece_size - 1) / piece_size;
    f.piece_roots.resize(pieces);
    for (uint64_t p = 0; p < pieces; p += pieces_per_task) {
      tasks->push_back({i, p, std::min(pieces_per_task, pieces - p)});
    }
  }
  return Status::OK();
}

// The tasks, and what the threads that take them share.
class HashRun {
 public:
  HashRun(std::vector<FileState>& files, const std::vector<Task>& tasks, const HashOptions& options,
          const HashProgress& progress, uint64_t bytes_total)
      : files_(files),
        tasks_(tasks),
        options_(options),
        progress_(progress),
        bytes_total_(bytes_total) {}

  // Hashes every task on `threads` threads (this one included); the first
  // error stops them all.
  Status Run(int threads) {
    RunOnThreads(threads, [this] { Work(); });
    return first_error_;
  }

 private:
  // One thread: takes tasks until none is left or one has failed.
  void Work() {
    const uint32_t piece_size = options_.piece_size;
    std::vector<uint8_t> buf(options_.read_size);
    std::vector<uint8_t> piece;  // whole pieces, for options_.on_piece
    Sha256 sha;
    ScopedFd fd;
    size_t open_file = SIZE_MAX;
    for (;;) {
      if (failed_.load(std::memory_order_relaxed)) return;
      size_t t = next_task_.fetch_add(1);
      if (t >= tasks_.size()) return;
      const Task& task = tasks_[t];
      FileState& file = files_[task.file];
      Status s;
      if (open_file != task.file) {
        fd.reset(::open(file.path.c_str(), O_RDONLY | O_CLOEXEC));
        open_file = task.file;
        if (fd.get() < 0) {
          s = Status::FromErrno("open " + file.path, errno);
        } else {
          ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
        }
      }
      if (s.ok()) {
        s = HashTask(task, file, fd.get(), piece_size, file.size <= piece_size, buf, piece,
                     options_.on_piece, sha);
      }
      if (!Done(task, file, s)) return;
    }
  }

  // Records a finished task; false if it (or an earlier one) failed.
  bool Done(const Task& task, const FileState& file, const Status& s) {
    const uint32_t piece_size = options_.piece_size;
    std::lock_guard<std::mutex> lock(mu_);
    if (!s.ok()) {
      if (first_error_.ok()) first_error_ = s;
      failed_ = true;
      return false;
    }
    uint64_t start = task.first_piece * piece_size;
    bytes_done_ += std::min<uint64_t>(task.piece_count * piece_size, file.size - start);
    if (progress_) progress_(bytes_done_, bytes_total_);
    return true;
  }

  std::vector<FileState>& files_;
  const std::vector<Task>& tasks_;
  const HashOptions& options_;
  const HashProgress& progress_;
  const uint64_t bytes_total_;
  std::atomic<size_t> next_task_{0};
  std::atomic<bool> failed_{false};
  std::mutex mu_;
  Status first_error_;       // protected by mu_
  uint64_t bytes_done_ = 0;  // protected by mu_
};

}  // namespace

Result<std::vector<FileHashes>> HashFiles(const std::vector<std::string>& paths,
                                          const HashOptions& options,
                                          const HashProgress& progress) {
  SHOAL_RETURN_IF_ERROR(options.Validate());
  std::vector<FileState> files;
  std::vector<Task> tasks;
  uint64_t bytes_total = 0;
  SHOAL_RETURN_IF_ERROR(PlanTasks(paths, options.piece_size, &files, &tasks, &bytes_total));
  int threads = options.threads > 0
                    ? options.threads
                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = static_cast<int>(
      std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(1, tasks.size())));
  HashRun run(files, tasks, options, progress, bytes_total);
  SHOAL_RETURN_IF_ERROR(run.Run(threads));

  std::vector<FileHashes> out;
  out.reserve(files.size());
  for (FileState& f : files)
    out.push_back(FileHashesFromRoots(f.size, std::move(f.piece_roots), options.piece_size));
  return out;
}

}  // namespace shoal
