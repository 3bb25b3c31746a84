#include "proxy/socket_io.h"

#include <cerrno>

#include <boost/system/system_error.hpp>
#include <sys/socket.h>

namespace proxy {

size_t sendNow(int fd, const char* data, size_t n) {
  size_t sent = 0;
  while (sent < n) {
    const ssize_t r = ::send(fd, data + sent, n - sent, MSG_NOSIGNAL);
    if (r > 0) {
      sent += static_cast<size_t>(r);
    } else if (r < 0 && errno == EINTR) {
      continue;
    } else if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      throw boost::system::system_error(boost::system::error_code(errno, boost::system::system_category()));
    } else {
      break;  // the send buffer is full
    }
  }
  return sent;
}

std::optional<long> receiveNow(int fd, char* data, size_t max) {
  ssize_t r;
  do {
    r = ::recv(fd, data, max, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? std::nullopt : std::optional<long>(-1);
  return r;
}

}  // namespace proxy
