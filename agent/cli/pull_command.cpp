// `shoal pull ns/model:tag --to DIR`: asks this node's agent to pull a
// version, showing progress. This process makes the files, as the user who
// runs it, and hands them to the agent to fill (cli/pull_staging.h); the
// agent never touches a path of the caller's.
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <kj/async-unix.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <filesystem>

#include "cli/client_flags.h"
#include "cli/commands.h"
#include "cli/file_handle_server.h"
#include "cli/progress_bar.h"
#include "cli/pull_staging.h"
#include "proto/kj_status.h"
#include "shoal/log.h"
#include "shoal/model_ref.h"
#include "shoal/proto/agent.capnp.h"
#include "shoal/registry_records.h"

namespace shoal {
namespace {

constexpr unsigned kMaxFdsPerMessage = 2;         // the agent sends none
constexpr unsigned kMaxFilesPerCall = 64;         // as the agent asks, at most
constexpr unsigned kMaxWholeFilesPerCall = 1024;  // as the agent writes, at most

struct PullArgs {
  std::string ref;
  std::string to;
  std::string token;
  std::string agent_socket = "/run/shoald/shoald.sock";
  bool replace = false;
  bool json = false;
  std::vector<std::string> labels;  // with latest: the newest version carrying them
  bool latest = false;
};

class Listener final : public proto::PullListener::Server {
 public:
  Listener(ProgressBar& bar, PullStaging& staging) : bar_(bar), staging_(staging) {}

 protected:
  kj::Promise<void> progress(ProgressContext c) override {
    auto s = c.getParams().getState();
    bar_.SetDetail(std::to_string(s.getPeers()) + " peers, " + FormatBytes(s.getBytesFromPeers()) +
                   " from peers, " + FormatBytes(s.getBytesFromOrigin()) + " from origin, files " +
                   std::to_string(s.getFilesDone()) + "/" + std::to_string(s.getFilesTotal()));
    bar_.Update(s.getHaveBytes(), s.getTotalBytes());
    return kj::READY_NOW;
  }

  kj::Promise<void> prepare(PrepareContext c) override {
    auto p = c.getParams();
    std::vector<std::string> dirs;
    for (auto d : p.getDirs()) dirs.emplace_back(d);
    std::vector<PullStaging::File> files;
    for (auto f : p.getFiles()) files.push_back({f.getPath(), f.getMode(), f.getSize()});
    ThrowIfError(staging_.Prepare(dirs, files));
    return kj::READY_NOW;
  }

  kj::Promise<void> openFiles(OpenFilesContext c) override {
    auto indexes = c.getParams().getIndexes();
    if (indexes.size() > kMaxFilesPerCall) {
      ThrowIfError(Status::InvalidArgument("the agent asked for " + std::to_string(indexes.size()) +
                                           " files in one call; at most " +
                                           std::to_string(kMaxFilesPerCall)));
    }
    auto files = c.getResults().initFiles(indexes.size());
    for (unsigned i = 0; i < indexes.size(); ++i) {
      auto fd = staging_.OpenFile(indexes[i]);
      ThrowIfError(fd.status());
      files.set(i, kj::heap<FileHandleServer>(*fd));
    }
    return kj::READY_NOW;
  }

  kj::Promise<void> writeFiles(WriteFilesContext c) override {
    auto files = c.getParams().getFiles();
    if (files.size() > kMaxWholeFilesPerCall) {
      ThrowIfError(Status::InvalidArgument("the agent wrote " + std::to_string(files.size()) +
                                           " files in one call; at most " +
                                           std::to_string(kMaxWholeFilesPerCall)));
    }
    for (auto f : files) {
      auto data = f.getData();
      ThrowIfError(staging_.WriteWhole(f.getIndex(), data.begin(), data.size()));
    }
    return kj::READY_NOW;
  }

