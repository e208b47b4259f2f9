#include "shoal/http/http_types.h"

#include <cstdlib>

namespace shoal {

std::string HttpEndpoint::HostHeader() const {
  bool default_port = (tls && port == 443) || (!tls && port == 80);
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return default_port ? h : h + ":" + std::to_string(port);
}

std::string HttpEndpoint::ToString() const {
  return std::string(tls ? "https://" : "http://") + HostHeader();
}

Result<HttpEndpoint> ParseHttpEndpoint(const std::string& url) {
  HttpEndpoint ep;
  std::string rest;
  if (url.rfind("https://", 0) == 0) {
    ep.tls = true;
    rest = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else {
    return Status::InvalidArgument("endpoint '" + url + "' must start with http:// or https://");
  }
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.empty() || rest.find('/') != std::string::npos) {
    return Status::InvalidArgument("endpoint '" + url + "' must be scheme://host[:port]");
  }
  std::string port;
  if (rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string::npos)
      return Status::InvalidArgument("endpoint '" + url + "': bad IPv6");
    ep.host = rest.substr(1, close - 1);
    if (close + 1 < rest.size()) {
      if (rest[close + 1] != ':')
        return Status::InvalidArgument("endpoint '" + url + "': bad port");
      port = rest.substr(close + 2);
    }
  } else {
    size_t colon = rest.find(':');
    ep.host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (port.empty()) {
    ep.port = ep.tls ? 443 : 80;
  } else {
    char* end = nullptr;
    long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535) {
      return Status::InvalidArgument("endpoint '" + url + "': bad port '" + port + "'");
    }
    ep.port = static_cast<uint16_t>(p);
  }
  if (ep.host.empty()) return Status::InvalidArgument("endpoint '" + url + "' has no host");
  return ep;
}

std::string OriginHttpResponse::Header(const std::string& name) const {
  return headers.Get(name).value_or("");
}

}  // namespace shoal
