#include "origin/s3_multipart.h"

#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "origin/xml_reader.h"

namespace shoal {
namespace {

constexpr uint32_t kMaxParts = 10000;

struct Part {
  uint32_t number = 0;  // 1-based
  std::vector<uint8_t> bytes;
};

// The parts waiting for an uploader, bounded so memory stays at about
// (parallelism * 2) parts; and the first error, which stops everyone.
class PartQueue {
 public:
  explicit PartQueue(size_t cap) : cap_(cap) {}

  // False if the upload has failed and the part was not queued.
  bool Push(Part part) {
    std::unique_lock<std::mutex> lock(mu_);
    not_full_.wait(lock, [&] { return parts_.size() < cap_ || !failure_.ok(); });
    if (!failure_.ok()) return false;
    parts_.push_back(std::move(part));
    not_empty_.notify_one();
    return true;
  }
  // False once closed and drained, or after a failure.
  bool Pop(Part* part) {
    std::unique_lock<std::mutex> lock(mu_);
    not_empty_.wait(lock, [&] { return !parts_.empty() || closed_ || !failure_.ok(); });
    if (!failure_.ok() || parts_.empty()) return false;
    *part = std::move(parts_.front());
    parts_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }
  void Fail(const Status& s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (failure_.ok()) failure_ = s;
    not_empty_.notify_all();
    not_full_.notify_all();
  }
  Status failure() {
    std::lock_guard<std::mutex> lock(mu_);
    return failure_;
  }

 private:
  const size_t cap_;
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<Part> parts_;  // protected by mu_
  bool closed_ = false;     // protected by mu_
  Status failure_;          // protected by mu_
};

Result<std::string> Initiate(S3Client& client, const std::string& key) {
  S3Call call;
  call.op = OriginOp::kPut;
  call.method = "POST";
  call.key = key;
  call.query = {{"uploads", ""}};
  call.idempotent = false;
  OriginHttpResponse resp;
  SHOAL_RETURN_IF_ERROR(client.Execute(call, &resp));
  Result<XmlElement> doc = ParseXml(resp.body);
  if (!doc.ok()) return doc.status().WithContext("CreateMultipartUpload " + client.Describe(key));
  std::string id = doc->ChildText("UploadId");
  if (doc->name != "InitiateMultipartUploadResult" || id.empty()) {
    return Status::Corruption("CreateMultipartUpload " + client.Describe(key) +
                              ": the reply carries no UploadId");
  }
  return id;
}

Status UploadPart(S3Client& client, const std::string& key, const std::string& upload_id,
                  const Part& part, std::string* etag) {
  S3Call call;
  call.op = OriginOp::kPut;
  call.method = "PUT";
  call.key = key;
  call.query = {{"partNumber", std::to_string(part.number)}, {"uploadId", upload_id}};
  call.body = part.bytes.data();
  call.body_len = part.bytes.size();
  OriginHttpResponse resp;
  SHOAL_RETURN_IF_ERROR(client.Execute(call, &resp));
  *etag = resp.Header("etag");
  if (etag->empty()) {
    return Status::Corruption("UploadPart " + std::to_string(part.number) + " of " +
                              client.Describe(key) + ": the reply carries no ETag");
  }
  return Status::OK();
}

Status Complete(S3Client& client, const std::string& key, const std::string& upload_id,
                const std::vector<std::string>& etags) {
  const std::string body = CompleteMultipartXml(etags);
  S3Call call;
  call.op = OriginOp::kPut;
  call.method = "POST";
  call.key = key;
  call.query = {{"uploadId", upload_id}};
  call.headers.Add("content-type", "application/xml");
  call.body = reinterpret_cast<const uint8_t*>(body.data());
  call.body_len = body.size();
  call.idempotent = false;
  OriginHttpResponse resp;
  SHOAL_RETURN_IF_ERROR(client.Execute(call, &resp));
  // S3 may answer 200 and still put an <Error> in the body.
  Result<XmlElement> doc = ParseXml(resp.body);
  if (doc.ok() && doc->name == "Error") {
    return Status::IOError("CompleteMultipartUpload " + client.Describe(key) + ": " +
                           doc->ChildText("Code") + " (" + doc->ChildText("Message") + ")");
  }
  return Status::OK();
}

void Abort(S3Client& client, const std::string& key, const std::string& upload_id) {
  S3Call call;
  call.op = OriginOp::kDelete;
  call.method = "DELETE";
  call.key = key;
  call.query = {{"uploadId", upload_id}};
  OriginHttpResponse resp;
  (void)client.Execute(call, &resp);  // best effort: the caller reports the first failure
}

}  // namespace

std::string CompleteMultipartXml(const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    std::string etag;
    for (char c : etags[i]) {
      if (c == '&')
        etag += "&amp;";
      else if (c == '<')
        etag += "&lt;";
      else if (c == '"')
        etag += "&quot;";
      else
        etag += c;
    }
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etag +
           "</ETag></Part>";
  }
  return xml + "</CompleteMultipartUpload>";
}

Status UploadMultipart(S3Client& client, const std::string& key, std::vector<uint8_t> head,
                       ByteSource& source, const MultipartPlan& plan) {
  Result<std::string> upload_id = Initiate(client, key);
  if (!upload_id.ok()) return upload_id.status();

  PartQueue queue(plan.parallelism);
  std::mutex etags_mu;
  std::vector<std::string> etags;  // protected by etags_mu; index = part number - 1
  std::vector<std::thread> workers;
  for (uint32_t i = 0; i < plan.parallelism; ++i) {
    workers.emplace_back([&] {
      Part part;
      while (queue.Pop(&part)) {
        std::string etag;
        Status s = UploadPart(client, key, *upload_id, part, &etag);
        if (!s.ok()) {
          queue.Fail(s);
          return;
        }
        std::lock_guard<std::mutex> lock(etags_mu);
        if (etags.size() < part.number) etags.resize(part.number);
        etags[part.number - 1] = std::move(etag);
      }
    });
  }

  // Cut parts: first from the bytes already read, then from the source.
  size_t head_pos = 0;
  Status produce;
  for (uint32_t number = 1;; ++number) {
    if (number > kMaxParts) {
      produce = Status::InvalidArgument("PutStream " + client.Describe(key) +
                                        ": more than 10,000 parts; raise part_size");
      break;
    }
    const uint64_t size = plan.part_size * (1 + (number - 1) / 1000);
    Part part;
    part.number = number;
    part.bytes.resize(size);
    size_t filled = std::min<size_t>(size, head.size() - head_pos);
    if (filled > 0) {
      std::memcpy(part.bytes.data(), head.data() + head_pos, filled);
      head_pos += filled;
      if (head_pos == head.size()) {  // release the read-ahead as soon as it is cut up
        head.clear();
        head.shrink_to_fit();
        head_pos = 0;
      }
    }
    if (filled < size) {
      Result<size_t> n = ReadFull(source, part.bytes.data() + filled, size - filled);
      if (!n.ok()) {
        produce = n.status().WithContext("PutStream " + client.Describe(key));
        break;
      }
      filled += *n;
    }
    if (filled == 0 && number > 1) break;
    part.bytes.resize(filled);
    const bool last = filled < size;
    if (!queue.Push(std::move(part))) break;
    if (last) break;
  }
  if (!produce.ok()) queue.Fail(produce);
  queue.Close();
  for (auto& t : workers) t.join();

  Status result = queue.failure();
  if (result.ok()) result = Complete(client, key, *upload_id, etags);
  if (!result.ok()) Abort(client, key, *upload_id);
  return result;
}

}  // namespace shoal
