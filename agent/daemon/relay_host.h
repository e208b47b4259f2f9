// Where an agent's announce relay listens.
#ifndef SHOAL_AGENT_DAEMON_RELAY_HOST_H_
#define SHOAL_AGENT_DAEMON_RELAY_HOST_H_

#include <string>

namespace shoal {

// The address the relay listens on, for an engine listening on
// `peer_listen` ("host:port"): its host when that is one address, else
// 127.0.0.1. libtorrent announces from each of its listen sockets only to
// trackers that socket can reach, and a socket bound to an interface's
// address cannot reach the loopback: an agent given --peer-listen
// 10.1.2.3:6881 would never announce to a relay on 127.0.0.1.
std::string RelayHost(const std::string& peer_listen);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_RELAY_HOST_H_
