// RangeSource: the body of a read, bytes [first, last] of one file, sent
// piece by piece as the chunks under it arrive. Each piece is the part of
// one chunk file in the range, sent with sendfile(2) while a ChunkSpan
// pins the chunk; nothing is copied through memory.
//
// Thread-safety: driven by one HTTP connection; callbacks arrive on the
// fetcher's thread or the connection's.
#ifndef SHOAL_AGENT_READ_RANGE_SOURCE_H_
#define SHOAL_AGENT_READ_RANGE_SOURCE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "read/byte_range.h"
#include "read/read_fetcher.h"
#include "shoal/chunk_store.h"
#include "shoal/server/http_message.h"

namespace shoal {

class RangeSource final : public HttpBodySource, public std::enable_shared_from_this<RangeSource> {
 public:
  // `on_piece(bytes)` is told of each piece as it is handed to the
  // connection (for the byte and time-to-first-byte metrics).
  // REQUIRES: `range` lies within the file; fetcher and store outlive the
  // source's pending callbacks (the fetcher fails them when it stops).
  RangeSource(ReadFetcher& fetcher, ChunkStore& store, std::shared_ptr<const ReadFile> file,
              ByteRange range, std::function<void(uint64_t bytes)> on_piece);

  // Gets the first piece of the range into hand before the answer's header
  // goes out, so a read never promises a length it then cannot send: calls
  // `done` with OK once the piece is pinned (the next Next() returns it at
  // once), or with the error that would have cut the body short, e.g.
  // Unavailable when no peer or origin delivered within `within`. If the
  // first piece is on the node but a later one of the range is not, the
  // first such piece must also arrive within `within`, so that a body is
  // not promised whole and then cut at a chunk no one can supply.
  // REQUIRES: called at most once, before the first Next().
  void Prime(std::chrono::milliseconds within, std::function<void(Status)> done);

  void Next(Ready ready) override;

 private:
  void Send(Ready ready, int attempt, std::chrono::milliseconds give_up);

  ReadFetcher& fetcher_;
  ChunkStore& store_;
  const std::shared_ptr<const ReadFile> file_;
  const ByteRange range_;
  const std::function<void(uint64_t)> on_piece_;
  uint64_t pos_;                         // next byte to send
  std::optional<HttpBodyPiece> primed_;  // the first piece, once Prime got it
};

}  // namespace shoal

#endif  // SHOAL_AGENT_READ_RANGE_SOURCE_H_
