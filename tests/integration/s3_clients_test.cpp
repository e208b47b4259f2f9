// Stock S3 clients against an agent's read endpoint: Debian's s3cmd and
// rclone copy a whole version, page through listings and list buckets, and
// curl with the project's own SigV4 signer checks the S3 calls they lean
// on (ListObjects v1, GetBucketLocation, HeadBucket, ListBuckets,
// virtual-host-style requests, conditional GETs). A real tracker and agent
// on a folder origin, on 127.0.0.1.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "shoal/s3_signer.h"
#include "shoal/uri_encode.h"
#include "support/test_cluster.h"

using namespace shoal::testing;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMiB = 1 << 20;
const char kS3cmd[] = "/usr/bin/s3cmd";
const char kRclone[] = "/usr/bin/rclone";

// Every key of the published version, as S3 keys in bucket team-a.
const std::set<std::string> kKeys = {
    "llama/latest/config.json", "llama/latest/model-00001-of-00002.safetensors",
    "llama/latest/model-00002-of-00002.safetensors", "llama/latest/tokenizer/tokenizer.json",
    "llama/latest/tokenizer/vocab a+b.txt"};

// A tracker and one agent on a folder origin, with one checkpoint (one file
// over 8 MiB, one folder) published and seeded by the agent.
struct ClientCluster : TestCluster {
  std::string ckpt = tmp / "ckpt";
  std::string other_reader;  // may read team-b only

  ClientCluster() {
    other_reader = tracker.MintToken("team-b", "read", "pod-b");
    AddAgent({"--origin", "file://" + origin});
    WriteRandomFile(ckpt + "/model-00001-of-00002.safetensors", 9 * kMiB + 12345, 1);
    WriteRandomFile(ckpt + "/model-00002-of-00002.safetensors", 3 * kMiB, 2);
    WriteRandomFile(ckpt + "/config.json", 900, 3);
    WriteRandomFile(ckpt + "/tokenizer/tokenizer.json", 300000, 4);
    WriteRandomFile(ckpt + "/tokenizer/vocab a+b.txt", 5000, 5);
    PublishOk(ckpt, "team-a/llama", 0);
  }

  int port(size_t agent = 0) const { return agents[agent]->http_port(); }

  // curl arguments for a request of `path` with `query` (decoded pairs),
  // signed in the Authorization header with `token` as both keys and sent
  // with Host `host` (default 127.0.0.1:port) to the agent.
  std::vector<std::string> Signed(const std::string& token, const std::string& path,
                                  std::vector<std::pair<std::string, std::string>> query = {},
                                  std::string host = "", const std::string& method = "GET",
                                  size_t agent = 0) const {
    const std::string address = "127.0.0.1:" + std::to_string(port(agent));
    if (host.empty()) host = address;
    shoal::SigV4Signer signer({token, token, ""}, "us-east-1");
    shoal::SignableRequest s;
    s.method = method;
    s.path = path;
    s.query = query;
    s.headers = {{"host", host}};
    s.payload_sha256 = shoal::kEmptyPayloadSha256;
    std::vector<std::string> args;
    if (method == "HEAD") args.push_back("-I");
    for (const auto& [k, v] : signer.SignHeaders(s, std::time(nullptr))) {
      args.push_back("-H");
      args.push_back(k + ": " + v);
    }
    // Sent to the agent whatever the host says, as if it resolved there.
    args.push_back("--connect-to");
    args.push_back(host + ":" + address);
    args.push_back("http://" + host + shoal::UriEncodePath(path) +
                   (query.empty() ? "" : "?" + shoal::CanonicalQueryString(query)));
    return args;
  }

  // An s3cmd config with `token` as both keys; virtual-host-style on
  // "{bucket}.localhost" when `virtual_host`, else path-style.
  std::string S3cmdConfig(const std::string& token, bool virtual_host) const {
    const std::string file = tmp / (virtual_host ? "s3cmd-vhost.cfg" : "s3cmd.cfg");
    const std::string host = (virtual_host ? "localhost:" : "127.0.0.1:") + std::to_string(port());
    std::ofstream(file) << "[default]\n"
                        << "access_key = " << token << "\n"
                        << "secret_key = " << token << "\n"
                        << "host_base = " << host << "\n"
                        << "host_bucket = " << (virtual_host ? "%(bucket)s." : "") << host << "\n"
                        << "use_https = False\n"
                        << "signature_v2 = False\n"
                        << "bucket_location = us-east-1\n";
    return file;
  }

