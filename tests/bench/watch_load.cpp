// watch-load: holds thousands of WATCH streams on a few epoll threads and measures each
// event's delivery latency, so that the load client is not what a watch benchmark
// measures (bench_watch_scale.py drives it).
//
//   watch-load --port P --path PATH --watchers N [--stalled M] [--threads T] [--host 127.0.0.1]
//
// --threads (default 1): each thread reads every T-th stream on its own epoll, so the
// client can use as many cores as the server it measures.
//
// PATH may contain "{i}", replaced by the watcher's number modulo --distinct (default N),
// e.g. "...&fieldSelector=spec.nodeName%3Dnode-{i}". Stalled watchers send their request
// and never read (a small receive buffer set before connecting keeps their window small).
//
// Latency: an event whose object carries the annotation "kcp-bench/created" (nanoseconds
// since the epoch, CLOCK_REALTIME, written by the benchmark just before the create
// request) counts now - created. Prints "ready N" once every reading watcher has its
// response headers; on EOF of stdin prints one JSON line with the percentiles and exits.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace {

constexpr std::string_view kMarker = "\"kcp-bench/created\":\"";

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "watch-load: %s\n", why.c_str());
  std::exit(2);
}

int64_t nowNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// One watch stream: response headers, then HTTP/1.1 chunked framing, then lines.
struct Stream {
  enum class State { Connecting, Headers, ChunkSize, ChunkData, ChunkEnd, Done };
  int fd = -1;
  State state = State::Connecting;
  std::string request;
  size_t sent = 0;
  std::string pending;  // bytes not yet consumed by the framing
  std::string line;     // the current event line
  size_t chunk_left = 0;
  int status = 0;
  uint64_t events = 0;
};

struct Totals {
  std::vector<float> latencies_ms;
  uint64_t events = 0;
  uint64_t ended = 0;
  uint64_t bad_status = 0;
};

void onLine(Stream& s, Totals& totals) {
  ++s.events;
  ++totals.events;
  const size_t at = s.line.find(kMarker);
  if (at == std::string::npos) return;
  const int64_t created = std::strtoll(s.line.c_str() + at + kMarker.size(), nullptr, 10);
  totals.latencies_ms.push_back(static_cast<float>(nowNs() - created) / 1e6f);
}

// Consumes what it can of s.pending; false when the stream ended.
bool parse(Stream& s, Totals& totals, bool& headers_done) {
  size_t pos = 0;
  const std::string& p = s.pending;
  while (pos < p.size()) {
    if (s.state == Stream::State::Headers) {
      const size_t end = p.find("\r\n\r\n", pos);
      if (end == std::string::npos) break;
      s.status = std::atoi(p.c_str() + pos + 9);  // "HTTP/1.1 200"
      if (s.status != 200) ++totals.bad_status;
      pos = end + 4;
      s.state = Stream::State::ChunkSize;
      headers_done = true;
    } else if (s.state == Stream::State::ChunkSize) {
      const size_t end = p.find("\r\n", pos);
      if (end == std::string::npos) break;
      s.chunk_left = std::strtoul(p.c_str() + pos, nullptr, 16);
      pos = end + 2;
      if (s.chunk_left == 0) return false;
      s.state = Stream::State::ChunkData;
    } else if (s.state == Stream::State::ChunkData) {
      const size_t take = std::min(s.chunk_left, p.size() - pos);
      for (size_t i = pos, end = pos + take; i < end;) {
        const char* nl = static_cast<const char*>(std::memchr(p.data() + i, '\n', end - i));
        const size_t stop = nl ? static_cast<size_t>(nl - p.data()) : end;
        s.line.append(p, i, stop - i);
        if (nl) {
          onLine(s, totals);
          s.line.clear();
        }
        i = nl ? stop + 1 : end;
      }
      pos += take;
      s.chunk_left -= take;
      if (s.chunk_left == 0) s.state = Stream::State::ChunkEnd;
    } else if (s.state == Stream::State::ChunkEnd) {
      if (p.size() - pos < 2) break;
      pos += 2;
      s.state = Stream::State::ChunkSize;
    } else {
      break;
    }
  }
  s.pending.erase(0, pos);
  return true;
}

