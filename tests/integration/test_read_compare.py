"""Self-tests of the differential read test's comparison (read_compare): it catches the
differences it exists for, and only those."""
import gzip
import json
import unittest

import read_compare
from read_compare import Answer
from test_read_differential import served_by


def _list(items, rv="10", cont=None, kind="PodList"):
    meta = {"resourceVersion": rv}
    if cont:
        meta["continue"] = cont
    return json.dumps({"kind": kind, "apiVersion": "v1", "metadata": meta, "items": items},
                      separators=(",", ":")).encode()


def _pod(name, rv="5", ns="a"):
    return {"metadata": {"name": name, "namespace": ns, "resourceVersion": rv}, "spec": {}}


class ComparatorSelfTest(unittest.TestCase):
    """The comparison catches the differences it exists for (and only those)."""

    def answer(self, body, status=200, headers=(("Content-Type", "application/json"),)):
        return Answer(status, list(headers), body)

    def test_equal_answers_have_no_differences(self):
        a = _list([_pod("x"), _pod("y")])
        self.assertEqual(read_compare.differences(self.answer(a), self.answer(a)), [])

    def test_item_order_missing_items_and_content_are_reported(self):
        want = self.answer(_list([_pod("x"), _pod("y")]))
        self.assertIn("different order", read_compare.differences(self.answer(_list([_pod("y"), _pod("x")])), want)[0])
        self.assertIn("missing", read_compare.differences(self.answer(_list([_pod("x")])), want)[0])
        self.assertIn("differ in content", read_compare.differences(
            self.answer(_list([_pod("x"), dict(_pod("y"), spec={"a": 1})])), want)[0])

    def test_envelope_fields_and_escaping_are_reported(self):
        want = self.answer(_list([_pod("x")], cont="abc"))
        self.assertIn("metadata.continue", read_compare.differences(self.answer(_list([_pod("x")])), want)[0])
        self.assertIn("kind", read_compare.differences(self.answer(_list([_pod("x")], cont="abc", kind="List")), want)[0])
        spaced = self.answer(_list([_pod("x")], cont="abc").replace(b'"items":', b'"items": '))
        self.assertIn("bytes differ", read_compare.differences(spaced, want)[0])

    def test_status_headers_and_encoding_are_reported(self):
        st = b'{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"m","reason":"BadRequest","code":400}'
        want = self.answer(st, 400)
        self.assertIn("Status differs in ['message']", read_compare.differences(
            self.answer(st.replace(b'"m"', b'"n"'), 400), want)[0])
        self.assertIn("status 404", read_compare.differences(self.answer(st, 404), want)[0])
        self.assertIn("Content-Type", read_compare.differences(
            self.answer(st, 400, (("Content-Type", "text/plain"),)), want)[0])
        zipped = self.answer(gzip.compress(st), 400, (("Content-Type", "application/json"), ("Content-Encoding", "gzip")))
        self.assertIn("Content-Encoding", read_compare.differences(self.answer(st, 400), zipped)[0])

    def test_too_large_current_rv_and_table_ages_are_masked(self):
        msg = b'{"message":"Timeout: Too large resource version: 99, current: %d","code":504}'
        self.assertEqual(read_compare.differences(self.answer(msg % 10, 504, [("Retry-After", "1")]),
                                                  self.answer(msg % 12, 504, [("Retry-After", "1")])), [])
        table = {"kind": "Table", "columnDefinitions": [{"name": "Name"}, {"name": "Age"}], "rows": [{"cells": ["x", "5s"]}]}
        later = dict(table, rows=[{"cells": ["x", "6s"]}])
        self.assertEqual(read_compare.differences(self.answer(json.dumps(table).encode()),
                                                  self.answer(json.dumps(later).encode())), [])

    def test_too_large_current_rv_in_a_protobuf_status_is_masked(self):
        """The RV's digits change the length prefixes around the message: 9,999 vs 10,000."""
        def status(message):
            raw = b"\x12\x07Failure\x1a" + bytes([len(message)]) + message + b"\x30\xf8\x03"
            return b"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Status\x12" + bytes([len(raw)]) + raw
        msg = b"Timeout: Too large resource version: 99999, current: %d"
        ct = [("Content-Type", "application/vnd.kubernetes.protobuf")]
        self.assertEqual(read_compare.differences(self.answer(status(msg % 9999), 504, ct),
                                                  self.answer(status(msg % 10000), 504, ct)), [])
        other = b"Timeout: Too large resource version: 88888, current: 10000"
        self.assertNotEqual(read_compare.differences(self.answer(status(msg % 9999), 504, ct),
                                                     self.answer(status(other), 504, ct)), [])

    def test_a_trailing_newline_difference_is_a_difference(self):
        a = _list([_pod("x")])
        diffs = read_compare.differences(self.answer(a + b"\n"), self.answer(a))
        self.assertEqual(len(diffs), 1)
        self.assertIn("trailing newline", diffs[0])
        self.assertEqual(read_compare.differences(self.answer(a + b"\n"), self.answer(a + b"\n")), [])

    def test_status_reason_is_read_from_json_and_protobuf(self):
        raw = b"\x0a\x00\x12\x07Failure\x1a\x01m\x22\x07Expired\x30\x9a\x03"
        pb = b"k8s\x00\x0a\x0c\x0a\x02v1\x12\x06Status\x12" + bytes([len(raw)]) + raw
        self.assertEqual(self.answer(pb, 410).status_reason(), "Expired")
        self.assertEqual(self.answer(b'{"kind":"Status","reason":"Expired"}', 410).status_reason(), "Expired")
        self.assertIsNone(self.answer(_list([_pod("x")])).status_reason())

    def test_served_by_header_is_parsed(self):
        self.assertEqual(served_by(self.answer(b"", 200, [("X-Kube-Cache-Proxy", "cache; rv=42")])), ("cache", "42"))
        self.assertEqual(served_by(self.answer(b"", 200, [("X-Kube-Cache-Proxy", "upstream")])), ("upstream", None))
        self.assertEqual(served_by(self.answer(b"", 200, [("Cache-Control", "no-cache")])), (None, None))


if __name__ == "__main__":
    unittest.main()
