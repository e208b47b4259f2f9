// Pods reading models through their node's agent: a real tracker, two real
// agents with the real radosgw as their origin, and the clients pods use
// (curl, Debian's boto3 and awscli), on 127.0.0.1.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "../s3/s3_test_env.h"
#include "server/http_test_client.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMiB = 1 << 20;
const char kPython[] = "/usr/bin/python3";  // Debian's, with boto3
const char kAws[] = "/usr/bin/aws";

// A tracker and two agents on the test bucket (a fresh prefix), with one
// checkpoint published to the origin only, so every agent starts cold.
// Agent 0 lets credential-less loopback reads use its own token; agent 1
// also listens on a unix socket.
struct ReadCluster : TestCluster {
  std::string ckpt = tmp / "ckpt";
  std::string other_reader;

  ReadCluster() : TestCluster(Options()) {
    other_reader = tracker.MintToken("team-b", "read", "pod-b");
    AddAgent({"--read-anonymous"});
    AddAgent({"--http-socket", tmp / "agent1-http.sock"});
    WriteRandomFile(ckpt + "/model-00001-of-00002.safetensors", 9 * kMiB + 12345, 1);
    WriteRandomFile(ckpt + "/model-00002-of-00002.safetensors", 48 * kMiB, 2);
    WriteRandomFile(ckpt + "/config.json", 900, 3);
    WriteRandomFile(ckpt + "/tokenizer/tokenizer.json", 300000, 4);
    WriteRandomFile(ckpt + "/tokenizer/vocab a+b.txt", 5000, 5);
    PublishOk(ckpt, "team-a/llama", -1);
  }

  static ClusterOptions Options() {
    shoal::OriginOptions o =
        shoal_test::TestOptions("read-test-" + std::to_string(std::random_device{}() % 1000000000));
    ClusterOptions options;
    options.origin = {o.url, o.endpoint, o.region, o.access_key, o.secret_key};
    options.cache_size = "1GiB";
    options.agents_use_origin = true;
    options.agent_flags = {"--read-origin-wait-ms", "300"};
    return options;
  }

  std::string Url(int agent, const std::string& rest) const {
    return "http://127.0.0.1:" + std::to_string(agents[size_t(agent)]->http_port()) + rest;
  }
  std::string FileUrl(int agent, const std::string& path, const std::string& ref = "latest") const {
    return Url(agent, "/v1/models/team-a/llama:" + ref + "/files/" + path);
  }

  // curl's status code and body, with extra arguments.
  std::pair<int, std::string> Curl(std::vector<std::string> args) const {
    CurlAnswer a = TestCluster::Curl(std::move(args));
    return {a.status, a.body};
  }

  // Runs a boto3 script against agent `agent`'s S3 endpoint. The script
  // sees `s3` (signed with `token` as access key and secret) and prints
  // lines the test checks.
  ProcessResult Boto3(int agent, const std::string& token, const std::string& body,
                      const std::string& secret = "") const {
    std::string script = tmp / ("boto-" + std::to_string(counter_++) + ".py");
    std::ofstream(script)
        << "import boto3, sys\n"
           "from botocore.config import Config\n"
           "from botocore import UNSIGNED\n"
           "from botocore.exceptions import ClientError\n"
           "def client(key, secret, signed=True):\n"
           "    cfg = Config(s3={'addressing_style': 'path'}, retries={'max_attempts': 1},\n"
           "                 signature_version='s3v4' if signed else UNSIGNED)\n"
           "    return boto3.client('s3', endpoint_url='"
        << Url(agent, "") << "', region_name='us-east-1',\n"
        << "        aws_access_key_id=key, aws_secret_access_key=secret, config=cfg)\n"
        << "token = '" << token << "'\n"
        << "s3 = client(token, '" << (secret.empty() ? token : secret) << "')\n"
        << "def code(fn):\n"
           "    try:\n"
           "        fn()\n"
           "        return 'ok'\n"
           "    except ClientError as e:\n"
           "        return '%s %s' % (e.response['ResponseMetadata']['HTTPStatusCode'],\n"
           "                          e.response['Error']['Code'])\n"
        << body;
    return RunProcess({kPython, script});
  }

  mutable std::atomic<int> counter_{0};
};

// Sends `request` to `port` and reads the response; its status, headers
// and body.
RawResponse Raw(int port, const std::string& request) {
  TestConnection c(static_cast<uint16_t>(port));
  REQUIRE(c.Send(request));
  return c.Read(request.rfind("HEAD", 0) == 0);
}

}  // namespace