  ProcessResult S3cmd(const std::string& config, std::vector<std::string> args) const {
    args.insert(args.begin(), {kS3cmd, "-c", config});
    return RunProcess(args, {"HOME=" + tmp.path()});
  }

  // An rclone config with one remote, "shoal", as docs/reads.md shows.
  std::string RcloneConfig(const std::string& token) const {
    const std::string file = tmp / "rclone.conf";
    std::ofstream(file) << "[shoal]\n"
                        << "type = s3\n"
                        << "provider = Other\n"
                        << "access_key_id = " << token << "\n"
                        << "secret_access_key = " << token << "\n"
                        << "endpoint = http://127.0.0.1:" << port() << "\n"
                        << "region = us-east-1\n"
                        << "force_path_style = true\n"
                        << "list_version = 1\n";
    return file;
  }

  ProcessResult Rclone(const std::string& config, std::vector<std::string> args) const {
    // A CA bundle in the environment makes rclone's S3 SDK refuse its own
    // HTTP transport; the endpoint here is plain HTTP anyway.
    args.insert(args.begin(), {"/usr/bin/env", "-u", "AWS_CA_BUNDLE", kRclone, "--config", config,
                               "--low-level-retries", "1", "--retries", "1"});
    return RunProcess(args, {"HOME=" + tmp.path()});
  }
};

// The text of every <tag>...</tag> in `xml`, in order.
std::vector<std::string> Texts(const std::string& xml, const std::string& tag) {
  std::vector<std::string> out;
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  for (size_t at = xml.find(open); at != std::string::npos; at = xml.find(open, at)) {
    at += open.size();
    size_t end = xml.find(close, at);
    if (end == std::string::npos) break;
    out.push_back(xml.substr(at, end - at));
  }
  return out;
}

// The lines of `text`, without empty ones.
std::set<std::string> Lines(const std::string& text) {
  std::set<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.insert(line);
  }
  return out;
}

}  // namespace

TEST_CASE("s3cmd copies a whole version, lists it and lists buckets", "[agent][read][s3]") {
  ClientCluster c;
  const std::string config = c.S3cmdConfig(c.reader, /*virtual_host=*/false);
  const std::string out = c.tmp / "s3cmd-copy";
  fs::create_directories(out);

  ProcessResult get =
      c.S3cmd(config, {"get", "--recursive", "s3://team-a/llama/latest/", out + "/"});
  INFO(get.out << get.err);
  REQUIRE(get.exit_code == 0);
  CHECK(SameTree(c.ckpt, out));
  CHECK(SameTree(out, c.ckpt));

  ProcessResult ls = c.S3cmd(config, {"ls", "--recursive", "s3://team-a/"});
  INFO(ls.out << ls.err);
  REQUIRE(ls.exit_code == 0);
  for (const std::string& key : kKeys) {
    CHECK(ls.out.find("s3://team-a/" + key + "\n") != std::string::npos);
  }

  ProcessResult buckets = c.S3cmd(config, {"ls"});
  INFO(buckets.out << buckets.err);
  REQUIRE(buckets.exit_code == 0);
  CHECK(buckets.out.find("s3://team-a\n") != std::string::npos);
  CHECK(buckets.out.find("s3://team-b") == std::string::npos);
}

