#include "cli/client_flags.h"

#include <CLI/CLI.hpp>

namespace shoal {

void AddClientFlags(CLI::App* cmd, ClientFlags* f) {
  cmd->add_option("--tracker", f->tracker.address, "tracker RPC address host:port")
      ->envname("SHOAL_TRACKER")
      ->capture_default_str();
  cmd->add_option("--tracker-ca", f->tracker.ca_file,
                  "PEM CA file: speak TLS to the tracker and trust only this CA")
      ->envname("SHOAL_TRACKER_CA");
  cmd->add_option("--tracker-server-name", f->tracker.server_name,
                  "DNS name the tracker's certificate must carry; default: the --tracker host")
      ->envname("SHOAL_TRACKER_SERVER_NAME");
  cmd->add_option("--token", f->token, "access token")->envname("SHOAL_TOKEN");
  cmd->add_option("--tracker-key", f->tracker_key, "hex Ed25519 key the tracker must sign with")
      ->envname("SHOAL_TRACKER_KEY");
}

Result<std::unique_ptr<TrackerClient>> ConnectTracker(const ClientFlags& f) {
  return TrackerClient::Connect(f.tracker, f.token, f.tracker_key);
}

void AddOriginFlags(CLI::App* cmd, OriginOptions* o) {
  cmd->add_option("--origin", o->url, "file:///path or s3://bucket/prefix")
      ->envname("SHOAL_ORIGIN");
  cmd->add_option("--s3-endpoint", o->endpoint, "S3 endpoint URL; empty = AWS")
      ->envname("SHOAL_S3_ENDPOINT");
  cmd->add_option("--s3-region", o->region, "S3 signing region")->envname("SHOAL_S3_REGION");
  cmd->add_option("--s3-ca-file", o->ca_file, "PEM bundle to trust for https");
}

}  // namespace shoal
