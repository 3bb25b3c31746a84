#pragma once
// AcceptHeader: a request's Accept header parsed once, as goautoneg.ParseAccept (the
// parser kube-apiserver's negotiation uses) reads it. Every decision that depends on
// Accept (which form the cache answers in, how a watch is framed, how an error Status is
// encoded, which discovery document is wanted, whether /debug/status is a page or JSON)
// reads the ranges parsed here, each with the apiserver's rule for that decision.
//
// goautoneg's rules: entries split on ','; spaces (not tabs) trimmed; a range without '/'
// is dropped unless it is "*" ("*/*"); "a/b/c" is dropped; parameters split on ';' keep
// only "k=v" pairs (no '=' or a second '=' drops the pair), and a repeated key keeps its
// last value (a Go map); "q" sets the quality (default 1) and is not a parameter.
//
// Plain code; an AcceptHeader owns its strings and is safe to read from any thread.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace proxy {

struct MediaRange {
  std::string type;     // "application", "*"
  std::string subtype;  // "json", "vnd.kubernetes.protobuf", "*"
  std::vector<std::pair<std::string, std::string>> params;  // in header order, without q
  double q = 1.0;

  // The value of parameter `key` (its last occurrence), or nullptr.
  const std::string* param(std::string_view key) const;
  bool is(std::string_view type, std::string_view subtype) const;
  // "type/subtype" in ASCII lower case.
  std::string mediaType() const;
};

class AcceptHeader {
 public:
  AcceptHeader() = default;
  static AcceptHeader parse(std::string_view header);

  // The header as received, without surrounding spaces and tabs (what Go's
  // Header.Get hands a handler).
  const std::string& raw() const { return raw_; }
  bool empty() const { return raw_.empty(); }
  // The ranges in header order (the order the apiserver's error negotiation walks).
  const std::vector<MediaRange>& ranges() const { return ranges_; }
  // The ranges by quality, highest first, equal qualities in header order (the order
  // the apiserver's serializer negotiation prefers).
  std::vector<const MediaRange*> byQuality() const;

 private:
  std::string raw_;
  std::vector<MediaRange> ranges_;
};

}  // namespace proxy