TEST_CASE("s3cmd reads virtual-host-style, with the bucket in the host name", "[agent][read][s3]") {
  ClientCluster c;
  // s3cmd resolves team-a.localhost itself: give it a hosts file of its
  // own in a private mount namespace.
  const std::string hosts = c.tmp / "hosts";
  std::ofstream(hosts) << "127.0.0.1 localhost team-a.localhost team-b.localhost\n";
  const std::string config = c.S3cmdConfig(c.reader, /*virtual_host=*/true);
  const std::string out = c.tmp / "vhost-copy";
  fs::create_directories(out);
  ProcessResult get = RunProcess(
      {"/usr/bin/unshare", "--mount", "--", "/bin/sh", "-c",
       "mount --bind \"$0\" /etc/hosts && exec \"$@\"", hosts, kS3cmd, "-c", config, "--debug",
       "get", "--recursive", "s3://team-a/llama/latest/tokenizer/", out + "/"},
      {"HOME=" + c.tmp.path()});
  INFO(get.exit_code << "\n" << get.out << get.err.substr(0, 20000));
  REQUIRE(get.exit_code == 0);
  // The requests named the bucket in the Host header, not the path.
  CHECK(get.err.find("team-a.localhost:") != std::string::npos);
  CHECK(Slurp(out + "/tokenizer.json") == Slurp(c.ckpt + "/tokenizer/tokenizer.json"));
  CHECK(Slurp(out + "/vocab a+b.txt") == Slurp(c.ckpt + "/tokenizer/vocab a+b.txt"));

  // curl, the same way, and a plain-host request of the same key.
  const std::string vhost = "team-a.localhost:" + std::to_string(c.port());
  CurlAnswer v = c.Curl(c.Signed(c.reader, "/llama/latest/config.json", {}, vhost));
  CHECK(v.status == 200);
  CHECK(v.body == Slurp(c.ckpt + "/config.json"));
  CurlAnswer list = c.Curl(c.Signed(c.reader, "/", {{"prefix", "llama/latest/tokenizer/"}}, vhost));
  CHECK(list.status == 200);
  CHECK(Texts(list.body, "Key") ==
        std::vector<std::string>{"llama/latest/tokenizer/tokenizer.json",
                                 "llama/latest/tokenizer/vocab a+b.txt"});
  // On a plain host the same path names bucket "llama", which is empty.
  CurlAnswer plain = c.Curl(c.Signed(c.reader, "/llama/latest/config.json"));
  CHECK(plain.status != 200);

  // A host name of the cluster's own, given with --s3-virtual-host.
  c.AddAgent({"--origin", "file://" + c.origin, "--s3-virtual-host", "models.internal"});
  const std::string named = "team-a.models.internal:" + std::to_string(c.port(1));
  CurlAnswer own =
      c.Curl(c.Signed(c.reader, "/llama/latest/config.json", {}, named, "GET", /*agent=*/1));
  CHECK(own.status == 200);
  CHECK(own.body == Slurp(c.ckpt + "/config.json"));
  // The first agent was not told that name: there it is path style.
  const std::string unnamed = "team-a.models.internal:" + std::to_string(c.port());
  CHECK(c.Curl(c.Signed(c.reader, "/llama/latest/config.json", {}, unnamed)).status != 200);
}

TEST_CASE("rclone copies a whole version with ranged reads and pages through listings",
          "[agent][read][s3]") {
  ClientCluster c;
  const std::string config = c.RcloneConfig(c.reader);
  const std::string out = c.tmp / "rclone-copy";

  // Files over 4 MiB come in 4 ranged streams; listings in pages of 2.
  ProcessResult copy =
      c.Rclone(config, {"copy", "shoal:team-a/llama/latest", out, "--multi-thread-cutoff", "4M",
                        "--multi-thread-streams", "4", "--s3-list-chunk", "2", "-vv"});
  INFO(copy.out << copy.err.substr(0, 20000));
  REQUIRE(copy.exit_code == 0);
  CHECK(SameTree(c.ckpt, out));
  CHECK(SameTree(out, c.ckpt));
  CHECK(copy.err.find("multi-thread copy") != std::string::npos);

  ProcessResult lsf = c.Rclone(config, {"lsf", "-R", "--files-only", "shoal:team-a",
                                        "--s3-list-chunk", "2", "--dump", "headers"});
  INFO(lsf.out << lsf.err);
  REQUIRE(lsf.exit_code == 0);
  CHECK(Lines(lsf.out) == kKeys);
  // v1 pages: max-keys=2, each after the first from a marker.
  CHECK(lsf.err.find("max-keys=2") != std::string::npos);
  CHECK(lsf.err.find("marker=") != std::string::npos);
  CHECK(lsf.err.find("list-type=2") == std::string::npos);

  ProcessResult lsd = c.Rclone(config, {"lsd", "shoal:"});
  INFO(lsd.out << lsd.err);
  REQUIRE(lsd.exit_code == 0);
  CHECK(lsd.out.find(" team-a\n") != std::string::npos);
  CHECK(lsd.out.find("team-b") == std::string::npos);
}

