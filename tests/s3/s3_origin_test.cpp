// S3Origin against a real Ceph radosgw (started by the ctest fixture).
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "s3/s3_test_env.h"
#include "shoal/origin.h"
#include "shoal/sha256.h"

using namespace shoal;
using namespace shoal_test;

namespace {

std::string GetAll(Origin& o, const std::string& key, uint64_t off = 0,
                   uint64_t len = Origin::kToEnd) {
  StringSink sink;
  Status s = o.Get(key, off, len, sink);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return sink.str();
}

std::string Shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

}  // namespace

TEST_CASE("S3 put and get round-trip whole objects and ranges", "[s3]") {
  auto origin = OpenTestS3(TestOptions("roundtrip"));
  const std::string data = PatternBytes(3 << 20, 1);
  REQUIRE(origin->Put("obj", U8(data), data.size()).ok());
  CHECK(GetAll(*origin, "obj") == data);
  CHECK(GetAll(*origin, "obj", 0, 10) == data.substr(0, 10));
  CHECK(GetAll(*origin, "obj", 1000000, 123457) == data.substr(1000000, 123457));
  CHECK(GetAll(*origin, "obj", data.size() - 5) == data.substr(data.size() - 5));
  CHECK(GetAll(*origin, "obj", 5, 0).empty());

  StringSink sink;
  Status past = origin->Get("obj", data.size() - 5, 10, sink);
  CHECK(past.code() == Status::Code::kInvalidArgument);

  REQUIRE(origin->Put("empty", nullptr, 0).ok());
  CHECK(GetAll(*origin, "empty").empty());

  auto c = origin->counters();
  CHECK(c.put.requests == 2);
  CHECK(c.put.bytes == data.size());
  CHECK(c.get.bytes >= data.size() + 10 + 123457 + 5);
  CHECK(c.get.retries == 0);
}

TEST_CASE("S3 head reports size and a missing key is NotFound", "[s3]") {
  auto origin = OpenTestS3(TestOptions("head"));
  const std::string data = PatternBytes(12345, 2);
  REQUIRE(origin->Put("present", U8(data), data.size()).ok());
  auto head = origin->Head("present");
  REQUIRE(head.ok());
  CHECK(head->size == 12345);
  CHECK_FALSE(head->etag.empty());

  auto missing = origin->Head("absent");
  CHECK(missing.status().IsNotFound());
  StringSink sink;
  Status get = origin->Get("absent", 0, 10, sink);
  CHECK(get.IsNotFound());
  CHECK(get.message().find("s3://") != std::string::npos);
  CHECK(sink.str().empty());
  CHECK(origin->counters().get.retries == 0);

  REQUIRE(origin->Delete("present").ok());
  CHECK(origin->Head("present").status().IsNotFound());
  CHECK(origin->Delete("present").ok());  // deleting twice is fine
}

TEST_CASE("S3 list pages through a prefix with continuation tokens", "[s3]") {
  auto origin = OpenTestS3(TestOptions("list"));
  std::set<std::string> want;
  for (int i = 0; i < 7; ++i) {
    std::string key = "chunks/k" + std::to_string(i);
    REQUIRE(origin->Put(key, U8(key), key.size()).ok());
    want.insert(key);
  }
  REQUIRE(origin->Put("elsewhere", U8(std::string("x")), 1).ok());

  std::set<std::string> got;
  std::string token;
  int pages = 0;
  do {
    auto page = origin->List("chunks/", token, 3);
    INFO(page.status().ToString());
    REQUIRE(page.ok());
    CHECK(page->objects.size() <= 3);
    for (const auto& o : page->objects) {
      got.insert(o.key);
      CHECK(o.size == o.key.size());
    }
    token = page->next_token;
    REQUIRE(++pages < 10);
  } while (!token.empty());
  CHECK(pages == 3);
  CHECK(got == want);
}

TEST_CASE("S3 keys with spaces, plus signs and non-ASCII survive every call", "[s3]") {
  auto origin = OpenTestS3(TestOptions("awkward keys"));
  const std::vector<std::string> keys = {"a b/c+d",           "caf\xC3\xA9/\xE2\x82\xAC uro",
                                         "x=y&z;w,v",         "tilde~star*(paren)'",
                                         "percent%20literal", "q?mark#hash",
                                         "colon:at@dollar$",  "sp  two"};
  for (const auto& key : keys) {
    INFO(key);
    const std::string data = "value of " + key;
    Status put = origin->Put(key, U8(data), data.size());
    INFO(put.ToString());
    REQUIRE(put.ok());
    CHECK(GetAll(*origin, key) == data);
    auto head = origin->Head(key);
    REQUIRE(head.ok());
    CHECK(head->size == data.size());
  }
  auto page = origin->List("", "", 1000);
  REQUIRE(page.ok());
  std::set<std::string> listed;
  for (const auto& o : page->objects) listed.insert(o.key);
  CHECK(listed == std::set<std::string>(keys.begin(), keys.end()));
}

