// Writes the seeds that only Shoal's own code can make, into
// corpus/<target>/ under the folder given (tests/fuzz/README.md):
//   manifest/     manifests BuildManifest makes of small checkpoint folders,
//                 in their canonical bytes, as `shoal publish` sends them
//   token/        tokens TokenAuthority::Mint makes with the fuzz secret
//   tracker_rpc/  the bytes a Cap'n Proto client writes to the tracker for a
//                 few sessions: authenticate, then Registry calls pipelined on
//                 it; registerAgent, then AgentSession calls
//
//   seed_writer CORPUS_DIR
//   seed_writer --token     prints the read token make_seeds.py puts in its seeds
#include <capnp/rpc-twoparty.h>
#include <kj/async-io.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "shoal/base64url.h"
#include "shoal/manifest_builder.h"
#include "shoal/manifest_codec.h"
#include "shoal/peer_cert.h"
#include "shoal/proto/tracker.capnp.h"
#include "shoal/token.h"

namespace {

namespace fs = std::filesystem;
using shoal::fuzz::Check;
using shoal::proto::Gateway;

void Write(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << bytes;
  std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

// Tokens live until 2100, so the seeds keep verifying.
constexpr int64_t kIssuedMs = 1796126400000;   // 2026-12-01
constexpr int64_t kExpiresMs = 4102444800000;  // 2100-01-01

std::string Token(const std::string& subject, shoal::Role role, std::vector<std::string> ns) {
  static const shoal::TokenAuthority authority =
      shoal::TokenAuthority::FromSecret(shoal::fuzz::kTokenSecret).value();
  shoal::TokenClaims c;
  c.id = "0123456789abcdef";
  c.subject = subject;
  c.role = role;
  c.namespaces = std::move(ns);
  c.issued_at_ms = kIssuedMs;
  c.expires_at_ms = kExpiresMs;
  return authority.Mint(c);
}

// A checkpoint folder with `files` (path -> size), published as team/model.
std::string ManifestOf(const std::vector<std::pair<std::string, size_t>>& files,
                       uint32_t piece_size) {
  char tmpl[] = "/tmp/shoal-seed-XXXXXX";
  Check(mkdtemp(tmpl) != nullptr, "mkdtemp");
  fs::path dir(tmpl);
  for (const auto& [path, size] : files) {
    fs::create_directories((dir / path).parent_path());
    std::string bytes(size, '\0');
    for (size_t i = 0; i < size; ++i) bytes[i] = char(i * 131 + path.size());
    std::ofstream(dir / path, std::ios::binary) << bytes;
  }
  fs::create_directories(dir / "empty");
  shoal::BuildOptions o;
  o.hash.piece_size = piece_size;
  o.hash.threads = 1;
  o.ns = "team";
  o.name = "model";
  o.created_by = "ci";
  shoal::Result<shoal::Manifest> m = shoal::BuildManifest(dir, o);
  Check(m.ok(), "BuildManifest");
  m->created_at_ms = kIssuedMs;
  m->labels.push_back({"run", "seed"});
  fs::remove_all(dir);
  return shoal::EncodeManifest(*m).value();
}

// Records what the client writes; reads nothing.
class Recorder final : public kj::AsyncIoStream {
 public:
  std::string bytes;
  kj::Promise<size_t> tryRead(void*, size_t, size_t) override { return kj::NEVER_DONE; }
  kj::Promise<void> write(const void* buffer, size_t size) override {
    bytes.append(static_cast<const char*>(buffer), size);
    return kj::READY_NOW;
  }
  kj::Promise<void> write(kj::ArrayPtr<const kj::ArrayPtr<const kj::byte>> pieces) override {
    for (auto p : pieces) bytes.append(reinterpret_cast<const char*>(p.begin()), p.size());
    return kj::READY_NOW;
  }
  kj::Promise<void> whenWriteDisconnected() override { return kj::NEVER_DONE; }
  void shutdownWrite() override {}
};

// A client's control capability, as shoald exports one.
class Control final : public shoal::proto::AgentControl::Server {};
class Listener final : public shoal::proto::WarmListener::Server {};

// The bytes a client writes while `session` makes its calls on the
// tracker's bootstrap capability, without waiting for answers (every call
// is pipelined).
std::string Session(
    kj::WaitScope& ws,
    const std::function<void(Gateway::Client, kj::Vector<kj::Promise<void>>&)>& session) {
  Recorder recorder;
  {
    capnp::TwoPartyClient client(recorder);
    Gateway::Client gateway = client.bootstrap().castAs<Gateway>();
    kj::Vector<kj::Promise<void>> calls;
    session(gateway, calls);
    ws.poll();
  }
  ws.poll();
  return recorder.bytes;
}

template <typename Request>
void Send(Request&& r, kj::Vector<kj::Promise<void>>& calls) {
  calls.add(r.send().ignoreResult().catch_([](kj::Exception&&) {}).eagerlyEvaluate(nullptr));
}

kj::ArrayPtr<const kj::byte> Bytes(const std::string& s) {
  return kj::arrayPtr(reinterpret_cast<const kj::byte*>(s.data()), s.size());
}

void WriteRpcSeeds(const fs::path& out, kj::WaitScope& ws, const std::string& manifest) {
  const std::string admin = Token("ci", shoal::Role::kAdmin, {"*"});
  const std::string reader = Token("pod-7", shoal::Role::kRead, {"team"});
  const std::string chunk(32, '\x11');
  const shoal::VersionId id = shoal::ComputeVersionId(manifest);
  const std::string version(reinterpret_cast<const char*>(id.data()), id.kSize);
  auto registry = [](Gateway::Client g, const std::string& token) {
    auto r = g.authenticateRequest();
    r.setToken(token);
    return r.send().getRegistry();
  };
  auto seed = [&](const char* name, auto body) {
    Write(out / "tracker_rpc" / name, Session(ws, body));
  };
  seed("public_key", [&](Gateway::Client g, auto& calls) { Send(g.publicKeyRequest(), calls); });
  seed("bad_token", [&](Gateway::Client g, auto& calls) {
    Send(registry(g, "shoal1.bm90LWEtdG9rZW4.AAAA").whoamiRequest(), calls);
  });
  seed("whoami",
       [&](Gateway::Client g, auto& calls) { Send(registry(g, reader).whoamiRequest(), calls); });
  seed("list", [&](Gateway::Client g, auto& calls) {
    auto reg = registry(g, reader);
    auto models = reg.listModelsRequest();
    models.setNamespace("team");
    models.setLimit(10);
    Send(kj::mv(models), calls);
    auto versions = reg.listVersionsRequest();
    versions.setNamespace("team");
    versions.setName("model");
    versions.setLimit(10);
    Send(kj::mv(versions), calls);
  });
  seed("publish", [&](Gateway::Client g, auto& calls) {
    auto reg = registry(g, admin);
    auto plan = reg.planUploadRequest();
    plan.setNamespace("team");
    plan.initChunks(1).set(0, Bytes(chunk));
    Send(kj::mv(plan), calls);
    auto stored = reg.chunksStoredRequest();
    stored.setNamespace("team");
    stored.initChunks(1).set(0, Bytes(chunk));
    Send(kj::mv(stored), calls);
    auto commit = reg.commitRequest();
    commit.setManifest(Bytes(manifest));
    commit.initTags(1).set(0, "latest");
    Send(kj::mv(commit), calls);
    auto resolve = reg.resolveRequest();
    resolve.setNamespace("team");
    resolve.setName("model");
    resolve.setRef("latest");
    Send(kj::mv(resolve), calls);
  });
  seed("tags", [&](Gateway::Client g, auto& calls) {
    auto reg = registry(g, admin);
    auto tag = reg.setTagRequest();
    tag.setNamespace("team");
    tag.setName("model");
    tag.setTag("stable");
    tag.setVersionId(Bytes(version));
    Send(kj::mv(tag), calls);
    auto history = reg.tagHistoryRequest();
    history.setNamespace("team");
    history.setName("model");
    history.setTag("stable");
    Send(kj::mv(history), calls);
    auto del = reg.deleteVersionRequest();
    del.setNamespace("team");
    del.setName("model");
    del.setVersionId(Bytes(version));
    Send(kj::mv(del), calls);
    auto gc = reg.gcRequest();
    gc.setDryRun(true);
    gc.setGraceMs(3600000);
    Send(kj::mv(gc), calls);
  });
  seed("need_warm", [&](Gateway::Client g, auto& calls) {
    auto reg = registry(g, reader);
    auto need = reg.needRequest();
    need.setNamespace("team");
    need.setName("model");
    need.setVersionId(Bytes(version));
    need.initChunks(1).set(0, Bytes(chunk));
    Send(kj::mv(need), calls);
    auto warm = reg.warmRequest();
    warm.setNamespace("team");
    warm.setName("model");
    warm.setRef("latest");
    warm.setListener(kj::heap<Listener>());
    Send(kj::mv(warm), calls);
  });
  seed("agent", [&](Gateway::Client g, auto& calls) {
    shoal::PeerKey key = shoal::GeneratePeerKey().value();
    auto join = g.registerAgentRequest();
    join.setToken(admin);
    auto info = join.initInfo();
    info.setName("node-1");
    info.setPeerPort(6881);
    info.setZone("rack-a");
    info.setCacheBytes(uint64_t{1} << 30);
    info.setVersion("0.1.0");
    info.initLabels(1).set(0, "gpu=a100");
    join.setControl(kj::heap<Control>());
    join.setPeerKey(key.public_key_pem);
    auto session = join.send().getSession();
    auto beat = session.heartbeatRequest();
    beat.initStats().setCachedBytes(4096);
    Send(kj::mv(beat), calls);
    Send(session.ringRequest(), calls);
    auto renew = session.renewPeerCertRequest();
    renew.setToken(admin);
    renew.setPeerKey(key.public_key_pem);
    Send(kj::mv(renew), calls);
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: seed_writer CORPUS_DIR | --token\n");
    return 2;
  }
  if (std::string(argv[1]) == "--token") {
    std::printf("%s\n", Token("pod-7", shoal::Role::kRead, {"team"}).c_str());
    return 0;
  }
  const fs::path out = argv[1];
  const std::string one_piece = ManifestOf({{"config.json", 700}}, 16 << 10);
  Write(out / "manifest" / "one_file", one_piece);
  Write(out / "manifest" / "pieces", ManifestOf({{"model.safetensors", 70000}}, 16 << 10));
  Write(out / "manifest" / "folders", ManifestOf({{"a/weights-00001.bin", 40000},
                                                  {"a/weights-00002.bin", 17000},
                                                  {"tokenizer/vocab.txt", 300},
                                                  {"empty.txt", 0}},
                                                 16 << 10));

  // Whole tokens (first byte 0), and their claims text alone (first byte 1).
  const std::vector<std::pair<const char*, std::string>> tokens = {
      {"admin", Token("ci", shoal::Role::kAdmin, {"*"})},
      {"reader", Token("pod-7", shoal::Role::kRead, {"team", "team-b"})},
      {"writer", Token("ci@build:42", shoal::Role::kWrite, {"team"})},
  };
  for (const auto& [name, token] : tokens) {
    Write(out / "token" / name, std::string(1, '\0') + token);
    size_t dot = token.find('.', 7);
    std::string claims = shoal::base64url::Decode(token.substr(7, dot - 7)).value();
    Write(out / "token" / (std::string(name) + "_claims"), std::string(1, '\1') + claims);
  }

  auto io = kj::setupAsyncIo();
  WriteRpcSeeds(out, io.waitScope, one_piece);
  return 0;
}
