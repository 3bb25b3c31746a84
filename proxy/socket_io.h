#pragma once
// Non-blocking calls on a plain TCP socket for the paths that skip the event loop: an
// answer that fits the socket's send buffer, a request that has already arrived. No
// Asio here; DownstreamStream wraps them.

#include <cstddef>
#include <optional>

namespace proxy {

// Sends what the kernel takes now from `data` (a non-blocking socket): the bytes sent,
// fewer than `n` when the send buffer is full. Throws boost::system::system_error when
// the client is gone.
size_t sendNow(int fd, const char* data, size_t n);

// Reads what has arrived, up to `max` bytes, without waiting: nullopt when nothing has,
// else the bytes read, 0 when the client closed its side, -1 on an error.
std::optional<long> receiveNow(int fd, char* data, size_t max);

}  // namespace proxy
