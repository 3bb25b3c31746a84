package kubecacheproxy.clients;

import static kubecacheproxy.clients.LineProtocol.JSON;
import static kubecacheproxy.clients.LineProtocol.out;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kubernetes.client.common.KubernetesObject;
import io.kubernetes.client.informer.ResourceEventHandler;
import io.kubernetes.client.informer.SharedIndexInformer;
import io.kubernetes.client.informer.SharedInformerFactory;
import io.kubernetes.client.openapi.ApiClient;
import io.kubernetes.client.openapi.apis.CoreV1Api;
import io.kubernetes.client.openapi.models.V1ConfigMap;
import io.kubernetes.client.openapi.models.V1ConfigMapList;
import io.kubernetes.client.openapi.models.V1Pod;
import io.kubernetes.client.openapi.models.V1PodList;
import io.kubernetes.client.util.CallGenerator;
import io.kubernetes.client.util.CallGeneratorParams;
import io.kubernetes.client.util.ClientBuilder;
import io.kubernetes.client.util.KubeConfig;
import java.io.FileReader;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * SharedIndexInformers of the official Kubernetes Java client (io.kubernetes:client-java) made by
 * a SharedInformerFactory, as the client's informer example makes them: a CallGenerator per
 * resource that builds the CoreV1Api list call from the informer's parameters (resourceVersion,
 * watch, timeoutSeconds), and the ApiClient from a kubeconfig with ClientBuilder's defaults
 * (OkHttp, HTTP/2 and HTTP/1.1, no read timeout).
 *
 * <pre>
 * java -jar client-java-informer.jar --kubeconfig FILE --namespace NS [--resources configmaps,pods] [--bookmarks]
 * </pre>
 *
 * --bookmarks adds allowWatchBookmarks=true to the informer's calls (the example leaves it out).
 *
 * <p>Prints, in the line protocol of LineProtocol, one line per event
 * {"event":"ADD|UPDATE|DELETE","resource":"configmaps","key":"ns/name","rv":"123"},
 * {"event":"synced","resource":...,"count":N} once an informer has synced,
 * {"event":"error","resource":...,"message":...} for what the informer's exception handler gets
 * (its reflector then lists and watches again), and {"request":{"method":"GET","uri":"..."}} for
 * every request the client sends (an OkHttp interceptor that changes nothing).
 */
public final class ClientJavaInformer {
  public static void main(String[] args) throws Exception {
    Map<String, String> opt = LineProtocol.options(args, "--bookmarks");
    if (!opt.containsKey("--kubeconfig") || !opt.containsKey("--namespace")) {
      System.err.println("--kubeconfig FILE and --namespace NS are required");
      System.exit(2);
    }
    KubeConfig kubeconfig;
    try (FileReader f = new FileReader(opt.get("--kubeconfig"), StandardCharsets.UTF_8)) {
      kubeconfig = KubeConfig.loadKubeConfig(f);
    }
    ApiClient client = ClientBuilder.kubeconfig(kubeconfig).build();
    client.setHttpClient(client.getHttpClient().newBuilder().addInterceptor(chain -> {
      ObjectNode line = JSON.createObjectNode();
      line.putObject("request").put("method", chain.request().method()).put("uri", chain.request().url().toString());
      out(line);
      return chain.proceed(chain.request());
    }).build());
    CoreV1Api core = new CoreV1Api(client);
    String ns = opt.get("--namespace");
    Boolean bookmarks = opt.containsKey("--bookmarks") ? Boolean.TRUE : null;

    SharedInformerFactory factory = new SharedInformerFactory(client);
    Map<String, SharedIndexInformer<? extends KubernetesObject>> informers = new LinkedHashMap<>();
    for (String resource : opt.getOrDefault("--resources", "configmaps").split(",")) {
      CallGenerator calls;
      switch (resource) {
        case "configmaps":
          calls = p -> core.listNamespacedConfigMap(ns).resourceVersion(p.resourceVersion).watch(p.watch)
              .timeoutSeconds(p.timeoutSeconds).allowWatchBookmarks(bookmarks).buildCall(null);
          informers.put(resource, informer(factory, calls, V1ConfigMap.class, V1ConfigMapList.class, resource));
          break;
        case "pods":
          calls = p -> core.listNamespacedPod(ns).resourceVersion(p.resourceVersion).watch(p.watch)
              .timeoutSeconds(p.timeoutSeconds).allowWatchBookmarks(bookmarks).buildCall(null);
          informers.put(resource, informer(factory, calls, V1Pod.class, V1PodList.class, resource));
          break;
        default:
          System.err.println("unknown resource " + resource + " (configmaps, pods)");
          System.exit(2);
      }
    }
    factory.startAllRegisteredInformers();

    // The client has no synced callback: an application polls hasSynced(), as this does.
    Thread synced = new Thread(() -> {
      Map<String, SharedIndexInformer<? extends KubernetesObject>> waiting = new LinkedHashMap<>(informers);
      while (!waiting.isEmpty()) {
        waiting.entrySet().removeIf(e -> {
          boolean done = e.getValue().hasSynced();
          if (done) {
            out(LineProtocol.line("synced", e.getKey()).put("count", e.getValue().getIndexer().list().size()));
          }
          return done;
        });
        try {
          TimeUnit.MILLISECONDS.sleep(10);
        } catch (InterruptedException ex) {
          return;
        }
      }
    }, "synced");
    synced.setDaemon(true);
    synced.start();

    LineProtocol.serveUntilStopped(() -> {
      Map<String, Map<String, String>> dump = new LinkedHashMap<>();
      informers.forEach((resource, informer) -> {
        Map<String, String> state = dump.computeIfAbsent(resource, r -> new TreeMap<>());
        for (KubernetesObject o : informer.getIndexer().list()) {
          state.put(LineProtocol.key(o.getMetadata().getNamespace(), o.getMetadata().getName()),
              o.getMetadata().getResourceVersion());
        }
      });
      return dump;
    });
    factory.stopAllRegisteredInformers();
    LineProtocol.stopped();
  }

  private static <T extends KubernetesObject, L extends io.kubernetes.client.common.KubernetesListObject>
      SharedIndexInformer<T> informer(SharedInformerFactory factory, CallGenerator calls, Class<T> type,
                                      Class<L> listType, String resource) {
    SharedIndexInformer<T> informer = factory.sharedIndexInformerFor(calls, type, listType, 0,
        (t, e) -> out(LineProtocol.line("error", resource).put("message", String.valueOf(e))));
    informer.addEventHandler(new ResourceEventHandler<T>() {
      @Override
      public void onAdd(T o) {
        event("ADD", o);
      }

      @Override
      public void onUpdate(T before, T after) {
        event("UPDATE", after);
      }

      @Override
      public void onDelete(T o, boolean finalStateUnknown) {
        event("DELETE", o);
      }

      private void event(String what, T o) {
        LineProtocol.event(what, resource, o.getMetadata().getNamespace(), o.getMetadata().getName(),
            o.getMetadata().getResourceVersion());
      }
    });
    return informer;
  }
}
