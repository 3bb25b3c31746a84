#include "config/config.h"

namespace config {

std::string versionText() { return std::string("kube-cache-proxy ") + KCP_CONFIG_VERSION + "\n"; }

namespace {

// The help text in three parts: the upstream it talks to, how it serves, what it caches.
constexpr const char* kHelpUpstream = R"(kube-cache-proxy serves GET, LIST and WATCH for Kubernetes resources from an
in-memory cache, with the apiserver's resourceVersion semantics, and passes
writes straight through to the apiserver.

Usage:
  kube-cache-proxy [flags]

Upstream (first match wins):
  --upstream URL            apiserver URL (http or https); credentials only from the flags below
  --kubeconfig PATH         kubeconfig to read (default: first file in $KUBECONFIG, then ~/.kube/config)
  --context NAME            kubeconfig context (default: its current-context)
                            With none of the above: in-cluster service account, if in a pod.

Upstream credentials (override the kubeconfig or service account, as in kubectl):
  --certificate-authority PATH   PEM CA bundle to verify the apiserver with
  --client-certificate PATH      PEM client certificate (needs --client-key)
  --client-key PATH              PEM private key matching --client-certificate
  --token TOKEN                  static bearer token (not with --token-file)
  --token-file PATH              bearer token file, re-read when it changes (not with --token)
  --tls-server-name NAME         server name for SNI and certificate checks
  --insecure-skip-tls-verify     do not verify the apiserver's certificate (not with
                                 --certificate-authority); also =true or =false
  --connect-timeout DUR          how long to wait for a connection to the apiserver (default 5s)

)";

constexpr const char* kHelpServing = R"(Serving:
  --listen HOST:PORT        address to listen on (default 127.0.0.1:8001; port 0 picks a free port)
  --mode sidecar|gateway    deployment shape (default sidecar)
  --io-threads N            server I/O threads (default 0: one per core)
  --shutdown-timeout DUR    how long to drain clients on SIGTERM (default 5s)

Request filter (kubectl proxy's flags and meaning; docs/security.md):
  --accept-hosts LIST       serve only requests whose Host, without its port, matches one of
                            these regular expressions (sidecar default
                            ^localhost$,^127\.0\.0\.1$,^\[::1\]$ plus another --listen loopback address)
  --accept-paths LIST       serve only paths matching one of these (sidecar default ^.*)
  --reject-paths LIST       refuse paths matching any of these, even when accepted (sidecar default
                            ^/api/.*/pods/.*/exec,^/api/.*/pods/.*/attach; "" refuses none)
  --reject-methods LIST     refuse HTTP methods matching any of these, e.g. POST,PUT,PATCH,DELETE
                            (sidecar default ^$: none)
  Comma-separated ECMAScript regular expressions matched anywhere in the text (anchor them).
  Refused: 403, body "Forbidden", as kubectl proxy. /healthz, /livez, /readyz are never
  filtered. A gateway filters only by the flags its operator sets.

Gateway mode (--mode gateway; docs/security.md):
  --tls-cert-file PATH           serve HTTPS (TLS 1.2+) with this PEM certificate chain; re-read
                                 when it changes. Required for a gateway beyond loopback.
  --tls-private-key-file PATH    PEM private key of --tls-cert-file
  --client-ca-file PATH          accept client certificates signed by this PEM CA bundle
                                 (CN = user, O = groups, as the apiserver maps them)
  --refuse-client-cert-groups LIST
                                 refuse client certificates naming any of these groups: the
                                 proxy impersonates them upstream (default system:masters;
                                 "" refuses none)
  --authentication-cache-ttl DUR how long a TokenReview outcome is reused (default 30s)
  --authorization-cache-ttl DUR  how long a SubjectAccessReview outcome is reused (default 10s)
  --auth-cache-size N            outcomes kept per cache, least recently used dropped (default 10000)
  A gateway authenticates every request (bearer token by TokenReview, or client
  certificate), authorizes every request it answers from the cache by SubjectAccessReview,
  and forwards pass-through requests as the caller: its own bearer token, or for a
  certificate user the proxy's credentials with Impersonate-User/Impersonate-Group.

)";

