// PeerDeadlines: a session plugin that closes connections which hold a
// slot on the peer port without becoming useful peers, where libtorrent's
// own timeouts do not reach.
//
// libtorrent 2.0.8 times a connection out by the time since it last
// received a byte (handshake_timeout while in the handshake, peer_timeout
// after). A remote that sends one byte every few seconds therefore resets
// both forever: it can stretch the rest of its handshake, once the
// info-hash has named a torrent here, or a message it has begun, for
// hours. This plugin measures from when the stall began instead:
//
//   - a connection attached to a torrent must finish the handshake within
//     `handshake` of attaching (an outgoing one, of connecting); before the
//     info-hash, libtorrent's session already closes an incoming one
//     `handshake_timeout` after it connected, so a remote that crawls
//     through both halves is held at most about twice that;
//   - a connection must not spend more than `message` in all with a
//     message partly received while libtorrent waits on the socket (time
//     spent waiting for our own disk or rate limit does not count), unless
//     1 KiB of payload moves either way, which starts the sum over, or no
//     partial message is seen for `message`. A remote crawling through one
//     message, or through keep-alives a byte at a time, is closed; an idle
//     peer's whole keep-alives never count.
//
// Idle connections between messages are left to libtorrent's peer_timeout.
//
// Thread-safety: the plugin runs on libtorrent's network thread; its
// `dropped` counter may be read from any thread.
#ifndef SHOAL_AGENT_P2P_PEER_DEADLINES_H_
#define SHOAL_AGENT_P2P_PEER_DEADLINES_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>

namespace libtorrent {
struct plugin;
}

namespace shoal {

struct PeerDeadlineOptions {
  std::chrono::seconds handshake{10};  // from attaching to a torrent to a finished handshake
  std::chrono::seconds message{10};    // a begun message must progress within this
};

// The plugin for lt::session_params::extensions. It adds one to `dropped`
// for each connection it closes.
std::shared_ptr<libtorrent::plugin> NewPeerDeadlinePlugin(
    const PeerDeadlineOptions& options, std::shared_ptr<std::atomic<uint64_t>> dropped);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_PEER_DEADLINES_H_