TEST_CASE("ListObjects v1 pages by max-keys and marker through every key", "[agent][read][s3]") {
  ClientCluster c;
  for (const std::string delimiter : {"", "/"}) {
    INFO("delimiter '" << delimiter << "'");
    std::vector<std::string> seen;
    std::string marker;
    int pages = 0;
    for (; pages < 10; ++pages) {
      std::vector<std::pair<std::string, std::string>> query = {{"prefix", "llama/latest/"},
                                                                {"max-keys", "2"}};
      if (!delimiter.empty()) query.emplace_back("delimiter", delimiter);
      if (!marker.empty()) query.emplace_back("marker", marker);
      CurlAnswer a = c.Curl(c.Signed(c.reader, "/team-a", query));
      INFO(a.body);
      REQUIRE(a.status == 200);
      CHECK(Texts(a.body, "Marker") == std::vector<std::string>{marker});
      std::vector<std::string> keys = Texts(a.body, "Key");
      seen.insert(seen.end(), keys.begin(), keys.end());
      for (const std::string& p : Texts(a.body, "Prefix")) {
        if (p != "llama/latest/") seen.push_back(p);
      }
      if (Texts(a.body, "IsTruncated") != std::vector<std::string>{"true"}) break;
      // As v1 clients do: NextMarker when given, else the last key.
      std::vector<std::string> next = Texts(a.body, "NextMarker");
      CHECK(next.empty() == delimiter.empty());
      marker = next.empty() ? keys.back() : next.front();
    }
    std::sort(seen.begin(), seen.end());
    if (delimiter.empty()) {
      CHECK(pages == 2);  // 2 + 2 + 1 keys
      CHECK(std::set<std::string>(seen.begin(), seen.end()) == kKeys);
      CHECK(seen.size() == kKeys.size());
    } else {
      CHECK(seen == std::vector<std::string>{"llama/latest/config.json",
                                             "llama/latest/model-00001-of-00002.safetensors",
                                             "llama/latest/model-00002-of-00002.safetensors",
                                             "llama/latest/tokenizer/"});
    }
  }

  // boto3's v1 paginator (encoding-type=url, NextMarker or the last key).
  const std::string script = c.tmp / "v1.py";
  std::ofstream(script) << "import boto3\n"
                           "from botocore.config import Config\n"
                           "s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:"
                        << c.port() << "', region_name='us-east-1', aws_access_key_id='" << c.reader
                        << "', aws_secret_access_key='" << c.reader
                        << "', config=Config(s3={'addressing_style': 'path'}))\n"
                           "for d in ['', '/']:\n"
                           "    pages = s3.get_paginator('list_objects').paginate(\n"
                           "        Bucket='team-a', Prefix='llama/latest/', Delimiter=d,\n"
                           "        PaginationConfig={'PageSize': 2})\n"
                           "    for p in pages:\n"
                           "        for o in p.get('Contents', []): print(d, 'key', o['Key'])\n"
                           "        for o in p.get('CommonPrefixes', []): print(d, 'dir', "
                           "o['Prefix'])\n";
  ProcessResult boto = RunProcess({"/usr/bin/python3", script}, {"AWS_CONFIG_FILE=/dev/null"});
  INFO(boto.out << boto.err);
  REQUIRE(boto.exit_code == 0);
  std::set<std::string> flat, folded;
  for (const std::string& line : Lines(boto.out)) {
    if (line.rfind(" key ", 0) == 0) flat.insert(line.substr(5));
    if (line.rfind("/ ", 0) == 0) folded.insert(line.substr(2));
  }
  CHECK(flat == kKeys);
  CHECK(folded == std::set<std::string>{"key llama/latest/config.json",
                                        "key llama/latest/model-00001-of-00002.safetensors",
                                        "key llama/latest/model-00002-of-00002.safetensors",
                                        "dir llama/latest/tokenizer/"});

  CurlAnswer bad = c.Curl(c.Signed(c.reader, "/team-a", {{"max-keys", "two"}}));
  CHECK(bad.status == 400);
  CHECK(Texts(bad.body, "Code") == std::vector<std::string>{"InvalidArgument"});
  CHECK(bad.body.find("max-keys") != std::string::npos);
}

