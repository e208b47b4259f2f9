// TrackerEndpoint: where the tracker's RPC is, and how its clients (agents,
// the CLI) trust it. With a CA file they speak TLS and trust only that CA
// (see DialTracker in proto/rpc_tls.h).
//
// A fleet of trackers is a comma-separated list, "a:7400,b:7400,c:7400":
// the CLI uses whichever answers first, agents register with every one.
// All trackers of a fleet share one certificate name or CA.
#ifndef SHOAL_TRACKER_ENDPOINT_H_
#define SHOAL_TRACKER_ENDPOINT_H_

#include <string>
#include <vector>

namespace shoal {

struct TrackerEndpoint {
  std::string address = "127.0.0.1:7400";  // "host:port", or several, comma-separated
  std::string ca_file;                     // if set: TLS, trusting only the CAs in this file
  // The DNS name the tracker's certificate must carry; default: the host of
  // `address`. Certificates are matched by name, so a tracker given by IP
  // address needs one.
  std::string server_name;

  bool tls() const { return !ca_file.empty(); }
  // server_name, or the host part of address.
  std::string ExpectedName() const;
  // Each "host:port" of `address`, in order; empty entries are skipped.
  std::vector<std::string> Addresses() const;
  // This endpoint with one of the fleet's addresses.
  TrackerEndpoint At(const std::string& one) const {
    TrackerEndpoint e = *this;
    e.address = one;
    return e;
  }
};

}  // namespace shoal

#endif  // SHOAL_TRACKER_ENDPOINT_H_
