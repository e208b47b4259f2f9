#include "cli/publish_seed.h"

#include <capnp/rpc-twoparty.h>
#include <fcntl.h>
#include <kj/async-io.h>
#include <sys/stat.h>

#include <filesystem>

#include "cli/file_handle_server.h"
#include "proto/kj_status.h"
#include "shoal/proto/agent.capnp.h"

namespace shoal {
namespace {

// Opens the published files for the agent.
class SeedSourceServer final : public proto::SeedSource::Server {
 public:
  explicit SeedSourceServer(std::string dir) : dir_(std::move(dir)) {}

 protected:
  kj::Promise<void> openFile(OpenFileContext c) override {
    std::string rel = c.getParams().getPath();
    if (rel.empty() || rel.front() == '/' || ("/" + rel + "/").find("/../") != std::string::npos) {
      ThrowIfError(Status::InvalidArgument("the agent asked for an unsafe path '" + rel + "'"));
    }
    std::string path = dir_ + "/" + rel;
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) ThrowIfError(Status::FromErrno("open " + path, errno));
    c.getResults().setFile(kj::heap<FileHandleServer>(fd));
    return kj::READY_NOW;
  }

 private:
  const std::string dir_;
};

}  // namespace

bool AgentListens(const std::string& socket) {
  struct stat st;
  return ::stat(socket.c_str(), &st) == 0;
}

Status SeedThroughAgent(const std::string& socket, const std::string& ref, const std::string& token,
                        const std::string& dir, uint64_t* chunks) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(dir, ec).lexically_normal().string();
  auto io = kj::setupAsyncIo();
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 auto addr =
                     io.provider->getNetwork().parseAddress("unix:" + socket).wait(io.waitScope);
                 auto stream = addr->connect().wait(io.waitScope);
                 capnp::TwoPartyClient client(kj::downcast<kj::AsyncCapabilityStream>(*stream),
                                              /*maxFdsPerMessage=*/2);
                 auto req = client.bootstrap().castAs<proto::LocalAgent>().seedRequest();
                 req.setRef(ref);
                 req.setToken(token);
                 req.setDir(abs);
                 req.setSource(kj::heap<SeedSourceServer>(abs));
                 *chunks = req.send().wait(io.waitScope).getChunks();
               })) {
    return StatusFromException(*e, "agent at " + socket);
  }
  return Status::OK();
}

}  // namespace shoal
