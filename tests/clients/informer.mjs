// A @kubernetes/client-node informer, exactly as an application would run one: list,
// then watch, re-watching on close and restarting after errors (contract K5).
// Usage: node informer.mjs SERVER_URL API_VERSION KIND PATH [labelSelector]
//   e.g. node informer.mjs http://127.0.0.1:8001 v1 Pod /api/v1/pods
// Prints one JSON line per event; on the stdin line "dump" prints
// {"dump":{"<ns>/<name>":"<resourceVersion>",...}} so a test can compare it with the
// upstream's truth.
import * as k8s from '@kubernetes/client-node';
import * as readline from 'node:readline';

const [server, apiVersion, kind, path, labelSelector] = process.argv.slice(2);
const kc = new k8s.KubeConfig();
kc.loadFromOptions({
  clusters: [{ name: 'c', server, skipTLSVerify: true }],
  users: [{ name: 'u', token: 'test-token' }],
  contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
  currentContext: 'c',
});
const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
const list = () => objects.list(apiVersion, kind, undefined, undefined, undefined, undefined, labelSelector);
const informer = k8s.makeInformer(kc, path, list, labelSelector);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const key = (o) => (o.metadata.namespace ? `${o.metadata.namespace}/` : '') + o.metadata.name;

for (const verb of ['add', 'update', 'delete']) {
  informer.on(verb, (o) => out({ event: verb, key: key(o), rv: o.metadata.resourceVersion }));
}
informer.on('connect', () => out({ event: 'connect' }));
informer.on('error', (err) => {
  out({ event: 'error', message: String(err && err.message ? err.message : err) });
  setTimeout(() => informer.start().catch(() => {}), 200);
});

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'dump') return;
  const dump = {};
  for (const o of informer.list()) dump[key(o)] = o.metadata.resourceVersion;
  out({ dump });
});
await informer.start();
out({ event: 'started' });
