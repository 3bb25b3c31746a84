#!/usr/bin/python3
"""Every metric family declared in proxy/observability/metric_families.h has a row in docs/metrics.md with
its type, and every row names a declared family: the table is the one place a metric comes
to exist (issue 17), and the page cannot describe a metric the code does not have.
test_operator_docs.py checks the labels against a live scrape; this check also covers the
families a short test run never samples.

  check_metric_families.py REPO_ROOT
"""
import re
import sys

root = sys.argv[1]
header = open(root + "/proxy/observability/metric_families.h").read()
declared = {name: kind.lower() for name, kind in
            re.findall(r'"(kube_cache_proxy_[a-z_]+)",\s*"(?:[^"\\]|\\.|"\s*")*",\s*Type::(\w+)\}', header)}
rows = {name: kind for name, kind in
        re.findall(r"^\| `(kube_cache_proxy_[a-z_]+)` \| (\w+) \|", open(root + "/docs/metrics.md").read(), re.M)}
problems = []
for name, kind in sorted(declared.items()):
    if name not in rows:
        problems.append("%s is declared in proxy/observability/metric_families.h but has no row in docs/metrics.md" % name)
    elif rows[name] != kind:
        problems.append("%s is a %s in proxy/observability/metric_families.h but a %s in docs/metrics.md" % (name, kind, rows[name]))
for name in sorted(set(rows) - set(declared)):
    problems.append("docs/metrics.md describes %s, which proxy/observability/metric_families.h does not declare" % name)
if len(declared) < 40:
    problems.append("only %d families parsed from proxy/observability/metric_families.h: the parser is out of date" % len(declared))
print("\n".join(problems) or "%d metric families, all documented" % len(declared))
sys.exit(1 if problems else 0)