TEST_CASE("curl reads whole files and ranges through the plain API, byte for byte",
          "[agent][read]") {
  ReadCluster c;
  const std::string auth = "Authorization: Bearer " + c.reader;
  const std::string shard = Slurp(c.ckpt + "/model-00001-of-00002.safetensors");
  for (int agent : {0, 1}) {
    auto [status, body] =
        c.Curl({"-H", auth, c.FileUrl(agent, "model-00001-of-00002.safetensors")});
    CHECK(status == 200);
    CHECK(body == shard);
  }
  auto [cs, config] = c.Curl({"-H", auth, c.FileUrl(1, "config.json")});
  CHECK(cs == 200);
  CHECK(config == Slurp(c.ckpt + "/config.json"));
  auto [ts, vocab] = c.Curl({"-H", auth, c.FileUrl(1, "tokenizer/vocab%20a%2Bb.txt")});
  CHECK(ts == 200);
  CHECK(vocab == Slurp(c.ckpt + "/tokenizer/vocab a+b.txt"));

  // Ranges inside a piece, across pieces, open-ended and suffixes.
  struct Case {
    std::string range;
    size_t first, length;
  };
  const size_t n = shard.size();
  for (const Case& k : {Case{"0-0", 0, 1}, Case{"1048000-1049999", 1048000, 2000},
                        Case{"3000000-", 3000000, n - 3000000}, Case{"-5000", n - 5000, 5000},
                        Case{"100-99999999", 100, n - 100}}) {
    INFO(k.range);
    auto [status, body] =
        c.Curl({"-H", auth, "-r", k.range, c.FileUrl(1, "model-00001-of-00002.safetensors")});
    CHECK(status == 206);
    CHECK(body == shard.substr(k.first, k.length));
  }

  RawResponse head = Raw(c.agents[1]->http_port(),
                         "HEAD /v1/models/team-a/llama:latest/files/config.json HTTP/1.1\r\n"
                         "Host: t\r\n" +
                             auth + "\r\n\r\n");
  CHECK(head.status == 200);
  CHECK(head.headers["content-length"] == "900");
  CHECK(head.headers["accept-ranges"] == "bytes");
  CHECK(head.headers["etag"].size() == 66);  // a quoted SHA-256
  CHECK(head.headers["last-modified"].find("GMT") != std::string::npos);
  RawResponse ranged = Raw(c.agents[1]->http_port(),
                           "GET /v1/models/team-a/llama:latest/files/config.json HTTP/1.1\r\n"
                           "Host: t\r\nRange: bytes=10-19\r\n" +
                               auth + "\r\n\r\n");
  CHECK(ranged.status == 206);
  CHECK(ranged.headers["content-range"] == "bytes 10-19/900");
  CHECK(ranged.headers["etag"] == head.headers["etag"]);

  // The manifest, and the same file by version ID, with the same ETag.
  auto [ms, manifest] = c.Curl({"-H", auth, c.Url(1, "/v1/models/team-a/llama:latest/manifest")});
  CHECK(ms == 200);
  size_t at = manifest.find("\"versionId\": \"");
  REQUIRE(at != std::string::npos);
  std::string version = manifest.substr(at + 14, 64);
  CHECK(manifest.find("tokenizer/tokenizer.json") != std::string::npos);
  RawResponse by_version =
      Raw(c.agents[1]->http_port(), "HEAD /v1/models/team-a/llama:" + version +
                                        "/files/config.json HTTP/1.1\r\nHost: t\r\n" + auth +
                                        "\r\n\r\n");
  CHECK(by_version.status == 200);
  CHECK(by_version.headers["etag"] == head.headers["etag"]);

  // The same through agent 1's unix socket, as a pod with the socket mounted reads.
  auto [us, unix_body] = c.Curl(
      {"--unix-socket", c.tmp / "agent1-http.sock", "-H", auth,
       "http://localhost/v1/models/team-a/llama:latest/files/model-00001-of-00002.safetensors"});
  CHECK(us == 200);
  CHECK(unix_body == shard);
  CHECK(c.Curl({"--unix-socket", c.tmp / "agent1-http.sock",
                "http://localhost/v1/models/team-a/llama:latest/files/config.json"})
            .first == 401);

  // Anonymous loopback reads where the agent allows them.
  auto [anon, anon_body] = c.Curl({c.FileUrl(0, "config.json")});
  CHECK(anon == 200);
  CHECK(anon_body == Slurp(c.ckpt + "/config.json"));
  CHECK(c.Curl({c.FileUrl(1, "config.json")}).first == 401);

  CHECK(c.agents[1]->Metric("shoal_agent_read_requests_total{api=\"plain\",status=\"206\"}") >= 6);
  CHECK(c.agents[1]->Metric("shoal_agent_read_bytes_total{api=\"plain\"}") >= double(2 * n));
  CHECK(c.agents[1]->Metric("shoal_agent_read_ttfb_seconds_count{api=\"plain\"}") >= 8);
}

