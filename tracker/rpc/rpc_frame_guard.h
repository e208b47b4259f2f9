// FrameGuard: a stream that reads Cap'n Proto frames on behalf of the RPC
// layer and refuses a frame before the RPC layer would allocate it.
//
// Cap'n Proto's reader sizes its buffer from a frame's header (segment
// count and sizes) and then waits for the body, so a header alone can make
// it hold up to its traversal limit (64 MiB) per connection, with no
// deadline. FrameGuard parses the framing as the bytes go by and fails the
// read, instead of handing the header over, when:
//   - the header claims more than the current limit (message_limit_bytes;
//     the listener keeps it small until the peer authenticates), or more
//     than kMaxSegments segments; or
//   - a frame whose first byte has arrived is not complete by
//     message_timeout after that byte.
// Waiting between frames has no deadline here: an authenticated agent's
// connection idles between heartbeats.
//
// A refusal is sticky: every later read fails too, and onRefused() resolves
// with the reason, so the owner can close the connection even if the RPC
// layer is not reading.
//
// Thread-safety: as any kj stream, used on its event loop's thread only.
#ifndef SHOAL_TRACKER_RPC_FRAME_GUARD_H_
#define SHOAL_TRACKER_RPC_FRAME_GUARD_H_

#include <kj/async-io.h>
#include <kj/timer.h>

#include <cstdint>

namespace shoal::tracker {

enum class FrameRefusal { kTooLarge, kTimedOut };

class FrameGuard final : public kj::AsyncIoStream {
 public:
  static constexpr uint32_t kMaxSegments = 512;  // Cap'n Proto's own limit

  // `timer` must outlive this stream.
  FrameGuard(kj::Own<kj::AsyncIoStream> inner, kj::Timer& timer, uint64_t message_limit_bytes,
             kj::Duration message_timeout);

  // Applies to frames whose header has not been checked yet.
  void set_message_limit_bytes(uint64_t bytes) { limit_bytes_ = bytes; }
  // Resolves once, when a frame is refused.
  kj::Promise<FrameRefusal> onRefused() { return refused_.addBranch(); }

  kj::Promise<size_t> tryRead(void* buffer, size_t min_bytes, size_t max_bytes) override;
  kj::Promise<void> write(const void* buffer, size_t size) override {
    return inner_->write(buffer, size);
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    return inner_->write(pieces);
  }
  kj::Promise<void> whenWriteDisconnected() override { return inner_->whenWriteDisconnected(); }
  void shutdownWrite() override { inner_->shutdownWrite(); }
  void abortRead() override { inner_->abortRead(); }
  void getsockopt(int level, int option, void* value, kj::uint* length) override {
    inner_->getsockopt(level, option, value, length);
  }
  void setsockopt(int level, int option, const void* value, kj::uint length) override {
    inner_->setsockopt(level, option, value, length);
  }
  void getsockname(struct sockaddr* addr, kj::uint* length) override {
    inner_->getsockname(addr, length);
  }
  void getpeername(struct sockaddr* addr, kj::uint* length) override {
    inner_->getpeername(addr, length);
  }
  kj::Maybe<int> getFd() const override { return inner_->getFd(); }

 private:
  kj::Promise<size_t> ReadMore(kj::byte* buffer, size_t min_bytes, size_t max_bytes, size_t done);
  // Feeds bytes through the framing parser; throws on a refusal.
  void Consume(const kj::byte* data, size_t size);
  void ParseHeaderWord(uint32_t value);
  [[noreturn]] void Refuse(FrameRefusal why, kj::String message);

  // Constant after construction.
  kj::Own<kj::AsyncIoStream> inner_;
  kj::Timer& timer_;
  const kj::Duration message_timeout_;

  uint64_t limit_bytes_;
  kj::Own<kj::PromiseFulfiller<FrameRefusal>> refuse_fulfiller_;
  kj::ForkedPromise<FrameRefusal> refused_;
  kj::Maybe<kj::Exception> refusal_;

  // The frame being parsed.
  enum class Part { kHeader, kBody } part_ = Part::kHeader;
  bool in_frame_ = false;   // a byte of this frame has arrived
  kj::TimePoint deadline_;  // when in_frame_
  uint8_t word_[4] = {};    // a header word being assembled
  size_t word_fill_ = 0;
  uint32_t segments_ = 0;      // 0 until the first word is read
  uint32_t words_read_ = 0;    // header words read, padding included
  uint32_t header_words_ = 0;  // header words in this frame, padding included
  uint64_t body_bytes_ = 0;    // claimed so far by the segment sizes
  uint64_t body_left_ = 0;     // in kBody
};

}  // namespace shoal::tracker

#endif  // SHOAL_TRACKER_RPC_FRAME_GUARD_H_
