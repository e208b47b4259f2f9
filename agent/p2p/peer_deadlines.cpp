#include "p2p/peer_deadlines.h"

#include "libtorrent/error_code.hpp"
#include "libtorrent/extensions.hpp"
#include "libtorrent/operations.hpp"
#include "libtorrent/peer_connection_handle.hpp"
#include "libtorrent/peer_info.hpp"

namespace lt = libtorrent;

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

// Payload, either way, that shows a connection is in use; a remote sending a
// byte every few seconds moves a few dozen.
constexpr int64_t kMinPayloadBytes = 1024;

class PeerDeadline final : public lt::peer_plugin {
 public:
  PeerDeadline(lt::peer_connection_handle pc, PeerDeadlineOptions options,
               std::shared_ptr<std::atomic<uint64_t>> dropped)
      : pc_(std::move(pc)),
        options_(options),
        dropped_(std::move(dropped)),
        attached_(Clock::now()) {}

  lt::string_view type() const override { return "shoal_peer_deadline"; }

  // Called about once a second for each connection attached to a torrent.
  void tick() override {
    const Clock::time_point now = Clock::now();
    const Clock::duration since_last_tick = now - last_tick_;
    last_tick_ = now;
    if (pc_.is_connecting()) {
      attached_ = now;  // an outgoing connection's handshake starts once it connects
      return;
    }
    if (pc_.is_disconnecting()) return;
    if (pc_.in_handshake()) {
      if (now - attached_ > options_.handshake) Drop(lt::errors::timed_out_no_handshake);
      return;
    }
    lt::peer_info info;
    pc_.get_peer_info(info);
    // Payload moving either way makes the connection useful: start over.
    const int64_t payload = info.total_download + info.total_upload;
    if (payload - payload_mark_ >= kMinPayloadBytes) {
      payload_mark_ = payload;
      stalled_ = Clock::duration::zero();
    }
    // A message partly here while libtorrent waits on the socket: the
    // remote is the hold-up. Time spent so is summed across messages, so
    // one crawling through many small ones (keep-alives) adds up too.
    const bool partial =
        info.used_receive_buffer > 0 && bool(info.read_state & lt::peer_info::bw_network);
    if (partial) {
      stalled_ += since_last_tick;
      last_partial_ = now;
    } else if (now - last_partial_ > options_.message) {
      stalled_ = Clock::duration::zero();  // whole messages only for a while: an honest peer
    }
    if (stalled_ > options_.message) Drop(lt::errors::timed_out_inactivity);
  }

 private:
  void Drop(lt::error_code ec) {
    dropped_->fetch_add(1, std::memory_order_relaxed);
    pc_.disconnect(ec, lt::operation_t::bittorrent);
  }

  lt::peer_connection_handle pc_;
  const PeerDeadlineOptions options_;
  const std::shared_ptr<std::atomic<uint64_t>> dropped_;
  Clock::time_point attached_;  // when the handshake clock started
  Clock::time_point last_tick_ = Clock::now();
  Clock::time_point last_partial_;  // the last tick that found a message partly received
  Clock::duration stalled_{};       // ticks with a partial message since the payload last moved
  int64_t payload_mark_ = 0;        // payload bytes, both ways, when stalled_ last started over
};

class TorrentDeadlines final : public lt::torrent_plugin {
 public:
  TorrentDeadlines(PeerDeadlineOptions options, std::shared_ptr<std::atomic<uint64_t>> dropped)
      : options_(options), dropped_(std::move(dropped)) {}
  std::shared_ptr<lt::peer_plugin> new_connection(lt::peer_connection_handle const& pc) override {
    return std::make_shared<PeerDeadline>(pc, options_, dropped_);
  }

 private:
  const PeerDeadlineOptions options_;
  const std::shared_ptr<std::atomic<uint64_t>> dropped_;
};

class SessionDeadlines final : public lt::plugin {
 public:
  SessionDeadlines(PeerDeadlineOptions options, std::shared_ptr<std::atomic<uint64_t>> dropped)
      : options_(options), dropped_(std::move(dropped)) {}
  std::shared_ptr<lt::torrent_plugin> new_torrent(lt::torrent_handle const&,
                                                  lt::client_data_t) override {
    return std::make_shared<TorrentDeadlines>(options_, dropped_);
  }

 private:
  const PeerDeadlineOptions options_;
  const std::shared_ptr<std::atomic<uint64_t>> dropped_;
};

}  // namespace

std::shared_ptr<lt::plugin> NewPeerDeadlinePlugin(const PeerDeadlineOptions& options,
                                                  std::shared_ptr<std::atomic<uint64_t>> dropped) {
  return std::make_shared<SessionDeadlines>(options, std::move(dropped));
}

}  // namespace shoal
