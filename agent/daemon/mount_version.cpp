#include "daemon/mount_version.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "proto/kj_status.h"
#include "read/read_service.h"

namespace shoal {
namespace {

// A chunk file handed to the caller: its descriptor travels with the
// capability, and the span's pin keeps the chunk in the cache until the
// caller lets go.
class ChunkFileHandle final : public proto::FileHandle::Server {
 public:
  explicit ChunkFileHandle(ChunkSpan span) : span_(std::move(span)) {}
  kj::Maybe<int> getFd() override { return span_.fd(); }

 private:
  ChunkSpan span_;
};

// A chunk evicted between "it is here" and opening it is waited for again,
// this many times in all.
constexpr int kMaxAttempts = 3;

}  // namespace

MountedVersionImpl::MountedVersionImpl(std::shared_ptr<const ResolvedModel> model,
                                       const std::string& token, const RevocationList& revocations,
                                       ReadFetcher& fetcher, ChunkStore& store)
    : model_(std::move(model)), revocations_(revocations), fetcher_(fetcher), store_(store) {
  Result<TokenClaims> claims = PeekTokenClaims(token);
  if (claims.ok()) claims_ = *claims;
  reads_.reserve(model_->manifest.files.size());
  for (const FileEntry& f : model_->manifest.files) reads_.push_back(ReadFileOf(model_, f));
}

Status MountedVersionImpl::TokenStillValid() const {
  if (!claims_) return Status::OK();  // a token the tracker took but we cannot read: as HTTP does
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  Status s = claims_->CheckNotExpired(now_ms);
  if (s.ok()) s = revocations_.Check(*claims_);
  return s.WithContext("read " + model_->ns + "/" + model_->name + " through the mount");
}

kj::Promise<void> MountedVersionImpl::files(FilesContext c) {
  const Manifest& m = model_->manifest;
  auto r = c.getResults();
  r.setVersionId(kj::arrayPtr(model_->version.data(), VersionId::kSize));
  r.setCreatedAtMs(m.created_at_ms);
  r.setPieceSize(m.piece_size);
  auto files = r.initFiles(static_cast<unsigned>(m.files.size()));
  for (size_t i = 0; i < m.files.size(); ++i) {
    auto f = files[static_cast<unsigned>(i)];
    f.setPath(m.files[i].path);
    f.setSize(m.files[i].size);
    f.setMode(m.files[i].mode);
    f.setPiecesRoot(kj::arrayPtr(m.files[i].pieces_root.data(), PiecesRoot::kSize));
  }
  auto dirs = r.initEmptyDirs(static_cast<unsigned>(m.empty_dirs.size()));
  for (size_t i = 0; i < m.empty_dirs.size(); ++i)
    dirs.set(static_cast<unsigned>(i), m.empty_dirs[i]);
  return kj::READY_NOW;
}

kj::Promise<void> MountedVersionImpl::chunk(ChunkContext c) {
  c.allowCancellation();
  ThrowIfError(TokenStillValid());
  auto p = c.getParams();
  if (p.getFile() >= reads_.size()) {
    ThrowIfError(Status::InvalidArgument("file " + std::to_string(p.getFile()) +
                                         " is not in the version (" +
                                         std::to_string(reads_.size()) + " files)"));
  }
  std::shared_ptr<const ReadFile> file = reads_[p.getFile()];
  const uint64_t count = file->chunks.size();
  if (p.getPiece() >= count) {
    ThrowIfError(Status::InvalidArgument("piece " + std::to_string(p.getPiece()) + " of '" +
                                         file->file.path + "' is past its end (" +
                                         std::to_string(count) + " pieces)"));
  }
  const uint64_t last = std::min(std::max(p.getLastPiece(), p.getPiece()), count - 1);
  return Answer(c, file, p.getPiece(), last, kMaxAttempts);
}

kj::Promise<void> MountedVersionImpl::Answer(ChunkContext c, std::shared_ptr<const ReadFile> file,
                                             uint64_t piece, uint64_t last_piece,
                                             int attempts_left) {
  kj::Promise<Status> stored = Status::OK();
  if (store_.Contains(file->chunks[piece])) {
    // Answered at once; the read-ahead starts from the first piece missing.
    for (uint64_t p = piece + 1; p <= last_piece; ++p) {
      if (store_.Contains(file->chunks[p])) continue;
      fetcher_.Await(file, p, last_piece, [](Status) {});
      break;
    }
  } else {
    auto paf = kj::newPromiseAndCrossThreadFulfiller<Status>();
    auto fulfiller =
        std::make_shared<kj::Own<kj::CrossThreadPromiseFulfiller<Status>>>(kj::mv(paf.fulfiller));
    fetcher_.Await(file, piece, last_piece,
                   [fulfiller](Status s) { (*fulfiller)->fulfill(kj::mv(s)); });
    stored = kj::mv(paf.promise);
  }
  return stored.then(
      [this, c, file, piece, last_piece, attempts_left](Status s) mutable -> kj::Promise<void> {
        ThrowIfError(s.WithContext(file->file.path));
        const uint64_t len = file->PieceBytes(piece);
        Result<ChunkSpan> span = store_.OpenSpan(file->chunks[piece], 0, len);
        if (!span.ok()) {
          if (span.status().IsNotFound() && attempts_left > 1)
            return Answer(c, file, piece, last_piece, attempts_left - 1);
          ThrowIfError(span.status().WithContext(file->file.path));
        }
        if (span->length() != len) {
          ThrowIfError(Status::Corruption("chunk " + file->chunks[piece].ShortHex() + " of " +
                                          file->file.path + " is shorter than its manifest says"));
        }
        auto r = c.getResults();
        r.setOffset(span->offset());
        r.setLength(span->length());
        r.setHandle(kj::heap<ChunkFileHandle>(std::move(span).value()));
        return kj::READY_NOW;
      });
}

}  // namespace shoal
