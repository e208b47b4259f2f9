#include "shoal/server/http_message.h"

#include <strings.h>
#include <unistd.h>

#include "shoal/log.h"

namespace shoal {

std::optional<std::string> HttpRequest::BearerToken() const {
  std::optional<std::string> auth = headers.Get("Authorization");
  if (!auth || auth->size() <= 7 || strncasecmp(auth->c_str(), "Bearer ", 7) != 0) {
    return std::nullopt;
  }
  size_t start = auth->find_first_not_of(' ', 7);
  if (start == std::string::npos) return std::nullopt;
  return auth->substr(start);
}

HttpFileBody::~HttpFileBody() {
  if (owner_ == nullptr && fd_ >= 0) ::close(fd_);
}

HttpResponse HttpResponse::Text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Set("Content-Type", "text/plain; charset=utf-8");
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.headers.Set("Content-Type", "application/json");
  r.body = std::move(body);
  return r;
}

HttpResponse HttpResponse::Error(int status, std::string_view message) {
  std::string body = "{\"error\":";
  AppendJsonString(message, &body);
  body += "}\n";
  return Json(status, std::move(body));
}

HttpResponse HttpResponse::FromStatus(const Status& status) {
  HttpResponse r = Error(HttpStatusFor(status.code()), status.ToString());
  // RFC 7235: a 401 names the scheme that would be accepted.
  if (r.status == 401) r.headers.Set("WWW-Authenticate", "Bearer realm=\"shoal\"");
  return r;
}

int HttpStatusFor(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return 200;
    case Status::Code::kNotFound:
      return 404;
    case Status::Code::kInvalidArgument:
      return 400;
    case Status::Code::kUnauthenticated:
      return 401;
    case Status::Code::kPermissionDenied:
      return 403;
    case Status::Code::kAlreadyExists:
    case Status::Code::kFailedPrecondition:
      return 409;
    case Status::Code::kUnavailable:
      return 503;
    case Status::Code::kNoSpace:
      return 507;
    case Status::Code::kCorruption:
    case Status::Code::kIOError:
      return 500;
  }
  return 500;
}

const char* HttpReason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 304:
      return "Not Modified";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 409:
      return "Conflict";
    case 413:
      return "Payload Too Large";
    case 416:
      return "Range Not Satisfiable";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    case 507:
      return "Insufficient Storage";
  }
  return "";
}

}  // namespace shoal
