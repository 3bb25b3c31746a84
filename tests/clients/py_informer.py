"""A python-kubernetes list+watch loop, as applications write it with watch.Watch().stream()
and bookmarks. Run with Debian's /usr/bin/python3.

Usage: /usr/bin/python3 py_informer.py SERVER_URL
Watches pods in all namespaces. Prints one JSON line per event; on the stdin line "dump"
prints {"dump": {"<ns>/<name>": "<resourceVersion>", ...}}.
"""
import json
import sys
import threading

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

state = {}
lock = threading.Lock()


def out(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def key(meta):
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


def run(api):
    rv = None
    while True:
        if rv is None:
            pods = api.list_pod_for_all_namespaces(_preload_content=False)
            body = json.loads(pods.data)
            with lock:
                state.clear()
                for item in body["items"]:
                    state[key(item["metadata"])] = item["metadata"]["resourceVersion"]
            rv = body["metadata"]["resourceVersion"]
            out({"event": "listed", "rv": rv, "count": len(body["items"])})
        w = watch.Watch()
        try:
            for ev in w.stream(api.list_pod_for_all_namespaces, resource_version=rv,
                               allow_watch_bookmarks=True, timeout_seconds=30):
                raw = ev["raw_object"]
                meta = raw["metadata"]
                rv = meta["resourceVersion"]
                if ev["type"] == "BOOKMARK":
                    out({"event": "bookmark", "rv": rv})
                    continue
                with lock:
                    if ev["type"] == "DELETED":
                        state.pop(key(meta), None)
                    else:
                        state[key(meta)] = rv
                out({"event": ev["type"].lower(), "key": key(meta), "rv": rv})
        except ApiException as e:
            out({"event": "error", "status": e.status})
            if e.status == 410:
                rv = None
        except Exception as e:  # connection dropped: re-watch from the last RV
            out({"event": "error", "message": str(e)})


def main():
    cfg = client.Configuration()
    cfg.host = sys.argv[1]
    cfg.api_key = {"authorization": "Bearer test-token"}
    # Bookmarks carry an empty Pod ("spec":{"containers":null}, contract W7) that the
    # generated models refuse to deserialize unless client-side validation is off.
    cfg.client_side_validation = False
    api = client.CoreV1Api(client.ApiClient(cfg))
    threading.Thread(target=run, args=(api,), daemon=True).start()
    for line in sys.stdin:
        if line.strip() == "dump":
            with lock:
                out({"dump": dict(state)})


if __name__ == "__main__":
    main()
