#!/usr/bin/python3
"""Inputs to the compressed store's layout (issue 20): how well, and how fast, a store of
pods compresses when objects are deflated in blocks of K objects (a block starts with an
empty window, so one object is read by inflating its block alone, and blocks splice into
a gzip'd LIST), and per object with a preset dictionary (an earlier object of the same
resource). zlib level 1, as the proxy deflates; Python's zlib is the C library's.

Two corpora, 10,000 pods each: the test apiserver's generator (what the benchmarks list),
and the API fixtures' fully populated Pod (every field set, managedFields included) with its
identifying fields varied (name, uid, namespace, node, IPs, resourceVersion), so that
neighbouring objects share structure but not their identity.

Not a test; the numbers go to docs/design.md.

  KCP_BIN_DIR=build/bin /usr/bin/python3 tests/bench/store_layouts.py
"""
import json
import os
import random
import sys
import time
import uuid
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import clients  # noqa: E402
import harness  # noqa: E402

PODS = 10000
FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "testdata",
                       "k8s-api-fixtures", "core.v1.Pod.json")


def generated_pods():
    procs = harness.Processes()
    try:
        api = clients.start_apiserver(procs, "--enable-control")
        base = "http://127.0.0.1:%d" % api.port
        clients.control(base, "/control/load?resource=pods&count=%d&namespaces=10&nodes=50" % PODS)
        body = clients.request(base + "/api/v1/pods")[1]
    finally:
        procs.stop_all()
    return [json.dumps(i, separators=(",", ":")).encode() for i in json.loads(body)["items"]]


def fixture_pods():
    with open(FIXTURE) as f:
        template = json.load(f)
    r = random.Random(20)
    out = []
    for i in range(PODS):
        pod = json.loads(json.dumps(template))
        m = pod["metadata"]
        m["name"] = "web-%s-%05d" % ("%08x" % r.getrandbits(32), i)
        m["namespace"] = "team-%d" % (i % 10)
        m["uid"] = str(uuid.UUID(int=r.getrandbits(128)))
        m["resourceVersion"] = str(100000 + i)
        pod["spec"]["nodeName"] = "node-%d" % r.randrange(50)
        pod["status"]["podIP"] = "10.%d.%d.%d" % (r.randrange(256), r.randrange(256), r.randrange(256))
        out.append(json.dumps(pod, separators=(",", ":")).encode())
    return sorted(out)


def deflate(data, zdict=None):
    z = zlib.compressobj(1, zlib.DEFLATED, -15, zdict=zdict) if zdict else zlib.compressobj(1, zlib.DEFLATED, -15)
    return z.compress(data) + z.flush(zlib.Z_FULL_FLUSH)


def inflate(data, zdict=None):
    z = zlib.decompressobj(-15, zdict=zdict) if zdict else zlib.decompressobj(-15)
    return z.decompress(data)


def measure(label, pods):
    plain = sum(len(p) for p in pods)
    print("%s: %d pods, %.1f MB of JSON, %.0f bytes per pod" % (label, len(pods), plain / 1e6, plain / len(pods)))
    for k in (1, 4, 8, 16, 32, 128):
        blocks = [b",".join(pods[i:i + k]) for i in range(0, len(pods), k)]
        t = time.perf_counter()
        packed = [deflate(b) for b in blocks]
        deflate_s = time.perf_counter() - t
        t = time.perf_counter()
        for p in packed:
            inflate(p)
        inflate_s = time.perf_counter() - t
        size = sum(len(p) for p in packed)
        print("  blocks of %3d: ratio %5.1fx (%.3f of the JSON)  deflate %5.0f MB/s  inflate all %5.0f MB/s "
              "(%.1f ms for the list)  one object read: %5.1f us" % (
                  k, plain / size, size / plain, plain / deflate_s / 1e6, plain / inflate_s / 1e6, inflate_s * 1000,
                  inflate_s / len(packed) * 1e6))
    zdict = pods[0]
    t = time.perf_counter()
    packed = [deflate(p, zdict) for p in pods[1:]]
    deflate_s = time.perf_counter() - t
    t = time.perf_counter()
    for p in packed:
        inflate(p, zdict)
    inflate_s = time.perf_counter() - t
    size = sum(len(p) for p in packed)
    rest = plain - len(zdict)
    print("  per object, preset dictionary (the first pod): ratio %5.1fx  deflate %5.0f MB/s  inflate %5.0f MB/s "
          "one object read: %5.1f us" % (rest / size, rest / deflate_s / 1e6, rest / inflate_s / 1e6,
                                         inflate_s / len(packed) * 1e6))


def main():
    measure("generator", generated_pods())
    measure("fixture Pod, identity varied", fixture_pods())


if __name__ == "__main__":
    main()
