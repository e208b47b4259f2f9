// Flags every tracker-facing command shares, with their environment
// variables: --tracker (SHOAL_TRACKER), --tracker-ca (SHOAL_TRACKER_CA),
// --tracker-server-name (SHOAL_TRACKER_SERVER_NAME), --token (SHOAL_TOKEN),
// --tracker-key (SHOAL_TRACKER_KEY); and the origin flags of commands that
// write to the origin.
#ifndef SHOAL_AGENT_CLI_CLIENT_FLAGS_H_
#define SHOAL_AGENT_CLI_CLIENT_FLAGS_H_

#include <memory>
#include <string>

#include "client/tracker_client.h"
#include "shoal/origin_options.h"

namespace CLI {
class App;
}

namespace shoal {

struct ClientFlags {
  TrackerEndpoint tracker;  // shoal-tracker's RPC, and the CA to trust it by
  std::string token;        // a token from `shoal-tracker token create`
  std::string tracker_key;  // hex Ed25519 key to pin; empty = trust the tracker's
};

void AddClientFlags(CLI::App* cmd, ClientFlags* f);
Result<std::unique_ptr<TrackerClient>> ConnectTracker(const ClientFlags& f);

// --origin (SHOAL_ORIGIN), --s3-endpoint (SHOAL_S3_ENDPOINT), --s3-region,
// --s3-ca-file; S3 keys come from the AWS_* environment or files.
void AddOriginFlags(CLI::App* cmd, OriginOptions* o);

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_CLIENT_FLAGS_H_
