// The control socket's side in the operating system: who is at the other
// end of a connection (SO_PEERCRED), and who may connect (the socket
// file's mode and group). local_control.cpp serves the RPC on top.
#ifndef SHOAL_AGENT_DAEMON_CONTROL_SOCKET_H_
#define SHOAL_AGENT_DAEMON_CONTROL_SOCKET_H_

#include <kj/async-io.h>

#include <cstdint>
#include <string>

#include "shoal/status.h"

namespace shoal {

// The process at the other end of a unix socket; -1s if the kernel did not
// say.
struct PeerCred {
  int64_t pid = -1, uid = -1, gid = -1;
};
PeerCred PeerOf(kj::AsyncIoStream& stream);

// Applies --control-socket-mode (octal) and --control-socket-group (a group
// name; empty leaves the group) to the socket file at `path`.
Status SetSocketAccess(const std::string& path, const std::string& mode, const std::string& group);

}  // namespace shoal

#endif  // SHOAL_AGENT_DAEMON_CONTROL_SOCKET_H_
