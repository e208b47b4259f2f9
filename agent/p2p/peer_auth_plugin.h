// PeerAuth: a session plugin that, in `auth` mode, lets no piece move to or
// from a peer until it has proved that it holds a certificate from the
// cluster's peer CA (the proof: peer_auth_proof.h). Torrents stay plain
// BitTorrent; only admission is checked.
//
// On every connection of every torrent:
//   - our extension handshake carries a fresh nonce ("shoal_nonce") and the
//     id of the `shoal_auth` extended message;
//   - on the peer's extension handshake we send one `shoal_auth` message at
//     once: our certificate and our signature over its nonce, ours and the
//     info-hash. A peer whose handshake lacks either is closed;
//   - the peer's `shoal_auth` message is checked against the CA (signature,
//     validity times, not a CA itself) and the signature against the
//     certificate's key; then the peer is admitted. A bad one closes it;
//   - until then its requests are swallowed (and, for a peer with the fast
//     extension, rejected, so a client re-asks instead of waiting out its
//     request timeout) and pieces from it are dropped; a peer not admitted
//     within the handshake timeout is closed.
//
// libtorrent writes our extension handshake as soon as the BitTorrent
// handshake arrives, before the bitfield, so between two agents each proof
// is on the wire before the `interested` that leads to an unchoke, and is
// checked as it arrives: a request right after an unchoke finds its sender
// admitted. libtorrent 2.0.8 offers a plugin no veto over its choker, so
// the gate is on requests and pieces rather than on unchoking.
//
// Thread-safety: the plugin runs on libtorrent's network thread. The gate's
// calls may be made from any thread.
#ifndef SHOAL_AGENT_P2P_PEER_AUTH_PLUGIN_H_
#define SHOAL_AGENT_P2P_PEER_AUTH_PLUGIN_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "p2p/engine_options.h"

namespace libtorrent {
struct plugin;
}

namespace shoal {

class PeerAuthKeys;

// What the engine and the plugin share: the keys connections prove and
// check membership with, and what happened.
class PeerAuthGate {
 public:
  explicit PeerAuthGate(std::chrono::seconds timeout) : timeout_(timeout) {}

  // Takes the keys of an `auth` identity (PeerIdentity::auth()); until
  // then the plugin stays out of the way, as in `tls` and `off`.
  // Connections opened later use the keys set last; open ones keep theirs.
  // InvalidArgument if its key is not its certificate's.
  Status SetIdentity(const PeerIdentity& identity);
  std::shared_ptr<const PeerAuthKeys> keys() const;
  std::chrono::seconds timeout() const { return timeout_; }

  // A peer was refused for `r` (`why` for the log).
  void Refused(PeerAuthRefusal r, const std::string& peer, const std::string& why);
  void Admitted() { admitted_.fetch_add(1, std::memory_order_relaxed); }
  std::array<uint64_t, kPeerAuthRefusalCount> refused() const;
  uint64_t admitted() const { return admitted_.load(std::memory_order_relaxed); }

 private:
  const std::chrono::seconds timeout_;
  mutable std::mutex mu_;
  std::shared_ptr<const PeerAuthKeys> keys_;  // protected by mu_
  std::array<std::atomic<uint64_t>, kPeerAuthRefusalCount> refused_{};
  std::atomic<uint64_t> admitted_{0};
};

// The plugin for lt::session_params::extensions; put it first, so that its
// refusals come before any other plugin sees a request.
std::shared_ptr<libtorrent::plugin> NewPeerAuthPlugin(std::shared_ptr<PeerAuthGate> gate);

}  // namespace shoal

#endif  // SHOAL_AGENT_P2P_PEER_AUTH_PLUGIN_H_
