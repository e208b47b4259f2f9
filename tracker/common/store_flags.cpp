#include "common/store_flags.h"

#include <CLI/CLI.hpp>

namespace shoal::tracker {

void AddOriginFlags(CLI::App* cmd, OriginOptions* o) {
  cmd->add_option("--origin", o->url, "file:///path or s3://bucket/prefix")->required();
  cmd->add_option("--s3-endpoint", o->endpoint, "S3 endpoint URL; empty = AWS");
  cmd->add_option("--s3-region", o->region, "S3 signing region");
  cmd->add_option("--s3-access-key", o->access_key,
                  "S3 access key; default from AWS_ACCESS_KEY_ID");
  cmd->add_option("--s3-secret-key", o->secret_key,
                  "S3 secret key; default from AWS_SECRET_ACCESS_KEY");
  cmd->add_option("--s3-ca-file", o->ca_file, "PEM bundle to trust for https");
}

void AddRegistryFlags(CLI::App* cmd, TrackerOptions* o) {
  cmd->add_option("--registry", o->registry,
                  "empty: LevelDB in --data-dir; etcd://host:port,host:port/prefix (or "
                  "etcd+https://): a registry shared by a fleet of trackers");
  cmd->add_option("--registry-ca", o->registry_ca_file, "PEM CA for an etcd+https:// registry");
}

}  // namespace shoal::tracker
