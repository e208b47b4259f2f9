#include "daemon/agent_flags.h"

namespace shoal {
namespace {

// Who this node is, where its tracker is, its cache and its peer port.
void AddNodeFlags(CLI::App& app, AgentFlags& f) {
  AgentOptions& o = f.options;
  app.add_option("--name", o.name, "node name; default: the host name");
  app.add_option("--zone", o.zone, "zone label; same-zone peers are preferred");
  app.add_option("--tracker", o.tracker.address,
                 "tracker RPC host:port, or a fleet's: host:port,host:port,...")
      ->envname("SHOAL_TRACKER")
      ->capture_default_str();
  app.add_option("--tracker-ca", o.tracker.ca_file,
                 "PEM CA file: speak TLS to the tracker (RPC and announces), trusting only this CA")
      ->envname("SHOAL_TRACKER_CA");
  app.add_option("--tracker-server-name", o.tracker.server_name,
                 "DNS name the tracker's certificate must carry; default: the --tracker host")
      ->envname("SHOAL_TRACKER_SERVER_NAME");
  app.add_option("--token", o.token,
                 "agent token (shoal-tracker token create --ns '*' --role read)")
      ->envname("SHOAL_AGENT_TOKEN");
  app.add_option("--cache-dir", o.cache_dir, "chunk cache folder")->capture_default_str();
  app.add_option("--cache-size", f.cache_size, "cache budget, e.g. 200GiB")->capture_default_str();
  app.add_option("--peer-listen", o.peer_listen, "BitTorrent listen address")
      ->capture_default_str();
}

// The HTTP routes (reads, /metrics, /healthz) and how reads wait.
void AddHttpFlags(CLI::App& app, AgentOptions& o) {
  app.add_option("--http-listen", o.http_listen,
                 "address for reads (plain and S3), /metrics and /healthz")
      ->capture_default_str();
  app.add_option("--http-threads", o.http_threads, "HTTP I/O threads")->capture_default_str();
  app.add_option(
      "--http-socket", o.http_socket,
      "also serve reads, /metrics and /healthz on this unix socket (mode 0666), for pods");
  app.add_option("--https-listen", o.https_listen,
                 "also serve reads, /metrics and /healthz over TLS on this address, for pods on "
                 "other nodes (with --https-cert and --https-key)");
  app.add_option("--https-cert", o.https_cert_file, "PEM certificate chain for --https-listen");
  app.add_option("--hub-listen", o.hub_listen,
                 "also serve the Hugging Face hub's model, tree and resolve API on this address, "
                 "for HF_ENDPOINT (repository org/name is model name of namespace org)");
  app.add_option("--hub-namespace", o.hub_namespaces,
                 "ORG=NAMESPACE: hub repositories ORG/name read models of NAMESPACE (repeatable)");
  app.add_option("--https-key", o.https_key_file,
                 "PEM private key of --https-cert, readable by its owner only");
  app.add_flag("--read-anonymous", o.read_anonymous,
               "let reads without credentials from loopback use the agent's --token");
  app.add_option("--read-cache-ms", o.read_cache_ms, "reuse a (token, model) resolution this long")
      ->capture_default_str();
  app.add_option("--read-origin-wait-ms", o.read_origin_wait_ms,
                 "a read's piece that no peer offers waits this long before the origin (none if "
                 "the swarm is empty)")
      ->capture_default_str();
  app.add_option("--read-ahead-pieces", o.read_ahead_pieces,
                 "pieces past a reader's position to fetch too")
      ->capture_default_str();
  app.add_option("--read-first-byte-timeout-ms", o.read_first_byte_timeout_ms,
                 "a read whose first chunk cannot be had this long fails with 503 and Retry-After, "
                 "before any header")
      ->capture_default_str();
}

// Bounds on the HTTP port's (and unix socket's) connections and requests.
void AddHttpLimitFlags(CLI::App& app, AgentOptions& o) {
  app.add_option("--http-max-connections", o.http.max_connections,
                 "HTTP connections open at once (each of the port and the socket); more are "
                 "answered 503 and closed")
      ->capture_default_str();
  app.add_option("--http-max-connections-per-client", o.http.max_connections_per_client,
                 "HTTP connections open at once from one IP address (the unix socket is exempt); "
                 "more are answered 503")
      ->capture_default_str();
  app.add_option("--http-max-header-bytes", o.http.max_header_bytes,
                 "request line and headers, in bytes; more are answered 431")
      ->capture_default_str();
  app.add_option("--http-max-request-line-bytes", o.http.max_request_line_bytes,
                 "method, target and version, in bytes; more are answered 414")
      ->capture_default_str();
  app.add_option("--http-header-timeout-ms", o.http.header_timeout_ms,
                 "a request's headers must arrive whole within this of their first byte")
      ->capture_default_str();
  app.add_option("--http-body-timeout-ms", o.http.body_timeout_ms,
                 "a request's body must arrive whole within this of its headers")
      ->capture_default_str();
  app.add_option("--http-idle-timeout-ms", o.http.idle_timeout_ms,
                 "a kept-alive HTTP connection waiting this long for its next request is closed")
      ->capture_default_str();
  app.add_option("--read-max-per-token", o.read_max_per_token,
                 "reads in flight at once per token; more are answered 429 with Retry-After (S3: "
                 "503 SlowDown)")
      ->capture_default_str();
  app.add_option("--s3-virtual-host", o.s3_virtual_hosts,
                 "a host name (repeatable) under which S3 requests name their bucket in the Host "
                 "header, as {bucket}.NAME; hosts whose first label is s3 always do")
      ->default_str("localhost");
}

// The cache's durability and the local control socket's pulls.
void AddLocalFlags(CLI::App& app, AgentOptions& o) {
  app.add_option(
         "--cache-sync", o.cache_sync,
         "fsync each chunk of 1 MiB or more before it is visible; false trades durability (chunks "
         "are hashed again after a restart) for latency")
      ->capture_default_str();
  app.add_option("--control-socket", o.control_socket, "unix socket for the local CLI")
      ->capture_default_str();
  app.add_option("--control-socket-mode", o.control_socket_mode,
                 "permission bits of the control socket, octal; who may connect may pull and seed "
                 "with a token")
      ->capture_default_str();
  app.add_option("--control-socket-group", o.control_socket_group,
                 "group of the control socket (default: the agent's own)");
  app.add_option("--stall-timeout-ms", o.stall_timeout_ms,
                 "a pull or warm that gains no byte this long fails")
      ->capture_default_str();
  app.add_option(
      "--port-file", o.port_file,
      "write 'peer_port http_port https_port hub_port' here once listening (0: not listening)");
}

void AddOriginFlags(CLI::App& app, AgentOptions& o) {
  app.add_option("--origin", o.origin.url,
                 "file:///path or s3://bucket/prefix, for chunks no peer has")
      ->envname("SHOAL_ORIGIN");
  app.add_option("--s3-endpoint", o.origin.endpoint, "S3 endpoint URL")
      ->envname("SHOAL_S3_ENDPOINT");
  app.add_option("--s3-region", o.origin.region, "S3 signing region");
  app.add_option("--origin-fallback-ms", o.origin_fallback_ms,
                 "wait this long for a peer before the origin")
      ->capture_default_str();
  app.add_option("--origin-parallelism", o.origin_parallelism, "origin GETs in flight per pull")
      ->capture_default_str();
}

// The transfer engine's disk threads and peer connection timeouts.
void AddPeerFlags(CLI::App& app, AgentFlags& f) {
  AgentOptions& o = f.options;
  app.add_option("--disk-threads", o.disk_threads, "disk I/O threads per peer session")
      ->capture_default_str();
  app.add_option("--peer-sessions", o.peer_sessions,
                 "peer sessions, each with its own network thread, listening on --peer-listen's "
                 "port and the ones after it; torrents are spread among them (0: one per two "
                 "cores, 1 to 64)")
      ->capture_default_str();
  app.add_option(
         "--peer-handshake-timeout-s", o.peer_handshake_timeout_s,
         "close a peer connection that has not finished its BitTorrent handshake this many seconds "
         "after connecting (after naming a torrent)")
      ->capture_default_str();
  app.add_option(
         "--peer-timeout-s", o.peer_timeout_s,
         "close a peer connection that receives nothing this many seconds (keep-alives every half)")
      ->capture_default_str();
  app.add_option("--peer-upload-rate", f.peer_upload_rate,
                 "bytes per second this agent sends to peers in all, e.g. 100MiB; 0 = no limit")
      ->capture_default_str();
  app.add_option("--peer-message-stall-s", o.peer_message_stall_s,
                 "close a peer connection that spends this many seconds in all mid-message while "
                 "under 1 KiB of payload moves")
      ->capture_default_str();
  app.add_option("--hand-on-owners", o.hand_on_owners,
                 "serve a chunk just read from the origin only to its next this many owners "
                 "(the tracker's --replicas minus 1) until one holds it; 0 = off")
      ->capture_default_str();
  app.add_option("--hand-on-hold-ms", o.hand_on_hold_ms,
                 "the longest a chunk is served only to its next owners")
      ->capture_default_str();
}

}  // namespace

void AddAgentFlags(CLI::App& app, AgentFlags& f) {
  app.set_config("--config", "", "read options from this TOML/INI file");
  app.allow_config_extras(CLI::config_extras_mode::error);  // a misspelt key is an error
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "shoald: error: " + std::string(e.what()) + "\n";
  });
  app.add_flag("--print-config", f.print_config,
               "print the effective configuration as a config file and exit")
      ->configurable(false);
  AddNodeFlags(app, f);
  AddHttpFlags(app, f.options);
  AddHttpLimitFlags(app, f.options);
  AddLocalFlags(app, f.options);
  AddOriginFlags(app, f.options);
  AddPeerFlags(app, f);
  AgentOptions& o = f.options;
  app.add_option("--label", o.labels,
                 "label this agent for `shoal warm --nodes`, as key=value; repeatable");
  app.add_option("--log-level", f.log_level, "debug, info, warn or error")->capture_default_str();
}

}  // namespace shoal