constexpr const char* kHelpCaching = R"(Caching:
  --cache LIST              resources to cache, e.g. pods,configmaps,deployments.apps
  --no-cache LIST           resources never cached (wins over everything else)
  --cache-on-demand         also cache other resources when first read (default true; =false to disable)
  --cache-idle-timeout DUR  stop caching an on-demand resource nobody read for this long (default 10m)
  --cache-start-wait DUR    hold a read or watch that starts an on-demand cache up to this long
                            while it syncs, then answer it from the cache (default 0: pass it through)
  --discovery-cache-ttl DUR serve discovery (/api, /apis...) and /version from memory for at most
                            this long while the CRDs and APIServices do not change (default 1m; 0:
                            pass them through)
  --write-sync              after a write, wait until the cache has seen it (read-your-writes)
  --write-sync-timeout DUR  wait at most this long, then answer with a Warning (default 5s)
  --read-policy strict|cache
                            RV-unset GET/LIST of a cached resource: strict answers from the cache
                            only once it is proven current (the apiserver's guarantee; else the
                            upstream answers), cache answers from the cache at once with the
                            staleness bound in X-Kube-Cache-Proxy-Staleness (default strict)
  --state-dir DIR           directory for on-disk state (default: none); created 0700. Whoever may
                            write it decides what a restarted proxy serves (docs/security.md)
  --state-key-file FILE     seal state files with HMAC-SHA256 under this key (at least 32 bytes;
                            a trailing newline is not part of it); files not sealed with it are
                            refused and relisted (default: none, a SHA-256 that detects accidents)
  --state-save-interval DUR save each cached resource's state to --state-dir this often, and on
                            shutdown; a restart loads it and resumes watching (default 60s; 0: shutdown only)
  --drift-check-interval DUR
                            compare each cached resource with the upstream this often and relist
                            it on any difference (default 0: off)
  --store-encoding plain|history|compressed
                            compressed packs the current objects no recent event holds and the old
                            versions a watch resume or an Exact read may still need (LZ4 against a
                            dictionary of the resource: ~1/8 to 1/120 of their bytes; each read
                            unpacks into its own buffer at ~14 GB/s); history packs only the old
                            versions; plain keeps everything as received (default compressed)

Watches served from the cache:
  --watch-bookmark-interval DUR  bookmark period for clients that allow bookmarks (default 60s)
  --watch-max-lifetime DUR  a watch without timeoutSeconds ends after a random time in
                            [DUR/2, DUR) so clients do not reconnect in lockstep (default 1h:
                            the apiserver's min-request-timeout 1800s times a factor in [1,2))
  --watch-queue-capacity N  events a watcher may fall behind before it is closed (default 1000)
  --unsynced-watch-timeout DUR  a watch that passes through while its cache is starting is
                            asked of the upstream with timeoutSeconds at most DUR, so that its
                            client's next watch is served from the cache (default 30s; 0: as asked)

Limits (defaults as kube-apiserver's; 0 means unlimited where noted):
  --max-request-body-bytes N   largest request body for API writes (default 3145728; 0: unlimited);
                               beyond it 413 RequestEntityTooLarge
  --max-header-bytes N         largest request head, plus 4096 for the request line (default 1048576);
                               beyond it 431; this also bounds the number of headers
  --read-header-timeout DUR    time to receive a whole request head (default 32s)
  --idle-timeout DUR           how long an idle keep-alive connection stays open (default 1m30s)
  --max-watches-per-client N   watches open at once per client (user when authenticated, else
                               address); beyond it 429 with Retry-After (default 0: unlimited)
  --max-inflight-watches N     watches open at once in total (default 0: unlimited)
  --max-requests-inflight N    requests in flight at once, watches and other long-running requests
                               excepted (default 600, kube-apiserver's 400 + 200); beyond it 429
  --max-inflight-reviews N     gateway: TokenReviews and SubjectAccessReviews in flight to the
                               upstream at once (default 64); beyond it 429 without a review
  --max-connections N          client connections open at once; beyond it a new one is closed
                               (default: half the open-file limit; 0: unlimited)
  --max-connections-per-client N  the same per client address (default 0: unlimited)

HTTP/2 (as kube-apiserver serves it):
  --http2                      offer HTTP/2: by ALPN on TLS, by prior knowledge (h2c) on plain
                               connections (default true; false: HTTP/1.1 only)
  --http2-max-streams-per-connection N  concurrent streams per HTTP/2 connection (default 100)

Compression (gzip from 128 KiB when the client accepts it, as kube-apiserver):
  --gzip-loopback              gzip answers from memory to loopback clients too (default false:
                               a sidecar's local clients get plain bytes; gateway clients always
                               get gzip)

Logging:
  --log-format text|json    log line format (default text)
  -v, --v N                 log verbosity, 0 to 9 (default 0)

Other:
  --config FILE             YAML file whose keys are the long flag names above (listen, v, cache, ...);
                            flags on the command line win over the file, and relative paths
                            in it are relative to the file. Only in the file, per resource:
                              resources:
                                - resource: pods
                                  namespaces: [web]             # cache only these namespaces
                                  strip-managed-fields: true    # drop metadata.managedFields
                                  indexes: {owner: spec.owner}  # custom index by JSON path
                                  write-sync: true              # read-your-writes for this resource only
                                  read-policy: cache            # RV-unset reads from the cache at once
  -h, --help                print this help
  --version                 print the version

Durations use Go syntax: 5s, 1m30s, 250ms.
)";

}  // namespace

std::string helpText() { return std::string(kHelpUpstream) + kHelpServing + kHelpCaching; }

}  // namespace config
