// The session's settings and start-up.
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "libtorrent/ip_filter.hpp"
#include "libtorrent/session_params.hpp"
#include "libtorrent/session_stats.hpp"
#include "libtorrent/settings_pack.hpp"
#include "p2p/engine_impl.h"
#include "p2p/peer_deadlines.h"
#include "shoal/log.h"

namespace shoal {

lt::settings_pack EngineSettings(const EngineOptions& o) {
  namespace sp = lt;
  lt::settings_pack p = lt::high_performance_seed();
  // The tracker is the only peer source; peers speak plain TCP.
  p.set_bool(sp::settings_pack::enable_dht, false);
  p.set_bool(sp::settings_pack::enable_lsd, false);
  p.set_bool(sp::settings_pack::enable_upnp, false);
  p.set_bool(sp::settings_pack::enable_natpmp, false);
  p.set_bool(sp::settings_pack::enable_incoming_utp, false);
  p.set_bool(sp::settings_pack::enable_outgoing_utp, false);
  p.set_bool(sp::settings_pack::enable_incoming_tcp, true);
  p.set_bool(sp::settings_pack::enable_outgoing_tcp, true);
  p.set_int(sp::settings_pack::in_enc_policy, sp::settings_pack::pe_disabled);
  p.set_int(sp::settings_pack::out_enc_policy, sp::settings_pack::pe_disabled);
  // An engine that awaits its identity expects TLS, the default.
  p.set_str(sp::settings_pack::listen_interfaces,
            o.await_peer_identity ? o.listen + "s" : o.listen);
  p.set_str(sp::settings_pack::outgoing_interfaces, "");
  // Many agents share one address in tests and behind NAT.
  p.set_bool(sp::settings_pack::allow_multiple_connections_per_ip, true);
  // A swarm forms in seconds, not minutes.
  p.set_int(sp::settings_pack::min_announce_interval, o.min_announce_interval_s);
  p.set_bool(sp::settings_pack::announce_to_all_trackers, true);
  p.set_bool(sp::settings_pack::announce_to_all_tiers, true);
  // Threads and buffers (see the benchmark in docs/benchmarks.md).
  p.set_int(sp::settings_pack::aio_threads, 2);
  p.set_int(sp::settings_pack::hashing_threads, 1);
  int sock = o.socket_buffer_kib * 1024;
  p.set_int(sp::settings_pack::send_socket_buffer_size, sock);
  p.set_int(sp::settings_pack::recv_socket_buffer_size, sock);
  p.set_int(sp::settings_pack::send_buffer_watermark, o.send_buffer_kib * 1024);
  p.set_int(sp::settings_pack::send_buffer_low_watermark, o.send_buffer_kib * 1024 / 4);
  p.set_int(sp::settings_pack::connections_limit, o.max_connections);
  p.set_int(sp::settings_pack::upload_rate_limit, static_cast<int>(o.upload_rate));
  p.set_int(sp::settings_pack::unchoke_slots_limit, -1);
  p.set_int(sp::settings_pack::active_downloads, -1);
  p.set_int(sp::settings_pack::active_seeds, -1);
  p.set_int(sp::settings_pack::active_limit, -1);
  p.set_bool(sp::settings_pack::smooth_connects, false);
  // A torrent re-added after an eviction drops its connections; peers come
  // back after this many seconds, not libtorrent's default minute.
  p.set_int(sp::settings_pack::min_reconnect_time, 2);
  // A peer that sends data failing its hash is banned: on by default, kept
  // explicit here.
  p.set_bool(sp::settings_pack::use_parole_mode, true);
  // Connections that never become peers must not keep a slot: libtorrent
  // closes one that has not named a torrent handshake_timeout after it
  // connected, and one silent for peer_timeout; PeerDeadlines covers
  // those that send a byte now and then to stay under both.
  p.set_int(sp::settings_pack::handshake_timeout, o.handshake_timeout_s);
  p.set_int(sp::settings_pack::peer_timeout, o.peer_timeout_s);
  p.set_int(
      sp::settings_pack::alert_mask,
      static_cast<int>(static_cast<std::uint32_t>(
          lt::alert_category::error | lt::alert_category::status | lt::alert_category::storage |
          lt::alert_category::tracker | lt::alert_category::peer | lt::alert_category::connect)));
  p.set_int(sp::settings_pack::alert_queue_size, 10000);
  return p;
}

namespace {

// Whether TCP port `port` on `host` can be bound now (a hint: another
// process may take it before the session does).
bool PortFree(const std::string& host, uint16_t port) {
  boost::system::error_code ec;
  lt::io_context io;
  lt::tcp::acceptor a(io);
  lt::tcp::endpoint ep(lt::make_address(host, ec), port);
  if (ec) return false;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(lt::tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  return !ec;
}

// A first port for `count` consecutive free ports on `host`: any free port
// the system hands out with enough free ones after it; 0 if none was found.
uint16_t FreePortRun(const std::string& host, int count) {
  for (int attempt = 0; attempt < 50; ++attempt) {
    boost::system::error_code ec;
    lt::io_context io;
    lt::tcp::acceptor a(io);
    lt::tcp::endpoint ep(lt::make_address(host, ec), 0);
    if (ec) return 0;
    a.open(ep.protocol(), ec);
    if (!ec) a.bind(ep, ec);
    if (ec) return 0;
    const uint16_t first = a.local_endpoint(ec).port();
    a.close(ec);
    if (first == 0 || int(first) + count - 1 > 65535) continue;
    bool all = true;
    for (int k = 0; k < count && all; ++k) all = PortFree(host, static_cast<uint16_t>(first + k));
    if (all) return first;
  }
  return 0;
}

}  // namespace

std::unique_ptr<lt::session> TorrentEngine::Impl::NewSession(const std::string& listen) {
  const int n = options_.sessions;
  EngineOptions o = options_;
  o.listen = listen;
  // The whole engine's limits, shared among its sessions.
  o.max_connections = std::max(2, options_.max_connections / n);
  o.upload_rate = options_.upload_rate == 0 ? 0 : std::max<uint64_t>(1, options_.upload_rate / n);
  lt::session_params params(EngineSettings(o));
  // Session k must listen on the first port + k, where peers look for it,
  // or not at all.
  if (n > 1) params.settings.set_bool(lt::settings_pack::listen_system_port_fallback, false);
  // No default plugins: private torrents use no PEX, metadata comes with the
  // torrent, and smart-ban would read a failed piece back, which the store
  // has already dropped. A peer that sends a bad piece is banned anyway.
  // Each session has its own plugin objects over the engine's shared state.
  params.extensions.clear();
  params.extensions.push_back(NewPeerAuthPlugin(auth_gate_));  // first: it gates requests
  PeerDeadlineOptions deadlines;
  deadlines.handshake = std::chrono::seconds(options_.handshake_timeout_s);
  deadlines.message = std::chrono::seconds(options_.message_stall_s);
  params.extensions.push_back(NewPeerDeadlinePlugin(deadlines, peers_stalled_));
  params.extensions.push_back(NewPieceHoldPlugin(holds_));
  // One store, catalog and set of counters under every session's disk
  // interface; each session's interface posts completions to its own
  // network thread and has its own workers.
  ChunkStore* store = &store_;
  auto catalog = catalog_;
  auto counters = disk_counters_;
  ChunkDiskIoOptions dopt;
  dopt.threads = options_.disk_threads;
  params.disk_io_constructor = [store, catalog, counters, dopt](lt::io_context& ioc,
                                                                lt::settings_interface const& s,
                                                                lt::counters&) {
    return NewChunkDiskIo(ioc, s, *store, *catalog, dopt, counters);
  };
  std::unique_ptr<lt::session> session;
  try {
    session = std::make_unique<lt::session>(std::move(params));
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "p2p.engine.session_failed", {{"error", e.what()}});
    return nullptr;
  }
  if (o.upload_rate > 0) {
    // libtorrent exempts peers on private and loopback addresses from rate
    // limits; every peer of a cluster is on one, so put all in the global
    // class, which the limit applies to.
    lt::ip_filter classes;
    const std::uint32_t global = 1u
                                 << static_cast<std::uint32_t>(lt::session::global_peer_class_id);
    classes.add_rule(lt::make_address("0.0.0.0"), lt::make_address("255.255.255.255"), global);
    classes.add_rule(lt::make_address("::"),
                     lt::make_address("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), global);
    session->set_peer_class_filter(classes);
  }
  session->set_alert_notify([this] {
    {
      std::lock_guard<std::mutex> l(alert_mu_);
      alerts_ready_ = true;
    }
    alert_cv_.notify_one();
  });
  return session;
}

Status TorrentEngine::Impl::StartSession() {
  // glibc returns freed memory to the OS too eagerly for a process that
  // allocates and frees 16 KiB blocks all day; the faults that follow cost
  // more CPU than the hashing.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  // Setting the trim threshold freezes glibc's mmap threshold at 128 KiB,
  // and libtorrent's TLS path allocates and frees buffers above that for
  // every few records: each became an mmap, a munmap and its page faults
  // (a quarter of the CPU of a TLS transfer). Serve them from the heap.
  mallopt(M_MMAP_THRESHOLD, 64 << 20);

  idx_sent_ = lt::find_metric_idx("net.sent_payload_bytes");
  idx_recv_ = lt::find_metric_idx("net.recv_payload_bytes");
  idx_peers_ = lt::find_metric_idx("peer.num_peers_connected");
  idx_banned_ = lt::find_metric_idx("peer.num_banned_peers");
  listen_tls_ = options_.await_peer_identity;
  identity_known_ = !options_.await_peer_identity;

  const int n = options_.sessions;
  const std::string host = options_.listen.substr(0, options_.listen.rfind(':'));
  const std::string bare =
      host.size() > 2 && host.front() == '[' ? host.substr(1, host.size() - 2) : host;
  const auto configured =
      static_cast<uint16_t>(std::stoul(options_.listen.substr(host.size() + 1)));
  const std::string where =
      n == 1   ? options_.listen
      : n == 2 ? options_.listen + " (and the port after it)"
               : options_.listen + " (and the " + std::to_string(n - 1) + " ports after it)";
  // With one session and any port, libtorrent picks it; with several, a
  // run of free ports is found first and taken in order.
  for (int attempt = 0; attempt < 5; ++attempt) {
    uint16_t first = configured;
    if (n > 1 && first == 0) first = FreePortRun(bare, n);
    if (n > 1 && first == 0) break;
    sessions_.clear();
    session_counters_.assign(static_cast<size_t>(n), SessionCounters{});
    bool listening = true;
    for (int k = 0; k < n && listening; ++k) {
      const std::string listen = n == 1 ? options_.listen : host + ":" + std::to_string(first + k);
      std::unique_ptr<lt::session> s = NewSession(listen);
      if (s == nullptr) return Status::Unavailable("cannot start the peer-to-peer session");
      sessions_.push_back(std::move(s));
      // A port another process holds is not bound: a failure alert, and
      // the port stays 0 (no fallback with several sessions).
      auto deadline = std::chrono::steady_clock::now() +
                      (n == 1 ? std::chrono::seconds(10) : std::chrono::seconds(3));
      while (ListenPort(static_cast<size_t>(k)) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          listening = false;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      if (n > 1 && listening && ListenPort(static_cast<size_t>(k)) != first + k) listening = false;
    }
    if (listening) {
      thread_ = std::thread([this] { MaintenanceLoop(); });
      Log(LogLevel::kInfo, "p2p.engine.start",
          {{"listen", options_.listen},
           {"port", ListenPort()},
           {"sessions", n},
           {"tls", listen_tls_}});
      return Status::OK();
    }
    sessions_.clear();
    if (configured != 0) break;  // a port that was asked for: no other will do
  }
  sessions_.clear();
  return Status::Unavailable("cannot listen for peers on " + where +
                             ": the address is in use or not local; choose another --listen");
}

}  // namespace shoal