TEST_CASE("buckets: location, head and list follow what the token may read", "[agent][read][s3]") {
  ClientCluster c;
  CurlAnswer location = c.Curl(c.Signed(c.reader, "/team-a", {{"location", ""}}));
  CHECK(location.status == 200);
  CHECK(location.body.find("<LocationConstraint") != std::string::npos);
  CHECK(Texts(location.body, "LocationConstraint").empty());  // empty: us-east-1

  CurlAnswer denied = c.Curl(c.Signed(c.reader, "/team-b", {{"location", ""}}));
  CHECK(denied.status == 403);
  CHECK(Texts(denied.body, "Code") == std::vector<std::string>{"AccessDenied"});
  CHECK(denied.body.find("may not read namespace &apos;team-b&apos;") != std::string::npos);

  CHECK(c.Curl(c.Signed(c.reader, "/team-a", {}, "", "HEAD")).status == 200);
  CHECK(c.Curl(c.Signed(c.reader, "/team-b", {}, "", "HEAD")).status == 403);
  CHECK(c.Curl(c.Signed(c.reader, "/Not_A_Namespace", {}, "", "HEAD")).status == 404);

  CurlAnswer mine = c.Curl(c.Signed(c.other_reader, "/"));
  CHECK(mine.status == 200);
  CHECK(Texts(mine.body, "Name") == std::vector<std::string>{"team-b"});
  // An every-namespace token sees the namespaces that hold models.
  CurlAnswer all = c.Curl(c.Signed(c.agent_token, "/"));
  CHECK(all.status == 200);
  CHECK(Texts(all.body, "Name") == std::vector<std::string>{"team-a"});
  CHECK(Texts(all.body, "CreationDate") == std::vector<std::string>{"1970-01-01T00:00:00.000Z"});
}

TEST_CASE("GetObject honours response-* overrides and conditional headers", "[agent][read][s3]") {
  ClientCluster c;
  const std::string key = "/team-a/llama/latest/config.json";
  CurlAnswer plain = c.Curl(c.Signed(c.reader, key));
  REQUIRE(plain.status == 200);
  const std::string etag = plain.headers["etag"];
  const std::string modified = plain.headers["last-modified"];
  REQUIRE(!etag.empty());
  REQUIRE(!modified.empty());

  CurlAnswer over =
      c.Curl(c.Signed(c.reader, key,
                      {{"response-content-type", "application/json"},
                       {"response-content-disposition", "attachment; filename=c.json"},
                       {"response-cache-control", "no-store"},
                       {"response-content-language", "en"},
                       {"response-expires", "Thu, 01 Dec 1994 16:00:00 GMT"}}));
  CHECK(over.status == 200);
  CHECK(over.headers["content-type"] == "application/json");
  CHECK(over.headers["content-disposition"] == "attachment; filename=c.json");
  CHECK(over.headers["cache-control"] == "no-store");
  CHECK(over.headers["content-language"] == "en");
  CHECK(over.headers["expires"] == "Thu, 01 Dec 1994 16:00:00 GMT");
  CHECK(over.body == Slurp(c.ckpt + "/config.json"));

  auto with = [&](const std::string& header) {
    std::vector<std::string> args = c.Signed(c.reader, key);
    args.insert(args.begin(), {"-H", header});
    return c.Curl(args);
  };
  CHECK(with("If-None-Match: " + etag).status == 304);
  CHECK(with("If-Modified-Since: " + modified).status == 304);
  CHECK(with("If-Match: " + etag).status == 200);
  CurlAnswer failed = with("If-Match: \"0000\"");
  CHECK(failed.status == 412);
  CHECK(Texts(failed.body, "Code") == std::vector<std::string>{"PreconditionFailed"});
  CHECK(with("If-Unmodified-Since: Sun, 06 Nov 1994 08:49:37 GMT").status == 412);
  CHECK(with("If-Unmodified-Since: " + modified).status == 200);
  // The plain API shares them.
  CurlAnswer plain_api = c.Curl({"-H", "Authorization: Bearer " + c.reader, "-H",
                                 "If-Match: \"0000\"", c.FileUrl(0, "llama", "config.json")});
  CHECK(plain_api.status == 412);
}
