#include "daemon/relay_host.h"

#include <cstdint>

#include "shoal/host_port.h"

namespace shoal {

std::string RelayHost(const std::string& peer_listen) {
  std::string host;
  uint16_t port = 0;
  // A bad address is refused where the engine listens; any host will do here.
  if (!SplitHostPort(peer_listen, &host, &port).ok()) return "127.0.0.1";
  if (host == "0.0.0.0" || host == "::") return "127.0.0.1";
  return host;
}

}  // namespace shoal
