// FileHandleServer: hands one open file to the agent over the control
// socket. The capability carries the descriptor (Capability::Server::getFd),
// and closes it once the agent lets go.
#ifndef SHOAL_AGENT_CLI_FILE_HANDLE_SERVER_H_
#define SHOAL_AGENT_CLI_FILE_HANDLE_SERVER_H_

#include <kj/io.h>

#include "shoal/proto/agent.capnp.h"

namespace shoal {

class FileHandleServer final : public proto::FileHandle::Server {
 public:
  explicit FileHandleServer(int fd) : fd_(fd) {}
  kj::Maybe<int> getFd() override { return fd_.get(); }

 private:
  kj::AutoCloseFd fd_;
};

}  // namespace shoal

#endif  // SHOAL_AGENT_CLI_FILE_HANDLE_SERVER_H_