TEST_CASE("boto3 gets ranges, heads objects and pages through listings", "[agent][read][s3]") {
  ReadCluster c;
  const std::string shard = Slurp(c.ckpt + "/model-00002-of-00002.safetensors");
  const std::string range_file = c.tmp / "range.bin";
  ProcessResult r = c.Boto3(1, c.reader, "range_file = '" + range_file + "'\n" + R"(
r = s3.get_object(Bucket='team-a', Key='llama/latest/model-00002-of-00002.safetensors', Range='bytes=5000000-6048575')
body = r['Body'].read()
open(range_file, 'wb').write(body)
print('get', r['ResponseMetadata']['HTTPStatusCode'], r['ContentRange'], len(body))
h = s3.head_object(Bucket='team-a', Key='llama/latest/model-00002-of-00002.safetensors')
print('head', h['ContentLength'], h['ETag'] == r['ETag'], len(h['ETag']), h['AcceptRanges'])
keys, pages, token = [], 0, None
while True:
    kw = dict(Bucket='team-a', Prefix='llama/latest/', MaxKeys=2)
    if token: kw['ContinuationToken'] = token
    p = s3.list_objects_v2(**kw)
    pages += 1
    keys += [o['Key'] + '=' + str(o['Size']) for o in p.get('Contents', [])]
    if not p['IsTruncated']: break
    token = p['NextContinuationToken']
print('pages', pages)
for k in keys: print('key', k)
d = s3.list_objects_v2(Bucket='team-a', Prefix='llama/latest/', Delimiter='/')
print('folders', [p['Prefix'] for p in d.get('CommonPrefixes', [])], len(d['Contents']))
print('missing-model', len(s3.list_objects_v2(Bucket='team-a', Prefix='nope/latest/').get('Contents', [])))
print('models', [p['Prefix'] for p in s3.list_objects_v2(Bucket='team-a', Delimiter='/').get('CommonPrefixes', [])])
print('tags', [p['Prefix'] for p in s3.list_objects_v2(Bucket='team-a', Prefix='llama/', Delimiter='/').get('CommonPrefixes', [])])
print('everything', len(s3.list_objects_v2(Bucket='team-a')['Contents']))
)");
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("get 206 bytes 5000000-6048575/50331648 1048576\n") != std::string::npos);
  CHECK(Slurp(range_file) == shard.substr(5000000, 1048576));
  CHECK(r.out.find("head 50331648 True 66 bytes\n") != std::string::npos);
  CHECK(r.out.find("pages 3\n") != std::string::npos);
  CHECK(r.out.find("key llama/latest/config.json=900\n") != std::string::npos);
  CHECK(r.out.find("key llama/latest/tokenizer/vocab a+b.txt=5000\n") != std::string::npos);
  CHECK(r.out.find("key llama/latest/model-00002-of-00002.safetensors=50331648\n") !=
        std::string::npos);
  CHECK(r.out.find("folders ['llama/latest/tokenizer/'] 3\n") != std::string::npos);
  CHECK(r.out.find("missing-model 0\n") != std::string::npos);
  CHECK(r.out.find("models ['llama/']\n") != std::string::npos);
  CHECK(r.out.find("tags ['llama/latest/']\n") != std::string::npos);
  CHECK(r.out.find("everything 5\n") != std::string::npos);
}

