#include "p2p/peer_deadlines.h"

#include <optional>

#include "libtorrent/error_code.hpp"
#include "libtorrent/extensions.hpp"
#include "libtorrent/operations.hpp"
#include "libtorrent/peer_connection_handle.hpp"
#include "libtorrent/peer_info.hpp"

namespace lt = libtorrent;

namespace shoal {
namespace {

using Clock = std::chrono::steady_clock;

// A stalled message must move at least this much payload per `message`
// period; a remote sending a byte every few seconds moves a few dozen.
constexpr int64_t kMinMessageBytes = 1024;

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
    const bool waiting_on_peer = bool(info.read_state & lt::peer_info::bw_network);
    if (info.used_receive_buffer <= 0 || !waiting_on_peer) {
      stall_since_.reset();  // between messages, or our own side is the hold-up
      return;
    }
    if (!stall_since_) {
      stall_since_ = now;
      payload_at_stall_ = info.total_download;
      return;
    }
    if (now - *stall_since_ < options_.message) return;
    if (info.total_download - payload_at_stall_ < kMinMessageBytes) {
      Drop(lt::errors::timed_out_inactivity);
      return;
    }
    stall_since_ = now;  // moving: measure the next period
    payload_at_stall_ = info.total_download;
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
  std::optional<Clock::time_point> stall_since_;  // a message partly received since
  int64_t payload_at_stall_ = 0;
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
