#pragma once
// How the apiserver encodes an error Status for a given Accept header (contract E1).
//
// Errors go through responsewriters.ErrorNegotiated, which negotiates the response
// media type again, this time under negotiation.DefaultEndpointRestrictions: no "as="
// conversion (Table, PartialObjectMetadata) and no "sv=" server version are allowed, and
// "stream=" only as "watch" on a serializer that streams. The request itself may have
// negotiated fine under its endpoint's own restrictions (that is how a cached
// PartialObjectMetadataList read got this far). When no Accept entry passes the second
// negotiation, WriteObjectNegotiated falls back to WriteRawJSON: the Status as
// json.MarshalIndent(status, "", "  "), with no trailing newline and no gzip.
//
//   Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1  -> RawJson
//   Accept: application/json;as=Table;g=meta.k8s.io;v=v1, application/json      -> Negotiated
//
// Pure function; safe from any thread.

#include "proxy/media.h"

namespace proxy {

enum class StatusEncoding {
  // The serializer's encoding. The proxy writes compact JSON with a trailing newline;
  // should the entry that passed be YAML (a client that also accepts it), the apiserver
  // would use that instead: not reproduced.
  Negotiated,
  // The entry that passed is protobuf: the Status in the protobuf envelope (N2).
  Protobuf,
  RawJson,     // WriteRawJSON: two-space indent, `"key": value`, no trailing newline
};

// The encoding of an error Status answered to a request with this Accept header (the
// first Accept field, as Go's Header.Get reads it; empty when absent).
StatusEncoding statusEncodingFor(const AcceptHeader& accept);

}  // namespace proxy
