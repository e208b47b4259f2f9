// shoald: the Shoal agent. One per node: a chunk cache, a BitTorrent peer,
// origin fallback, and a local control socket for `shoal pull`.
#include <kj/async-unix.h>
#include <malloc.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>

#include "daemon/agent.h"
#include "daemon/agent_flags.h"
#include "shoal/byte_size.h"
#include "shoal/log.h"
#include "shoal/server/effective_config.h"

namespace shoal {
namespace {

// Sets the process up for the agent and completes `f.options` from the
// flags parsed later than the rest (--log-level, --cache-size).
Status PrepareProcess(AgentFlags& f) {
  // Before any thread starts (the store's, the engine's): captureSignal
  // blocks the signals in this thread only, and threads inherit the mask.
  // A thread started earlier would take SIGTERM's default action, killing
  // the agent without stopping the engine or removing its socket.
  kj::UnixEventPort::captureSignal(SIGTERM);
  kj::UnixEventPort::captureSignal(SIGINT);
  auto level = ParseLogLevel(f.log_level);
  if (!level.ok()) return level.status();
  SetLogLevel(*level);
  if (!f.cache_size.empty()) {
    auto bytes = ParseByteSize(f.cache_size);
    if (!bytes.ok()) return bytes.status().WithContext("--cache-size");
    f.options.cache_bytes = *bytes;
  }
  auto rate = ParseByteSize(f.peer_upload_rate);
  if (!rate.ok()) return rate.status().WithContext("--peer-upload-rate");
  f.options.peer_upload_rate = *rate;
  SHOAL_RETURN_IF_ERROR(f.options.Validate());
  ::mallopt(M_TRIM_THRESHOLD, 1 << 30);  // trimming cost page faults on every transfer
  // Peer connections, chunk files and the files pulls write all hold
  // descriptors: take what the service manager allows.
  struct rlimit files {};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  return Status::OK();
}

// Returns once the agent has stopped and every part of it is gone.
Status Run(AgentFlags& f) {
  SHOAL_RETURN_IF_ERROR(PrepareProcess(f));
  auto agent = Agent::Open(f.options);
  if (!agent.ok()) return agent.status();
  return (*agent)->Run();
}

}  // namespace
}  // namespace shoal

int main(int argc, char** argv) {
  shoal::AgentFlags flags;
  CLI::App app{"shoald: the Shoal agent"};
  shoal::AddAgentFlags(app, flags);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (flags.print_config) {
    std::fputs(shoal::EffectiveConfig(app, "", {"token"}).c_str(), stdout);
    return 0;
  }
  shoal::Status s = shoal::Run(flags);
  if (!s.ok()) {
    std::fprintf(stderr, "shoald: error: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
