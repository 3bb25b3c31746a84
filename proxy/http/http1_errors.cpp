#include "proxy/http/http1_errors.h"

namespace proxy {

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

}  // namespace proxy