 private:
  ProgressBar& bar_;
  PullStaging& staging_;
};

// Prints what the pull moved: from peers + from the origin + already
// cached is the version's size.
void PrintSummary(proto::PullSummary::Reader s, const std::string& ref, const std::string& dest,
                  bool json) {
  const std::string version = hex::Encode(s.getVersionId().begin(), s.getVersionId().size());
  if (json) {
    std::string out = "{\"ref\":";
    AppendJsonString(ref, &out);
    out += ",\"version\":\"" + version + "\",\"dest\":";
    AppendJsonString(dest, &out);
    out += ",\"files\":" + std::to_string(s.getFileCount()) +
           ",\"total_bytes\":" + std::to_string(s.getTotalBytes()) +
           ",\"bytes_from_peers\":" + std::to_string(s.getBytesFromPeers()) +
           ",\"bytes_from_origin\":" + std::to_string(s.getBytesFromOrigin()) +
           ",\"bytes_cached\":" + std::to_string(s.getBytesCached());
    char times[96];
    std::snprintf(times, sizeof(times), ",\"seconds\":%.3f,\"first_chunk_seconds\":%.3f}\n",
                  s.getSeconds(), s.getFirstChunkSeconds());
    std::fputs((out + times).c_str(), stdout);
    return;
  }
  std::printf("pulled %s (%s) to %s\n", ref.c_str(), version.substr(0, 12).c_str(), dest.c_str());
  std::printf("  %u files, %s in %.1f s: %s from peers, %s from the origin, %s already cached\n",
              s.getFileCount(), FormatBytes(s.getTotalBytes()).c_str(), s.getSeconds(),
              FormatBytes(s.getBytesFromPeers()).c_str(),
              FormatBytes(s.getBytesFromOrigin()).c_str(), FormatBytes(s.getBytesCached()).c_str());
  if (s.getFirstChunkSeconds() >= 0)
    std::printf("  first chunk arrived after %.2f s\n", s.getFirstChunkSeconds());
}

Status RunPull(const PullArgs& a) {
  Result<ModelRef> ref = ModelRef::Parse(a.ref);
  if (!ref.ok()) return ref.status();
  if (!a.labels.empty() || a.latest) {
    if (a.labels.empty() || !a.latest) {
      return Status::InvalidArgument(
          "a pull takes one version: give --label key=value with --latest for the newest "
          "version carrying the labels");
    }
    if (a.ref.find(':') != std::string::npos) {
      return Status::InvalidArgument("--label names versions by label: give ns/model without :" +
                                     ref->ref());
    }
    SHOAL_RETURN_IF_ERROR(CheckLabelFilter(a.labels));
  }
  if (a.token.empty()) return Status::InvalidArgument("no token; pass --token or set SHOAL_TOKEN");
  std::error_code ec;
  std::string dest =
      std::filesystem::absolute(a.to.empty() ? ref->name() : a.to, ec).lexically_normal().string();
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  auto staging = PullStaging::Create(dest, ref->ns() + "/" + ref->name(), a.replace);
  if (!staging.ok()) return staging.status();
  // An interrupted pull removes its staging folder (the destructor) and
  // hangs up, which cancels the agent's job.
  kj::UnixEventPort::captureSignal(SIGINT);
  kj::UnixEventPort::captureSignal(SIGTERM);
  auto io = kj::setupAsyncIo();
  ProgressBar bar("pulling  ", 0);
  Status result;
  KJ_IF_MAYBE (e, kj::runCatchingExceptions([&] {
                 auto addr = io.provider->getNetwork()
                                 .parseAddress("unix:" + a.agent_socket)
                                 .wait(io.waitScope);
                 auto stream = addr->connect().wait(io.waitScope);
                 capnp::TwoPartyClient client(kj::downcast<kj::AsyncCapabilityStream>(*stream),
                                              kMaxFdsPerMessage);
                 auto agent = client.bootstrap().castAs<proto::LocalAgent>();
                 auto req = agent.pullRequest();
                 req.setRef(ref->ToString());
                 auto labels = req.initLabels(static_cast<unsigned>(a.labels.size()));
                 for (size_t i = 0; i < a.labels.size(); ++i)
                   labels.set(static_cast<unsigned>(i), a.labels[i]);
                 req.setToken(a.token);
                 req.setDest(dest);
                 req.setListener(kj::heap<Listener>(bar, **staging));
                 kj::Maybe<capnp::Response<proto::LocalAgent::PullResults>> response;
                 bool interrupted = false;
                 auto stop = io.unixEventPort.onSignal(SIGINT)
                                 .exclusiveJoin(io.unixEventPort.onSignal(SIGTERM))
                                 .then([&](siginfo_t) { interrupted = true; });
                 req.send()
                     .then([&](capnp::Response<proto::LocalAgent::PullResults> r) {
                       response = kj::mv(r);
                     })
                     .exclusiveJoin(kj::mv(stop))
                     .wait(io.waitScope);
                 if (interrupted) {
                   bar.Finish();
                   result = Status::Unavailable("interrupted; nothing was written to " + dest);
                   return;
                 }
                 KJ_IF_MAYBE (resp, response) {
                   result = (*staging)->Commit();
                   bar.Finish();
                   if (!result.ok()) return;
                   PrintSummary(resp->getSummary(), ref->ToString(), dest, a.json);
                 }
               })) {
    result = StatusFromException(*e, "agent at " + a.agent_socket);
    if (result.code() == Status::Code::kIOError &&
        std::string(e->getDescription().cStr()).find("connect") != std::string::npos) {
      result = Status::Unavailable("cannot reach the agent at " + a.agent_socket +
                                   "; is shoald running?");
    }
  }
  return result;
}

}  // namespace

void RegisterPull(CLI::App& app, CommandRunner* run) {
  auto a = std::make_shared<PullArgs>();
  CLI::App* cmd = app.add_subcommand("pull", "pull a version through this node's agent");
  cmd->add_option("ref", a->ref, "ns/model[:tag-or-version]")->required();
  cmd->add_option("--to", a->to, "destination folder (default: ./<model>)");
  cmd->add_option("--token", a->token, "token that may read the namespace")->envname("SHOAL_TOKEN");
  cmd->add_option("--agent", a->agent_socket, "the agent's control socket")
      ->envname("SHOAL_AGENT_SOCKET")
      ->capture_default_str();
  cmd->add_flag("--json", a->json,
                "print the summary as one JSON object: from peers + from the origin + already "
                "cached = total_bytes");
  cmd->add_option("--label", a->labels,
                  "with --latest: pull the newest version carrying this key=value label; "
                  "repeatable, all must match");
  cmd->add_flag("--latest", a->latest, "with --label: the newest version carrying the labels");
  cmd->add_flag("--replace", a->replace,
                "replace the destination even if it is not an earlier pull of the same model");
  cmd->callback([a, run] { *run = [a] { return RunPull(*a); }; });
}

}  // namespace shoal
