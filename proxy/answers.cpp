#include "proxy/answers.h"

#include "proxy/header_filter.h"

namespace proxy {

std::string formatAnswer(const HttpAnswer& answer, bool keep_alive) {
  HeaderList headers = {{"Cache-Control", "no-cache, private"}, {"Content-Type", answer.content_type}};
  if (answer.retry_after_seconds > 0) headers.emplace_back("Retry-After", std::to_string(answer.retry_after_seconds));
  return formatResponseHead(answer.code, "", headers, BodyFraming::ContentLength, answer.body.size(), keep_alive) +
         answer.body;
}

const std::string& badRequestAnswer() {
  static const std::string answer =
      "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request";
  return answer;
}

const std::string& headerTooLargeAnswer() {
  static const std::string answer =
      "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: "
      "close\r\n\r\n431 Request Header Fields Too Large";
  return answer;
}

std::string tooManyRequestsAnswer(bool keep_alive) {
  const std::string body = "Too many requests, please try again later.\n";
  HeaderList headers = {{"Cache-Control", "no-cache, private"},
                        {"Content-Type", "text/plain; charset=utf-8"},
                        {"Retry-After", "1"},
                        {"X-Content-Type-Options", "nosniff"}};
  return formatResponseHead(429, "", headers, BodyFraming::ContentLength, body.size(), keep_alive) + body;
}

Status tooManyRequestsStatus() {
  Status status;
  status.reason = Reason::TooManyRequests;
  status.message = "Too many requests, please try again later.";
  status.retry_after_seconds = 1;
  return status;
}

std::string filterRefusalAnswer(bool keep_alive, bool head_only) {
  const std::string body = "Forbidden\n";
  HeaderList headers = {{"Content-Type", "text/plain; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}};
  std::string out = formatResponseHead(403, "", headers, BodyFraming::ContentLength, body.size(), keep_alive);
  if (!head_only) out += body;
  return out;
}

std::string plainAnswer(unsigned code, const std::string& content_type, const std::string& body, bool keep_alive,
                        bool head_only) {
  HeaderList headers = {{"Cache-Control", "no-cache, private"},
                        {"Content-Type", content_type},
                        {"X-Content-Type-Options", "nosniff"}};
  std::string out = formatResponseHead(code, "", headers, BodyFraming::ContentLength, body.size(), keep_alive);
  if (!head_only) out += body;
  return out;
}

}  // namespace proxy
