#pragma once
// gzip as kube-apiserver writes it: which requests accept it
// (responsewriters.ContentEncodingSupported) and the members its compress/gzip writer at
// level 1 (gzipContentEncodingLevel) produces, for whole responses (N1) and for the
// per-flush compressed watch-list (W9, WatchListCompression).

#include <string>
#include <string_view>

namespace testapi {

// `accept_encoding` is the first Accept-Encoding value (Header.Get): gzip is accepted when
// one of its comma-separated tokens is exactly "gzip" once trimmed. "gzip;q=1", "GZIP",
// "x-gzip" and "*" do not count, as they do not for the apiserver.
bool acceptsGzip(std::string_view accept_encoding);

// One complete gzip member, as Go's gzip.Writer writes `data` when it is flushed and then
// closed (watch.go perFlushGzipWriter): the header 1f 8b 08 00 00000000 04 ff (no name or
// mtime, XFL 4 for level 1, OS 255), the deflated data ending in a sync flush
// (00 00 ff ff), an empty final stored block (01 00 00 ff ff), CRC-32 and size.
// The deflate blocks in between are zlib's, not compress/flate's: the same data, other
// bytes; no client can tell, as both are valid deflate.
std::string gzipMember(std::string_view data);

}  // namespace testapi
