#include "read/range_source.h"

#include <memory>
#include <mutex>

namespace shoal {
namespace {

// A chunk evicted between "it is here" and opening it is waited for again,
// this many times.
constexpr int kMaxAttempts = 3;

}  // namespace

RangeSource::RangeSource(ReadFetcher& fetcher, ChunkStore& store,
                         std::shared_ptr<const ReadFile> file, ByteRange range,
                         std::function<void(uint64_t)> on_piece)
    : fetcher_(fetcher),
      store_(store),
      file_(std::move(file)),
      range_(range),
      on_piece_(std::move(on_piece)),
      pos_(range.first) {}

void RangeSource::Prime(std::chrono::milliseconds within, std::function<void(Status)> done) {
  // With the first piece on the node, the range's first chunk that is not:
  // if no peer or the origin can supply it within the same wait, the answer
  // is a clean 503 rather than a body cut off there. (A cold first piece is
  // the first missing chunk itself.)
  const uint64_t first_piece = pos_ / file_->piece_size;
  const uint64_t last_piece = range_.last / file_->piece_size;
  uint64_t missing = last_piece + 1;
  if (store_.Contains(file_->chunks[first_piece])) {
    missing = first_piece + 1;
    while (missing <= last_piece && store_.Contains(file_->chunks[missing])) ++missing;
  }
  // Both waits may end on different threads; the last to end answers.
  struct Join {
    std::mutex mu;
    std::function<void(Status)> done;
    int left = 1;
    Status error;
  };
  auto join = std::make_shared<Join>();
  join->done = std::move(done);
  join->left = missing <= last_piece ? 2 : 1;
  auto finished = [join](Status s) {
    std::function<void(Status)> done;
    {
      std::lock_guard<std::mutex> l(join->mu);
      if (!s.ok() && join->error.ok()) join->error = s;
      if (--join->left > 0) return;
      done = std::move(join->done);
    }
    done(join->error);
  };
  Send(
      [self = shared_from_this(), finished](Result<HttpBodyPiece> piece) {
        if (!piece.ok()) return finished(piece.status());
        self->primed_ = std::move(piece).value();
        finished(Status::OK());
      },
      0, within);
  if (missing > last_piece) return;
  const uint64_t offset = missing * file_->piece_size;
  fetcher_.Await(
      file_, missing, last_piece,
      [finished, offset](Status s) {
        finished(s.ok() ? s : s.WithContext("bytes from " + std::to_string(offset) + " on"));
      },
      within);
}

void RangeSource::Next(Ready ready) {
  if (primed_) {
    HttpBodyPiece first = std::move(*primed_);
    primed_.reset();
    return ready(std::move(first));
  }
  Send(std::move(ready), 0, std::chrono::milliseconds::zero());
}

void RangeSource::Send(Ready ready, int attempt, std::chrono::milliseconds give_up) {
  const uint64_t piece = pos_ / file_->piece_size;
  const uint64_t last_piece = range_.last / file_->piece_size;
  fetcher_.Await(
      file_, piece, last_piece,
      [self = shared_from_this(), piece, attempt, give_up,
       ready = std::move(ready)](Status s) mutable {
        if (!s.ok()) return ready(s);
        const uint64_t piece_start = piece * self->file_->piece_size;
        const uint64_t end =
            std::min(piece_start + self->file_->PieceBytes(piece), self->range_.last + 1);
        const uint64_t len = end - self->pos_;
        auto span =
            self->store_.OpenSpan(self->file_->chunks[piece], self->pos_ - piece_start, len);
        if (!span.ok()) {
          if (span.status().IsNotFound() && attempt + 1 < kMaxAttempts) {
            return self->Send(std::move(ready), attempt + 1, give_up);
          }
          return ready(span.status().WithContext(self->file_->file.path));
        }
        if (span->length() != len) {
          return ready(Status::Corruption("chunk " + self->file_->chunks[piece].ShortHex() +
                                          " of " + self->file_->file.path +
                                          " is shorter than its manifest says"));
        }
        auto owner = std::make_shared<ChunkSpan>(std::move(span).value());
        HttpBodyPiece out;
        out.file =
            std::make_shared<HttpFileBody>(owner->fd(), owner->offset(), owner->length(), owner);
        self->pos_ = end;
        if (self->on_piece_) self->on_piece_(len);
        ready(std::move(out));
      },
      give_up);
}

}  // namespace shoal
