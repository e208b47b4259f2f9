#include "federation/follow_flags.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "shoal/byte_size.h"
#include "shoal/duration.h"
#include "shoal/secret_file.h"

namespace shoal::tracker {

void AddFollowFlags(CLI::App* cmd, FollowOptions* o, FollowFlags* f) {
  cmd->add_option("--follow", o->upstream,
                  "mirror namespaces of another Shoal cluster: its tracker's RPC address "
                  "(host:port, or several, comma-separated)");
  cmd->add_option("--follow-ns", o->namespaces,
                  "a namespace to mirror (repeat for more); read-only here")
      ->delimiter(',');
  cmd->add_option("--follow-token-file", f->token_file,
                  "file holding a read token of the upstream's for those namespaces; default: "
                  "SHOAL_FOLLOW_TOKEN");
  cmd->add_option("--follow-ca-file", o->ca_file, "PEM CA of an upstream tracker that speaks TLS");
  cmd->add_option("--follow-key", o->key_hex,
                  "the upstream's manifest signing key (64 hex digits), pinned; default: the key "
                  "the upstream reports");
  cmd->add_option(
      "--follow-origin", o->origin.url,
      "the upstream's origin, read for the chunks this origin lacks: s3://bucket/prefix "
      "or file:///path");
  cmd->add_option("--follow-s3-endpoint", o->origin.endpoint,
                  "S3 endpoint URL of --follow-origin; empty = AWS");
  cmd->add_option("--follow-s3-region", o->origin.region, "S3 signing region of --follow-origin");
  cmd->add_option("--follow-s3-access-key", o->origin.access_key,
                  "S3 access key for --follow-origin; default from AWS_ACCESS_KEY_ID");
  cmd->add_option("--follow-s3-secret-key", o->origin.secret_key,
                  "S3 secret key for --follow-origin; default from AWS_SECRET_ACCESS_KEY");
  cmd->add_option("--follow-s3-ca-file", o->origin.ca_file,
                  "PEM bundle to trust for an https --follow-origin");
  cmd->add_option("--follow-rate", f->rate,
                  "bytes a second the mirror copies at most (e.g. 200MiB); 0: unlimited")
      ->capture_default_str();
  cmd->add_option("--follow-parallelism", o->parallelism, "chunks the mirror copies at once")
      ->capture_default_str();
  cmd->add_flag("--follow-warm", o->warm,
                "once a version is copied here, have each chunk's owner among this cluster's "
                "agents fetch it, so the first pulls read no origin");
  cmd->add_option("--follow-wait", f->wait,
                  "longest wait of one watch call upstream (a stopping tracker waits this long)")
      ->capture_default_str();
}

Status ApplyFollowFlags(const FollowFlags& f, FollowOptions* o) {
  if (o->upstream.empty()) return Status::OK();
  if (!f.token_file.empty()) {
    Result<std::string> token = ReadSecretFile(f.token_file);
    if (!token.ok()) return token.status().WithContext("--follow-token-file");
    o->token = *token;
    while (!o->token.empty() &&
           (o->token.back() == '\n' || o->token.back() == '\r' || o->token.back() == ' ')) {
      o->token.pop_back();
    }
  } else if (const char* env = std::getenv("SHOAL_FOLLOW_TOKEN")) {
    o->token = env;
  }
  Result<uint64_t> rate = ParseByteSize(f.rate);
  if (!rate.ok()) return rate.status().WithContext("--follow-rate");
  o->rate_bytes = *rate;
  Result<std::chrono::milliseconds> wait = ParseDuration(f.wait);
  if (!wait.ok()) return wait.status().WithContext("--follow-wait");
  o->wait_ms = static_cast<uint32_t>(std::min<int64_t>(wait->count(), UINT32_MAX));
  return Status::OK();
}

}  // namespace shoal::tracker