TEST_CASE("aws s3 cp --recursive copies a whole version from the agent", "[agent][read][s3]") {
  ReadCluster c;
  std::string out = c.tmp / "copy";
  ProcessResult r =
      RunProcess({kAws, "s3", "cp", "--recursive", "--only-show-errors",
                  "s3://team-a/llama/latest/", out, "--endpoint-url", c.Url(1, "")},
                 {"AWS_ACCESS_KEY_ID=" + c.reader, "AWS_SECRET_ACCESS_KEY=" + c.reader,
                  "AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=/dev/null",
                  "AWS_SHARED_CREDENTIALS_FILE=/dev/null"});
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(SameTree(c.ckpt, out));
  CHECK(SameTree(out, c.ckpt));
}

TEST_CASE("a cold range read is answered before the rest of its file has arrived",
          "[agent][read]") {
  ReadCluster c;
  const std::string shard = Slurp(c.ckpt + "/model-00002-of-00002.safetensors");
  const double file_chunks = 48;  // 48 MiB in 1 MiB pieces
  AgentProcess& agent = *c.agents[1];
  REQUIRE(agent.Metric("shoal_agent_cache_chunks") == 0);
  TestConnection conn(static_cast<uint16_t>(agent.http_port()));
  auto start = std::chrono::steady_clock::now();
  REQUIRE(conn.Send(
      "GET /v1/models/team-a/llama:latest/files/model-00002-of-00002.safetensors HTTP/1.1\r\n"
      "Host: t\r\nRange: bytes=20971520-22020095\r\nAuthorization: Bearer " +
      c.reader + "\r\n\r\n"));
  RawResponse r = conn.Read();
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  double chunks_then = agent.Metric("shoal_agent_cache_chunks");
  std::printf("cold 1 MiB range: %.1f ms, %.0f of the file's %.0f chunks in the cache after\n", ms,
              chunks_then, file_chunks);
  CHECK(r.status == 206);
  CHECK(r.body == shard.substr(20971520, 1048576));
  // Only the chunk under the range and the read-ahead came; not the file.
  CHECK(chunks_then >= 1);
  CHECK(chunks_then <= 1 + 4 + 1);
  // The chunks came from the origin through their owners, on the tracker's order.
  double origin_chunks = 0;
  for (auto& a : c.agents) origin_chunks += a->Metric("shoal_agent_origin_chunks_total");
  CHECK(origin_chunks >= 1);
  CHECK(origin_chunks <= 1 + 4 + 1);
}

