#pragma once
// PartialObjectMetadata (N4) of a stored object, byte for byte as the apiserver writes
// it: {"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{...}}.
//
// The apiserver copies the object's metadata into a metav1.PartialObjectMetadata
// (meta.AsPartialObjectMetadata) and encodes that struct, so the metadata members come
// out in metav1.ObjectMeta's field order:
// - Built-in types are stored as the apiserver encoded their typed struct, so their
//   stored metadata bytes already are that encoding: served as they are, unparsed.
// - Custom resources are stored unstructured, every key sorted (the apiserver encodes
//   map[string]interface{}), so creationTimestamp comes first. Their metadata is
//   rewritten in ObjectMeta order (objectMetaInStructOrder).
//
// Pure functions; views live as long as the bytes they are read from.

#include <string>
#include <string_view>

#include "cache/object.h"

namespace proxy {

// What precedes the metadata object in every PartialObjectMetadata.
inline constexpr std::string_view kPartialObjectMetadataHead =
    R"({"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":)";

// The object's metadata member as stored, or "{}" when it has none: a view into `bytes`,
// the object's bytes (Object::bytes), or into `buffer` (a packed object unpacked there).
std::string_view storedMetadata(const cache::Object& object, std::string_view bytes);
std::string_view storedMetadata(const cache::Object& object, std::string& buffer);

// A custom resource's stored metadata (keys sorted) as encoding/json writes the
// metav1.ObjectMeta that Unstructured's getters fill from it: ObjectMeta's fields in
// declaration order, members it does not know dropped, empty ones omitted (omitempty),
// ownerReferences and managedFields entries in their own structs' field order. Values
// are copied as written: Go's encoder wrote them from the same Go types (labels and
// annotations maps with sorted keys, RFC 3339 times), so re-encoding would not change
// them. Input that does not scan as JSON is returned as it is (it cannot happen: the
// ingestion parser validated every stored byte).
//
// Computed per request, not once at ingestion. Ingestion would keep a second copy of
// every custom object's metadata for as long as it is cached (671 bytes for a small
// object with one annotation, owner reference and finalizer; 973 with its one
// managedFields entry), in a store whose per-object bytes are measured and budgeted
// (docs/design/store.md, "Measurements"). Metadata-only reads of custom resources are
// rare next to that: metadata informers list once and then watch, and those watches pass
// through. A rewrite is one pass over the metadata bytes with no parse and one
// allocation: about 1 µs for the 671-byte metadata and 2 µs for the 973-byte one (-O2,
// one core of this 2-core machine), so 10-20 ms for a 10,000-item list.
std::string objectMetaInStructOrder(std::string_view sorted_metadata);

// One object answered as PartialObjectMetadata (GET with the N4 Accept), with the newline.
std::string partialObjectMetadata(const cache::Object& object, bool custom);

}  // namespace proxy
