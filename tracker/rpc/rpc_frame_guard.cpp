#include "rpc/rpc_frame_guard.h"

#include <kj/debug.h>

namespace shoal::tracker {

FrameGuard::FrameGuard(kj::Own<kj::AsyncIoStream> inner, kj::Timer& timer,
                       uint64_t message_limit_bytes, kj::Duration message_timeout)
    : inner_(kj::mv(inner)),
      timer_(timer),
      message_timeout_(message_timeout),
      limit_bytes_(message_limit_bytes),
      refused_(nullptr),
      deadline_(timer.now()) {
  auto paf = kj::newPromiseAndFulfiller<FrameRefusal>();
  refuse_fulfiller_ = kj::mv(paf.fulfiller);
  refused_ = paf.promise.fork();
}

kj::Promise<size_t> FrameGuard::tryRead(void* buffer, size_t min_bytes, size_t max_bytes) {
  return ReadMore(static_cast<kj::byte*>(buffer), min_bytes, max_bytes, 0);
}

// Reads at least one byte at a time, so a frame's first byte starts its
// deadline even when the caller asked for a whole header word.
kj::Promise<size_t> FrameGuard::ReadMore(kj::byte* buffer, size_t min_bytes, size_t max_bytes,
                                         size_t done) {
  KJ_IF_MAYBE (e, refusal_) {
    return kj::cp(*e);
  }
  if (done >= min_bytes || done == max_bytes) return done;
  kj::Promise<size_t> read = inner_->tryRead(buffer + done, 1, max_bytes - done);
  if (in_frame_) {
    read = read.exclusiveJoin(timer_.atTime(deadline_).then([this]() -> size_t {
      Refuse(FrameRefusal::kTimedOut,
             kj::str("a message was not complete within ", message_timeout_ / kj::SECONDS,
                     " s of its first byte"));
    }));
  }
  return read.then([this, buffer, min_bytes, max_bytes, done](size_t n) -> kj::Promise<size_t> {
    if (n == 0) return done;  // end of stream
    Consume(buffer + done, n);
    return ReadMore(buffer, min_bytes, max_bytes, done + n);
  });
}

void FrameGuard::Consume(const kj::byte* data, size_t size) {
  while (size > 0) {
    if (!in_frame_) {
      in_frame_ = true;
      deadline_ = timer_.now() + message_timeout_;
    }
    if (part_ == Part::kBody) {
      size_t take = static_cast<size_t>(kj::min(body_left_, static_cast<uint64_t>(size)));
      body_left_ -= take;
      data += take;
      size -= take;
    } else {
      word_[word_fill_++] = *data++;
      --size;
      if (word_fill_ == 4) {
        word_fill_ = 0;
        ParseHeaderWord(static_cast<uint32_t>(word_[0]) | static_cast<uint32_t>(word_[1]) << 8 |
                        static_cast<uint32_t>(word_[2]) << 16 |
                        static_cast<uint32_t>(word_[3]) << 24);
      }
    }
    if (part_ == Part::kBody && body_left_ == 0) {  // the frame is complete
      part_ = Part::kHeader;
      in_frame_ = false;
      segments_ = words_read_ = header_words_ = 0;
      body_bytes_ = 0;
    }
  }
}

// Header layout, in 4-byte little-endian words: segment count minus one,
// then each segment's size in 8-byte words, then one word of padding if
// that makes the header an odd number of words.
void FrameGuard::ParseHeaderWord(uint32_t value) {
  ++words_read_;
  if (words_read_ == 1) {
    if (value >= kMaxSegments) {
      Refuse(FrameRefusal::kTooLarge,
             kj::str("a message claims ", uint64_t{value} + 1, " segments; at most ", kMaxSegments,
                     " are accepted"));
    }
    segments_ = value + 1;
    header_words_ = 1 + segments_ + (segments_ % 2 == 0 ? 1 : 0);
  } else if (words_read_ <= 1 + segments_) {
    body_bytes_ += uint64_t{value} * 8;
    if (body_bytes_ > limit_bytes_) {
      Refuse(FrameRefusal::kTooLarge, kj::str("a message claims more than ", limit_bytes_,
                                              " bytes, this connection's limit"));
    }
  }
  if (words_read_ == header_words_) {
    part_ = Part::kBody;
    body_left_ = body_bytes_;
  }
}

void FrameGuard::Refuse(FrameRefusal why, kj::String message) {
  kj::Exception e(kj::Exception::Type::FAILED, __FILE__, __LINE__, kj::mv(message));
  refusal_ = kj::cp(e);
  if (refuse_fulfiller_->isWaiting()) refuse_fulfiller_->fulfill(FrameRefusal(why));
  kj::throwFatalException(kj::mv(e));
}

}  // namespace shoal::tracker