TEST_CASE("S3 multipart upload of 41 MiB streams in parallel parts", "[s3][multipart]") {
  OriginOptions opts = TestOptions("multipart");
  opts.multipart_threshold = 8 << 20;
  opts.part_size = 8 << 20;
  opts.upload_parallelism = 4;
  auto origin = OpenTestS3(opts);
  const std::string data = PatternBytes((41 << 20) + 12345, 3);
  const std::string path = "/tmp/shoal-s3-multipart-" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary) << data;
  Status s = PutFile(*origin, "big.bin", path);
  std::remove(path.c_str());
  INFO(s.ToString());
  REQUIRE(s.ok());
  // 1 initiate + 6 parts + 1 complete.
  CHECK(origin->counters().put.requests == 8);
  auto head = origin->Head("big.bin");
  REQUIRE(head.ok());
  CHECK(head->size == data.size());
  CHECK(head->etag.find("-6") != std::string::npos);  // a multipart ETag names its part count
  const std::string back = GetAll(*origin, "big.bin");
  CHECK(back.size() == data.size());
  CHECK(Sha256::Of(back.data(), back.size()) == Sha256::Of(data.data(), data.size()));
}

TEST_CASE("S3 streams a file below the multipart threshold in one PUT", "[s3][multipart]") {
  OriginOptions opts = TestOptions("small-stream");
  opts.multipart_threshold = 8 << 20;
  opts.part_size = 8 << 20;
  auto origin = OpenTestS3(opts);
  const std::string data = PatternBytes((3 << 20) + 7, 8);  // crosses the 1 MiB read-ahead steps
  const std::string path = "/tmp/shoal-s3-small-" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary) << data;
  Status s = PutFile(*origin, "small.bin", path);
  std::remove(path.c_str());
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(origin->counters().put.requests == 1);
  CHECK(GetAll(*origin, "small.bin") == data);
}

TEST_CASE("S3 multipart upload is aborted when the source fails", "[s3][multipart]") {
  OriginOptions opts = TestOptions("multipart-abort");
  opts.multipart_threshold = 5 << 20;
  opts.part_size = 5 << 20;
  auto origin = OpenTestS3(opts);
  class FailingSource : public ByteSource {
   public:
    Result<size_t> Read(uint8_t* buf, size_t cap) override {
      if (served_ >= (12 << 20)) return Status::IOError("disk went away");
      size_t n = std::min<size_t>(cap, 1 << 20);
      std::memset(buf, 'f', n);
      served_ += n;
      return n;
    }
    size_t served_ = 0;
  } source;
  Status s = origin->PutStream("never", source);
  CHECK(s.code() == Status::Code::kIOError);
  CHECK(s.message().find("disk went away") != std::string::npos);
  CHECK(origin->Head("never").status().IsNotFound());
  CHECK(origin->counters().del.requests == 1);  // the abort
  // And radosgw agrees that no upload is left in progress.
  const S3Env& env = TestS3();
  const std::string uploads =
      Shell("AWS_ACCESS_KEY_ID=" + env["SHOAL_S3_ACCESS_KEY"] + " AWS_SECRET_ACCESS_KEY=" +
            env["SHOAL_S3_SECRET_KEY"] + " AWS_DEFAULT_REGION=" + env["SHOAL_S3_REGION"] +
            " NO_PROXY='*' /usr/bin/aws --endpoint-url " + env["SHOAL_S3_ENDPOINT"] +
            " s3api list-multipart-uploads --bucket " + env["SHOAL_S3_BUCKET"] +
            " --prefix multipart-abort/ --query 'length(Uploads || `[]`)' --output text 2>&1");
  CHECK(uploads == "0\n");
}

TEST_CASE("S3 presigned GET URL works with curl, and a tampered one is refused", "[s3]") {
  auto origin = OpenTestS3(TestOptions("presign"));
  const std::string data = PatternBytes(70000, 4);
  REQUIRE(origin->Put("shared file+1", U8(data), data.size()).ok());
  auto url = origin->PresignGet("shared file+1", 600);
  REQUIRE(url.ok());
  CHECK(url->find("X-Amz-Signature=") != std::string::npos);
  CHECK(Shell("curl -sS --noproxy '*' --max-time 20 '" + *url + "'") == data);

  std::string tampered = *url;
  tampered[tampered.size() - 1] = tampered.back() == '0' ? '1' : '0';
  CHECK(Shell("curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --max-time 20 '" + tampered +
              "'") == "403");
}

TEST_CASE("S3 with a wrong secret fails at once with a clear error", "[s3]") {
  OriginOptions opts = TestOptions("wrong-secret");
  opts.secret_key = "definitely-not-the-secret";
  auto origin = OpenTestS3(opts);
  const auto start = std::chrono::steady_clock::now();
  StringSink sink;
  Status s = origin->Get("anything", 0, 10, sink);
  Status p = origin->Put("anything", U8(std::string("x")), 1);
  const std::string big = PatternBytes(20 << 20, 9);  // refused before its body is read?
  Status big_put = origin->Put("anything", U8(big), big.size());
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(s.code() == Status::Code::kPermissionDenied);
  CHECK(s.message().find("SignatureDoesNotMatch") != std::string::npos);
  CHECK(s.message().find('\n') == std::string::npos);
  CHECK(p.code() == Status::Code::kPermissionDenied);
  INFO(big_put.ToString());
  CHECK(big_put.code() == Status::Code::kPermissionDenied);
  CHECK(origin->counters().get.requests == 1);
  CHECK(origin->counters().put.requests == 2);
  CHECK(took < std::chrono::seconds(3));
}

