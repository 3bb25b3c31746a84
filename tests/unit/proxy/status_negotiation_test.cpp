#include "proxy/status_negotiation.h"

#include <vector>

#include <doctest/doctest.h>

using proxy::StatusEncoding;
using proxy::statusEncodingFor;

TEST_CASE("An error Status is raw JSON exactly when no Accept entry passes DefaultEndpointRestrictions (E1)") {
  struct Row {
    const char* accept;
    StatusEncoding expected;
  };
  const StatusEncoding negotiated = StatusEncoding::Negotiated;
  const StatusEncoding raw = StatusEncoding::RawJson;
  const std::vector<Row> rows{
      {"", negotiated},  // absent: the first serializer
      {"  ", negotiated},
      {"application/json", negotiated},
      {"*/*", negotiated},
      {"*", negotiated},  // goautoneg reads a lone "*" as */*
      {"application/*", negotiated},
      {"application/yaml", negotiated},
      // The first entry that passes picks the serializer: protobuf writes the Status in
      // protobuf (N2); */* is JSON, the first serializer.
      {"application/vnd.kubernetes.protobuf", StatusEncoding::Protobuf},
      {"application/vnd.kubernetes.protobuf, */*", StatusEncoding::Protobuf},
      {"application/vnd.kubernetes.protobuf;stream=watch", StatusEncoding::Protobuf},
      {"application/json, application/vnd.kubernetes.protobuf", negotiated},
      {"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", negotiated},
      // Conversions are what DefaultEndpointRestrictions refuses.
      {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", raw},
      {"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", raw},
      {"application/json;as=Table;v=v1;g=meta.k8s.io", raw},
      {"application/json;as=Table;v=v1beta1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io", raw},
      {"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", raw},
      {"*/*;as=Table;v=v1;g=meta.k8s.io", raw},
      {"application/json;v=v1", raw},  // g or v alone also names a conversion
      {"application/json;g=meta.k8s.io", raw},
      {"application/json;as= ;q=1", raw},  // "as" with a value that trims to ""
      {"application/json;as=", negotiated},  // goautoneg drops "k=" params
      {"application/json;as= ", negotiated},  // the entry is trimmed first: "as="
      // Any plain entry rescues the error, whatever its quality or position.
      {"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", negotiated},
      {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json;q=0.9", negotiated},
      {"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, */*;q=0", negotiated},
      {"application/json;q=0", negotiated},
      // stream: only "watch", only on a serializer that streams; sv: never.
      {"application/json;stream=watch", negotiated},
      {"application/yaml;stream=watch", raw},
      {"application/json;stream=other", raw},
      {"application/json;sv=v1", raw},
      {"application/json;charset=utf-8;pretty=1;profile=x", negotiated},  // other params are ignored
      // Nothing the apiserver serves.
      {"text/html", raw},
      {"application/cbor", raw},  // CBORServingAndStorage is off by default
      {"Application/JSON", raw},  // goautoneg compares case-sensitively
      {"application", raw},       // dropped: no subtype
      {"application/json/x", raw},
      {"text/html, application/json ;as=Table;g=meta.k8s.io;v=v1", raw},
  };
  for (const Row& row : rows) {
    CAPTURE(row.accept);
    CHECK(statusEncodingFor(proxy::AcceptHeader::parse(row.accept)) == row.expected);
  }
}
