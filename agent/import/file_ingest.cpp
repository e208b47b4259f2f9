#include "import/file_ingest.h"

#include <openssl/evp.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>

#include "shoal/hex.h"
#include "shoal/parallel_for.h"
#include "shoal/sha256.h"

namespace shoal {
namespace {

struct FileState {
  const SourceFile* file = nullptr;
  std::mutex mu;
  std::condition_variable turn;  // the SHA-256 took a piece
  uint64_t next_piece = 0;       // protected by mu; the piece the SHA-256 takes next
  Sha256 sha;                    // protected by mu
  // The MD5 too, when the source declares one; protected by mu.
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md5{nullptr, &EVP_MD_CTX_free};
  std::vector<Digest> roots;         // protected by mu; one per piece
  uint64_t bytes = 0;                // protected by mu; read so far
  bool ended = false;                // protected by mu; the last piece was taken
  std::optional<IngestedFile> done;  // set once, by the worker that ends the file
};

// One worker's share: a piece read by range, or a whole file read in order.
struct Task {
  size_t file = 0;
  uint64_t piece = 0;
  bool whole = false;
};

class Ingest {
 public:
  Ingest(ImportSource& source, const std::vector<SourceFile>& files, const IngestOptions& o)
      : source_(source), options_(o), states_(files.size()) {
    for (size_t i = 0; i < files.size(); ++i) {
      const SourceFile& f = files[i];
      states_[i].file = &f;
      if (!f.md5_hex.empty()) {
        states_[i].md5.reset(EVP_MD_CTX_new());
        EVP_DigestInit_ex(states_[i].md5.get(), EVP_md5(), nullptr);
      }
      const bool by_range = f.ranges && f.size_known;
      if (by_range) {
        const uint64_t pieces = (f.size + o.piece_size - 1) / o.piece_size;
        states_[i].roots.resize(pieces);
        for (uint64_t p = 0; p < pieces; ++p) tasks_.push_back({i, p, false});
      } else {
        tasks_.push_back({i, 0, true});
      }
    }
  }

  Result<std::vector<IngestedFile>> Run() {
    const int threads =
        std::max(1, std::min<int>(options_.parallel, static_cast<int>(tasks_.size())));
    RunOnThreads(threads, [this] { Work(); });
    if (failed_) return error_;
    std::vector<IngestedFile> out;
    out.reserve(states_.size());
    for (size_t i = 0; i < states_.size(); ++i) {
      // Empty files have no piece to end them.
      if (!states_[i].done) SHOAL_RETURN_IF_ERROR(End(i));
      out.push_back(std::move(*states_[i].done));
    }
    return out;
  }

  // Checks a file read whole and hands it to on_file.
  Status End(size_t index) {
    FileState& s = states_[index];
    Result<IngestedFile> f = Finish(s);
    if (!f.ok()) return f.status();
    s.done = std::move(f).value();
    if (options_.on_file) options_.on_file(index, *s.done);
    return Status::OK();
  }

  // Takes piece `index` of a file: hashes it, feeds it to the file's SHA-256
  // in order, and hands it to the sink.
  Status Take(FileState& s, uint64_t index, std::vector<uint8_t>& piece) {
    const uint64_t offset = index * options_.piece_size;
    const SourceFile& f = *s.file;
    if (f.size_known && offset + piece.size() > f.size) {
      return Status::Corruption("'" + f.path + "' from " + source_.Describe() +
                                " has more bytes than the " + std::to_string(f.size) +
                                " the source declared");
    }
    const Digest root = PieceRoot(piece.data(), piece.size(), offset, options_.piece_size);
    {
      std::unique_lock<std::mutex> lock(s.mu);
      s.turn.wait(lock, [&] { return s.next_piece == index || failed_; });
      if (failed_) return Stopped();
      s.sha.Update(piece.data(), piece.size());
      if (s.md5) EVP_DigestUpdate(s.md5.get(), piece.data(), piece.size());
      if (s.roots.size() <= index) s.roots.resize(index + 1);
      s.roots[index] = root;
      s.bytes += piece.size();
      ++s.next_piece;
    }
    s.turn.notify_all();
    if (options_.on_piece) {
      HashedPiece hashed{&f.path, offset, ChunkId::From(root), &piece};
      options_.on_piece(hashed);
    }
    if (options_.on_progress) options_.on_progress(read_ += piece.size());
    return Status::OK();
  }

  bool failed() const { return failed_; }
  static Status Stopped() { return Status::Unavailable("the import stopped"); }

 private:
  void Work() {
    std::vector<uint8_t> piece;
    for (;;) {
      const size_t next = next_task_++;
      if (next >= tasks_.size() || failed_) return;
      Status s = RunTask(tasks_[next], piece);
      if (s.ok() && LastOfFile(tasks_[next])) s = End(tasks_[next].file);
      if (!s.ok()) Fail(s);
    }
  }

  Status RunTask(const Task& t, std::vector<uint8_t>& piece);