TEST_CASE("S3 with an unknown access key or bucket says so without retrying", "[s3]") {
  OriginOptions opts = TestOptions("x");
  opts.access_key = "NOSUCHACCESSKEY";
  auto bad_key = OpenTestS3(opts);
  Status s = bad_key->Put("k", U8(std::string("x")), 1);
  CHECK(s.code() == Status::Code::kPermissionDenied);
  CHECK(s.message().find("InvalidAccessKeyId") != std::string::npos);
  CHECK(bad_key->counters().put.requests == 1);

  opts = TestOptions("x");
  opts.url = "s3://no-such-bucket-here/x";
  auto no_bucket = OpenTestS3(opts);
  StringSink sink;
  s = no_bucket->Get("k", 0, 1, sink);
  CHECK(s.IsNotFound());
  CHECK(s.message().find("bucket 'no-such-bucket-here' does not exist") != std::string::npos);
  auto list = no_bucket->List("", "", 10);
  CHECK(list.status().IsNotFound());
  CHECK(no_bucket->counters().get.requests == 1);
}

TEST_CASE("S3 over HTTPS verifies the certificate against the CA file", "[s3][tls]") {
  const S3Env& env = TestS3();
  OriginOptions opts = TestOptions("tls");
  opts.endpoint = env["SHOAL_S3_TLS_ENDPOINT"];
  opts.ca_file = env["SHOAL_S3_CA_FILE"];
  auto trusted = OpenTestS3(opts);
  const std::string data = PatternBytes(1 << 20, 5);
  Status s = trusted->Put("secure", U8(data), data.size());
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(GetAll(*trusted, "secure", 100, 1000) == data.substr(100, 1000));

  opts.ca_file.clear();  // the system store does not know the test's self-signed CA
  auto untrusted = OpenTestS3(opts);
  StringSink sink;
  s = untrusted->Get("secure", 0, 10, sink);
  CHECK(s.code() == Status::Code::kPermissionDenied);
  CHECK(s.message().find("certificate") != std::string::npos);
  CHECK(untrusted->counters().get.requests == 1);

  opts.verify_tls = false;
  auto unverified = OpenTestS3(opts);
  CHECK(GetAll(*unverified, "secure", 0, 10) == data.substr(0, 10));
}

TEST_CASE("S3 credentials and region come from the AWS environment variables", "[s3]") {
  const S3Env& env = TestS3();
  ::setenv("AWS_ACCESS_KEY_ID", env["SHOAL_S3_ACCESS_KEY"].c_str(), 1);
  ::setenv("AWS_SECRET_ACCESS_KEY", env["SHOAL_S3_SECRET_KEY"].c_str(), 1);
  ::setenv("AWS_REGION", env["SHOAL_S3_REGION"].c_str(), 1);
  OriginOptions opts = TestOptions("env");
  opts.access_key.clear();
  opts.secret_key.clear();
  opts.region.clear();
  auto origin = OpenOrigin(opts);
  ::unsetenv("AWS_ACCESS_KEY_ID");
  ::unsetenv("AWS_SECRET_ACCESS_KEY");
  ::unsetenv("AWS_REGION");
  REQUIRE(origin.ok());
  CHECK((*origin)->Put("from-env", U8(std::string("e")), 1).ok());
}

TEST_CASE("S3 serves many ranged GETs in flight from many threads", "[s3]") {
  auto origin = OpenTestS3(TestOptions("parallel"));
  const std::string data = PatternBytes(8 << 20, 6);
  REQUIRE(origin->Put("shared", U8(data), data.size()).ok());
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        uint64_t off = (static_cast<uint64_t>(t) * 8 + i) * 65536;
        StringSink sink;
        Status s = origin->Get("shared", off, 65536, sink);
        if (!s.ok() || sink.str() != data.substr(off, 65536)) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(bad == 0);
  CHECK(origin->counters().get.requests == 128);
}

TEST_CASE("S3 chunks are uploaded once under chunks/<hex>", "[s3]") {
  auto origin = OpenTestS3(TestOptions("dedup"));
  const std::string data = PatternBytes(100000, 7);
  ChunkId id = ChunkId::From(Sha256::Of(data.data(), data.size()));
  bool uploaded = false;
  REQUIRE(PutChunkIfAbsent(*origin, id, U8(data), data.size(), &uploaded).ok());
  CHECK(uploaded);
  REQUIRE(PutChunkIfAbsent(*origin, id, U8(data), data.size(), &uploaded).ok());
  CHECK_FALSE(uploaded);
  CHECK(origin->counters().put.requests == 1);
  CHECK(GetAll(*origin, ChunkKey(id)) == data);
}
