// A blocking HTTP GET for tests of the leader's HTTP endpoint (cpp-httplib's client, with the
// build flags of Debian's libcpp-httplib).
#pragma once

#include <csignal>
#include <string>
#include <utility>
#include <vector>

#include "muster/net/observe/httplib.h"

namespace muster::testing {

// A client writing to a server that closed the connection (a TLS server refusing a plain or
// uncertified client) gets SIGPIPE, which would end the test process.
inline void IgnoreSigpipe() { std::signal(SIGPIPE, SIG_IGN); }

struct HttpReply {
  int status = 0;  // 0: no answer (the error is in body)
  std::string body;
  std::string content_type;
};

// GETs `path` from `url` ("http://HOST:PORT"), with `headers`, within 10 s.
inline HttpReply HttpGet(const std::string& url, const std::string& path,
                         std::vector<std::pair<std::string, std::string>> headers = {}) {
  IgnoreSigpipe();
  httplib::Client client(url);
  client.set_connection_timeout(std::chrono::seconds(10));
  client.set_read_timeout(std::chrono::seconds(10));
  httplib::Headers sent;
  for (auto& [name, value] : headers) sent.emplace(std::move(name), std::move(value));
  auto result = client.Get(path, sent);
  if (!result) return {0, httplib::to_string(result.error()), ""};
  return {result->status, result->body, result->get_header_value("Content-Type")};
}

}  // namespace muster::testing
