#include "proxy/answers.h"

namespace proxy {

io::ResponseHead statusHead(const HttpAnswer& answer, HeaderList extra) {
  io::ResponseHead head;
  head.status = answer.code;
  head.headers = {{"Cache-Control", "no-cache, private"}, {"Content-Type", answer.content_type}};
  if (answer.retry_after_seconds > 0) head.headers.emplace_back("Retry-After", std::to_string(answer.retry_after_seconds));
  for (auto& field : extra) head.headers.push_back(std::move(field));
  return head;
}

Status tooManyRequestsStatus() {
  Status status;
  status.reason = Reason::TooManyRequests;
  status.message = "Too many requests, please try again later.";
  status.retry_after_seconds = 1;
  return status;
}

}  // namespace proxy

namespace proxy::io {

asio::awaitable<unsigned> writeAnswer(ServerStream& out, const Request&, const HttpAnswer& answer, HeaderList extra) {
  co_await out.writeWhole(statusHead(answer, std::move(extra)), answer.body);
  co_return answer.code;
}

asio::awaitable<unsigned> writeStatus(ServerStream& out, const Request& req, const Status& status, HeaderList extra) {
  const HttpAnswer answer = toHttpAnswer(status, statusEncodingFor(req.accept));
  co_return co_await writeAnswer(out, req, answer, std::move(extra));
}

asio::awaitable<unsigned> writePlainText(ServerStream& out, const Request& req, unsigned code,
                                         std::string_view content_type, std::string_view body) {
  ResponseHead head;
  head.status = code;
  head.headers = {{"Cache-Control", "no-cache, private"},
                  {"Content-Type", std::string(content_type)},
                  {"X-Content-Type-Options", "nosniff"}};
  head.body = !req.isHead();
  co_await out.writeWhole(std::move(head), body);
  co_return code;
}

asio::awaitable<unsigned> writeTooManyRequests(ServerStream& out, const Request&) {
  ResponseHead head;
  head.status = 429;
  head.headers = {{"Cache-Control", "no-cache, private"},
                  {"Content-Type", "text/plain; charset=utf-8"},
                  {"Retry-After", "1"},
                  {"X-Content-Type-Options", "nosniff"}};
  co_await out.writeWhole(std::move(head), "Too many requests, please try again later.\n");
  co_return 429;
}

asio::awaitable<unsigned> writeFilterRefusal(ServerStream& out, const Request& req) {
  ResponseHead head;
  head.status = 403;
  head.headers = {{"Content-Type", "text/plain; charset=utf-8"}, {"X-Content-Type-Options", "nosniff"}};
  head.body = !req.isHead();
  co_await out.writeWhole(std::move(head), "Forbidden\n");
  co_return 403;
}

}  // namespace proxy::io
