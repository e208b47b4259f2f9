#include "daemon/relay_host.h"

namespace shoal {

std::string RelayHost(const std::string& peer_listen) {
  const size_t colon = peer_listen.rfind(':');
  std::string host = colon == std::string::npos ? peer_listen : peer_listen.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  if (host.empty() || host == "0.0.0.0" || host == "::") return "127.0.0.1";
  return host;
}

}  // namespace shoal
