"""The demo's story (issue 19) stays true: scripts/demo_story.py, run against the bundled
test apiserver and the proxy as scripts/demo.sh starts them, prints measured numbers that
say what the demo claims: cached reads answered by the cache, 1,000 of them costing the
upstream nothing, 200 watches held upstream as one, a 10,000-pod LIST each way."""
import os
import re
import subprocess
import unittest

import clients
import harness

STORY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "demo_story.py")


class DemoStoryTest(unittest.TestCase):
    def test_the_story_in_numbers(self):
        processes = harness.Processes()
        self.addCleanup(processes.stop_all)
        api = clients.start_apiserver(processes, "--sample-data", "--enable-control")
        upstream = "http://127.0.0.1:%d" % api.port
        proxy = processes.proxy(upstream, "--cache", "pods,configmaps")
        harness.wait_for(lambda: harness.http_get("127.0.0.1", proxy.port, "/readyz")[0] == 200, timeout=20,
                         message="proxy ready")
        out = subprocess.run(["/usr/bin/python3", STORY, "http://127.0.0.1:%d" % proxy.port, upstream],
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        story = out.stdout
        print(story)
        self.assertRegex(story, r"GET one pod +cache +[\d.]+ ms +[\d.]+ ms")
        self.assertRegex(story, r"LIST pods in a namespace, resourceVersion=0 +cache ")
        self.assertRegex(story, r"create a ConfigMap \(writes always pass through\) +upstream ")
        burst = re.search(r"answered \{'cache': 1000\}; requests the upstream received: \d+ before, \d+ after \(\+(\d+)\)",
                          story)
        self.assertIsNotNone(burst, story)
        self.assertLessEqual(int(burst.group(1)), 2)  # at most a freshness probe or two
        self.assertIn("200 watches of pods open through the proxy; watches of pods the upstream holds: 1", story)
        self.assertRegex(story, r"LIST of all \d+ pods \([\d.]+ MB, .*through the proxy \d+ ms \(answered by the cache\)")


if __name__ == "__main__":
    unittest.main()