TEST_CASE("bad reads get the right status and error, on both APIs", "[agent][read][s3]") {
  ReadCluster c;
  const std::string auth = "Authorization: Bearer " + c.reader;
  int port = c.agents[1]->http_port();
  auto status = [&](const std::string& request) { return Raw(port, request); };
  auto get = [](const std::string& target, const std::string& headers) {
    return "GET " + target + " HTTP/1.1\r\nHost: t\r\n" + headers + "\r\n\r\n";
  };
  const std::string file = "/v1/models/team-a/llama:latest/files/config.json";

  RawResponse r = status(get(file, auth + "\r\nRange: bytes=900-"));
  CHECK(r.status == 416);
  CHECK(r.headers["content-range"] == "bytes */900");
  CHECK(status(get("/v1/models/team-a/nope:latest/files/config.json", auth)).status == 404);
  CHECK(status(get("/v1/models/team-a/llama:nosuchtag/files/config.json", auth)).status == 404);
  CHECK(status(get("/v1/models/team-a/llama:latest/files/absent.bin", auth)).status == 404);
  r = status(get("/v1/models/team-a/llama:latest/files/tokenizer/../../../etc/passwd", auth));
  CHECK(r.status == 400);
  CHECK(r.body.find("'..'") != std::string::npos);
  CHECK(status(get("/v1/models/team-a/llama:latest/files/%2e%2e/%2e%2e/etc/passwd", auth)).status ==
        400);
  r = status(get(file, ""));
  CHECK(r.status == 401);
  CHECK(r.headers["www-authenticate"].rfind("Bearer", 0) == 0);
  CHECK(status(get(file, "Authorization: Bearer shoal1.forged.token")).status == 401);
  r = status(get(file, "Authorization: Bearer " + c.other_reader));
  CHECK(r.status == 403);
  CHECK(r.body.find("team-b") != std::string::npos);
  CHECK(status(get(file, auth + "\r\nX-Padding: " + std::string(20000, 'x'))).status == 431);

  ProcessResult s3 = c.Boto3(1, c.reader, R"(
print('range', code(lambda: s3.get_object(Bucket='team-a', Key='llama/latest/config.json', Range='bytes=5000-')))
print('no-model', code(lambda: s3.get_object(Bucket='team-a', Key='nope/latest/config.json')))
print('no-file', code(lambda: s3.head_object(Bucket='team-a', Key='llama/latest/absent.bin')))
print('no-bucket', code(lambda: s3.get_object(Bucket='Not_A_Namespace', Key='llama/latest/config.json')))
print('traversal', code(lambda: s3.get_object(Bucket='team-a', Key='llama/latest/tokenizer/../../x')))
print('other-ns', code(lambda: s3.get_object(Bucket='team-b', Key='llama/latest/config.json')))
print('bad-token', code(lambda: client('shoal1.forged.token', 'shoal1.forged.token').get_object(Bucket='team-a', Key='llama/latest/config.json')))
print('bad-secret', code(lambda: client(token, 'wrong').get_object(Bucket='team-a', Key='llama/latest/config.json')))
print('unsigned', code(lambda: client(None, None, signed=False).get_object(Bucket='team-a', Key='llama/latest/config.json')))
print('write', code(lambda: s3.put_object(Bucket='team-a', Key='llama/latest/new.bin', Body=b'x')))
)");
  INFO(s3.out << s3.err);
  REQUIRE(s3.exit_code == 0);
  CHECK(s3.out.find("range 416 InvalidRange\n") != std::string::npos);
  CHECK(s3.out.find("no-model 404 NoSuchKey\n") != std::string::npos);
  CHECK(s3.out.find("no-file 404 404\n") != std::string::npos);  // HEAD has no body to carry a code
  CHECK(s3.out.find("no-bucket 404 NoSuchBucket\n") != std::string::npos);
  CHECK(s3.out.find("traversal 400 InvalidArgument\n") != std::string::npos);
  CHECK(s3.out.find("other-ns 403 AccessDenied\n") != std::string::npos);
  CHECK(s3.out.find("bad-token 403 InvalidAccessKeyId\n") != std::string::npos);
  CHECK(s3.out.find("bad-secret 403 SignatureDoesNotMatch\n") != std::string::npos);
  CHECK(s3.out.find("unsigned 403 AccessDenied\n") != std::string::npos);
  CHECK(s3.out.find("write 501 NotImplemented\n") != std::string::npos);

  // Agent 0 takes unsigned loopback requests with its own token.
  ProcessResult anon = c.Boto3(0, c.reader, R"(
print('anonymous', code(lambda: client(None, None, signed=False).get_object(Bucket='team-a', Key='llama/latest/config.json')))
)");
  INFO(anon.out << anon.err);
  CHECK(anon.out.find("anonymous ok\n") != std::string::npos);
}

TEST_CASE("64 concurrent readers are served while a stalled reader holds its connection",
          "[agent][read]") {
  ReadCluster c;
  const std::string shard = Slurp(c.ckpt + "/model-00002-of-00002.safetensors");
  const std::string auth = "Authorization: Bearer " + c.reader;
  int port = c.agents[1]->http_port();
  const std::string target =
      "/v1/models/team-a/llama:latest/files/model-00002-of-00002.safetensors";
  // Warm the file, then stall a reader: it asks for everything and never reads.
  auto [warm, body] = c.Curl({"-H", auth, c.FileUrl(1, "model-00002-of-00002.safetensors")});
  REQUIRE(warm == 200);
  REQUIRE(body == shard);
  TestConnection stalled(static_cast<uint16_t>(port));
  REQUIRE(stalled.Send("GET " + target + " HTTP/1.1\r\nHost: t\r\n" + auth + "\r\n\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  std::atomic<int> ok{0};
  std::vector<std::thread> readers;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 64; ++i) {
    readers.emplace_back([&, i] {
      size_t first = size_t(i) * 700001 % (shard.size() - 300000);
      TestConnection conn(static_cast<uint16_t>(port));
      if (!conn.Send("GET " + target +
                     " HTTP/1.1\r\nHost: t\r\nRange: bytes=" + std::to_string(first) + "-" +
                     std::to_string(first + 299999) + "\r\n" + auth + "\r\n\r\n")) {
        return;
      }
      RawResponse r = conn.Read();
      if (r.status == 206 && r.body == shard.substr(first, 300000)) ++ok;
    });
  }
  for (auto& t : readers) t.join();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("64 concurrent 300 KB range reads beside a stalled reader: %.2f s\n", s);
  CHECK(ok == 64);
  CHECK(s < 10);
}