  // Whether `t` took the file's last piece: every piece is in the SHA-256.
  bool LastOfFile(const Task& t) {
    FileState& s = states_[t.file];
    std::lock_guard<std::mutex> lock(s.mu);
    const bool all = t.whole || s.next_piece == s.roots.size();
    if (!all || s.ended || s.next_piece == 0) return false;
    s.ended = true;
    return true;
  }

  void Fail(const Status& s) {
    {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (failed_) return;
      error_ = s;
      failed_ = true;
    }
    for (FileState& st : states_) {
      std::lock_guard<std::mutex> lock(st.mu);
      st.turn.notify_all();
    }
  }

  Result<IngestedFile> Finish(FileState& s) {
    const SourceFile& f = *s.file;
    if (f.size_known && s.bytes != f.size) {
      return Status::IOError("'" + f.path + "' from " + source_.Describe() + " stopped after " +
                             std::to_string(s.bytes) + " of its " + std::to_string(f.size) +
                             " bytes");
    }
    IngestedFile out;
    out.hashes = FileHashesFromRoots(s.bytes, std::move(s.roots), options_.piece_size);
    out.sha256 = s.sha.Finish();
    if (s.md5) {
      unsigned char md5[EVP_MAX_MD_SIZE];
      unsigned int len = 0;
      EVP_DigestFinal_ex(s.md5.get(), md5, &len);
      const std::string got = hex::Encode(md5, len);
      if (got != f.md5_hex) {
        return Status::Corruption("'" + f.path + "' from " + source_.Describe() + " has MD5 " +
                                  got + ", not the " + f.md5_hex + " its ETag declares");
      }
    }
    if (f.sha256 && *f.sha256 != out.sha256) {
      return Status::Corruption("'" + f.path + "' from " + source_.Describe() + " has SHA-256 " +
                                out.sha256.ToHex() + ", not the " + f.sha256->ToHex() +
                                " the source declared");
    }
    return out;
  }

  ImportSource& source_;
  const IngestOptions& options_;
  std::vector<FileState> states_;
  std::vector<Task> tasks_;
  std::atomic<size_t> next_task_{0};
  std::atomic<uint64_t> read_{0};
  std::atomic<bool> failed_{false};
  std::mutex error_mu_;
  Status error_;  // protected by error_mu_
};

// Cuts the bytes of a read into pieces, handing each whole one on; the
// last, short piece of a file goes on at Flush.
class PieceCutter : public ByteSink {
 public:
  PieceCutter(Ingest& ingest, FileState& state, uint64_t first_piece, uint32_t piece_size,
              std::vector<uint8_t>& piece)
      : ingest_(ingest), state_(state), index_(first_piece), size_(piece_size), piece_(piece) {
    piece_.resize(size_);
  }

  Status Write(const uint8_t* data, size_t len) override {
    if (ingest_.failed()) return Ingest::Stopped();
    while (len > 0) {
      size_t n = std::min<size_t>(len, size_ - fill_);
      std::copy(data, data + n, piece_.data() + fill_);
      fill_ += n;
      data += n;
      len -= n;
      total_ += n;
      if (fill_ == size_) SHOAL_RETURN_IF_ERROR(Hand());
    }
    return Status::OK();
  }

  Status Flush() { return fill_ > 0 ? Hand() : Status::OK(); }
  uint64_t total() const { return total_; }

 private:
  Status Hand() {
    piece_.resize(fill_);
    Status s = ingest_.Take(state_, index_++, piece_);
    // The sink may have swapped the bytes out for a spare buffer.
    piece_.resize(size_);
    fill_ = 0;
    return s;
  }

  Ingest& ingest_;
  FileState& state_;
  uint64_t index_;
  const uint32_t size_;
  std::vector<uint8_t>& piece_;
  size_t fill_ = 0;
  uint64_t total_ = 0;
};

Status Ingest::RunTask(const Task& t, std::vector<uint8_t>& piece) {
  FileState& s = states_[t.file];
  const SourceFile& f = *s.file;
  const uint64_t offset = t.piece * options_.piece_size;
  const uint64_t length =
      t.whole ? UINT64_MAX : std::min<uint64_t>(options_.piece_size, f.size - offset);
  PieceCutter cutter(*this, s, t.piece, options_.piece_size, piece);
  Status read = source_.Read(f, offset, length, cutter);
  if (!read.ok()) {
    if (failed_) return read;  // another task's error is the one to report
    return read.WithContext("read '" + f.path + "' from " + source_.Describe());
  }
  SHOAL_RETURN_IF_ERROR(cutter.Flush());
  if (!t.whole && cutter.total() != length) {
    return Status::IOError("'" + f.path + "' from " + source_.Describe() + " stopped after " +
                           std::to_string(offset + cutter.total()) + " of its " +
                           std::to_string(f.size) + " bytes");
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<IngestedFile>> IngestFiles(ImportSource& source,
                                              const std::vector<SourceFile>& files,
                                              const IngestOptions& options) {
  SHOAL_RETURN_IF_ERROR(ValidatePieceSize(options.piece_size));
  Ingest ingest(source, files, options);
  return ingest.Run();
}

}  // namespace shoal