float percentile(std::vector<float>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

int connectTo(const sockaddr_in& addr, int rcvbuf) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) die(std::string("socket: ") + std::strerror(errno));
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0 && errno != EINPROGRESS) {
    die(std::string("connect: ") + std::strerror(errno));
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  std::string host = "127.0.0.1";
  std::string path;
  int port = 0;
  size_t watchers = 0;
  size_t stalled = 0;
  size_t distinct = 0;
  size_t threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    if (flag == "--host") host = value;
    else if (flag == "--port") port = std::atoi(value.c_str());
    else if (flag == "--path") path = value;
    else if (flag == "--watchers") watchers = std::stoul(value);
    else if (flag == "--stalled") stalled = std::stoul(value);
    else if (flag == "--distinct") distinct = std::stoul(value);
    else if (flag == "--threads") threads = std::max<size_t>(1, std::stoul(value));
    else die("unknown flag " + flag);
  }
  if (port == 0 || path.empty()) die("--port and --path are required");
  if (distinct == 0) distinct = std::max<size_t>(watchers, 1);

  // Every socket is a descriptor: raise the soft limit to the hard one.
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  if (watchers + stalled + 16 > limit.rlim_cur) die("RLIMIT_NOFILE " + std::to_string(limit.rlim_cur) + " too low");

  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) die("bad --host " + host);

  std::vector<Stream> streams(watchers + stalled);
  // Each thread holds every threads-th stream on its own epoll; streams are only ever
  // touched by their thread until the threads are joined.
  std::vector<Totals> thread_totals(threads);
  std::atomic<size_t> ready{0};
  const int stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop < 0) die(std::string("eventfd: ") + std::strerror(errno));

  auto work = [&](size_t thread) {
    Totals& totals = thread_totals[thread];
    totals.latencies_ms.reserve((1 << 22) / threads);
    const int ep = epoll_create1(EPOLL_CLOEXEC);
    size_t next = thread;
    size_t connecting = 0;
    // A bounded number of connects in flight keeps the listen backlog from overflowing.
    const size_t in_flight = std::max<size_t>(1, 256 / threads);
    auto startMore = [&] {
      while (next < streams.size() && connecting < in_flight) {
        Stream& s = streams[next];
        const bool is_stalled = next >= watchers;
        std::string p = path;
        if (const size_t at = p.find("{i}"); at != std::string::npos) p.replace(at, 3, std::to_string(next % distinct));
        s.request = "GET " + p + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: application/json\r\n\r\n";
        s.fd = connectTo(addr, is_stalled ? 4096 : 0);
        epoll_event ev{};
        ev.events = EPOLLOUT;
        ev.data.u64 = next;
        epoll_ctl(ep, EPOLL_CTL_ADD, s.fd, &ev);
        ++connecting;
        next += threads;
      }
    };
    startMore();

    epoll_event in{};
    in.events = EPOLLIN;
    in.data.u64 = UINT64_MAX;
    epoll_ctl(ep, EPOLL_CTL_ADD, stop, &in);

    std::vector<epoll_event> events(1024);
    std::vector<char> buffer(1 << 16);
    char* buf = buffer.data();
    const size_t buf_size = buffer.size();
    bool running = true;
    while (running) {
      const int n = epoll_wait(ep, events.data(), static_cast<int>(events.size()), 1000);
      for (int k = 0; k < n; ++k) {
        const uint64_t id = events[k].data.u64;
        if (id == UINT64_MAX) {
          running = false;
          continue;
        }
        Stream& s = streams[id];
        if (s.state == Stream::State::Connecting) {
          const ssize_t w = send(s.fd, s.request.data() + s.sent, s.request.size() - s.sent, MSG_NOSIGNAL);
          if (w < 0 && errno != EAGAIN) die(std::string("send: ") + std::strerror(errno));
          if (w > 0) s.sent += static_cast<size_t>(w);
          if (s.sent < s.request.size()) continue;
          --connecting;
          if (id >= watchers) {
            // Stalled: never read again.
            epoll_ctl(ep, EPOLL_CTL_DEL, s.fd, nullptr);
            s.state = Stream::State::Done;
            ++ready;
          } else {
            epoll_event ev{};
            ev.events = EPOLLIN;
            ev.data.u64 = id;
            epoll_ctl(ep, EPOLL_CTL_MOD, s.fd, &ev);
            s.state = Stream::State::Headers;
          }
          startMore();
          continue;
        }
        for (;;) {
          const ssize_t r = recv(s.fd, buf, buf_size, 0);
          if (r < 0 && errno == EAGAIN) break;
          if (r <= 0) {
            ++totals.ended;
            epoll_ctl(ep, EPOLL_CTL_DEL, s.fd, nullptr);
            s.state = Stream::State::Done;
            break;
          }
          s.pending.append(buf, static_cast<size_t>(r));
          bool headers_done = false;
          const bool open = parse(s, totals, headers_done);
          if (headers_done) ++ready;
          if (!open) {
            ++totals.ended;
            epoll_ctl(ep, EPOLL_CTL_DEL, s.fd, nullptr);
            s.state = Stream::State::Done;
            break;
          }
          // A short read emptied the socket: level-triggered epoll reports it again when
          // more arrives, so a second recv that would only say EAGAIN is not made (it
          // doubled the client's syscalls per event and slowed the measurement itself).
          if (static_cast<size_t>(r) < buf_size) break;
        }
      }
    }
    close(ep);
  };
  std::vector<std::thread> workers;
  for (size_t t = 0; t < threads; ++t) workers.emplace_back(work, t);

  // Announce once every stream is ready (or stdin ends first), then wait for stdin's EOF.
  pollfd stdin_poll{0, POLLIN, 0};
  bool stdin_open = true;
  bool announced = false;
  char buf[4096];
  while (stdin_open) {
    if (!announced && ready.load() == streams.size()) {
      announced = true;
      std::printf("ready %zu\n", streams.size());
      std::fflush(stdout);
    }
    if (poll(&stdin_poll, 1, announced ? -1 : 10) > 0) {
      const ssize_t r = read(0, buf, sizeof buf);
      if (r <= 0) stdin_open = false;
    }
  }
  const uint64_t one = 1;
  if (write(stop, &one, sizeof one) != sizeof one) die("eventfd write");
  for (auto& w : workers) w.join();
  Totals totals;
  for (auto& t : thread_totals) {
    totals.events += t.events;
    totals.ended += t.ended;
    totals.bad_status += t.bad_status;
    totals.latencies_ms.insert(totals.latencies_ms.end(), t.latencies_ms.begin(), t.latencies_ms.end());
  }

  uint64_t min_events = UINT64_MAX;
  uint64_t max_events = 0;
  for (size_t i = 0; i < watchers; ++i) {
    min_events = std::min(min_events, streams[i].events);
    max_events = std::max(max_events, streams[i].events);
  }
  if (watchers == 0) min_events = 0;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double cpu = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                     static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  auto& l = totals.latencies_ms;
  const size_t samples = l.size();
  const float p50 = percentile(l, 0.50);
  const float p90 = percentile(l, 0.90);
  const float p99 = percentile(l, 0.99);
  const float max = l.empty() ? 0 : *std::max_element(l.begin(), l.end());
  std::printf(
      "{\"ready\":%zu,\"events\":%llu,\"samples\":%zu,\"p50_ms\":%.2f,\"p90_ms\":%.2f,\"p99_ms\":%.2f,"
      "\"max_ms\":%.2f,\"min_events_per_watcher\":%llu,\"max_events_per_watcher\":%llu,\"ended\":%llu,"
      "\"bad_status\":%llu,\"client_cpu_s\":%.3f}\n",
      ready.load(), static_cast<unsigned long long>(totals.events), samples, p50, p90, p99, max,
      static_cast<unsigned long long>(min_events), static_cast<unsigned long long>(max_events),
      static_cast<unsigned long long>(totals.ended), static_cast<unsigned long long>(totals.bad_status), cpu);
  std::fflush(stdout);
  return 0;
}
