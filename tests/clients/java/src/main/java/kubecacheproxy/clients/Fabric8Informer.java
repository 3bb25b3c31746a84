package kubecacheproxy.clients;

import static kubecacheproxy.clients.LineProtocol.JSON;
import static kubecacheproxy.clients.LineProtocol.out;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.http.BasicBuilder;
import io.fabric8.kubernetes.client.http.HttpRequest;
import io.fabric8.kubernetes.client.http.HttpResponse;
import io.fabric8.kubernetes.client.http.Interceptor;
import io.fabric8.kubernetes.client.http.WebSocket;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * A fabric8 kubernetes-client SharedIndexInformer per resource, as an application runs one,
 * with the client's defaults (watches over WebSocket first, falling back to a plain HTTP watch
 * when the handshake is answered 200 or 503).
 *
 * <pre>
 * java -jar fabric8-informer.jar (--kubeconfig FILE | --server URL [--token T] [--ca FILE | --insecure])
 *      [--namespace NS] [--resources configmaps,pods] [--http-watches] [--watch-list]
 * </pre>
 *
 * --http-watches sets fabric8's Config.onlyHttpWatches (no WebSocket); --watch-list its
 * Config.watchList (the streaming list). Without --namespace it watches all namespaces.
 *
 * Prints, in the line protocol of LineProtocol, one line per event
 * {"event":"ADD|UPDATE|DELETE","resource":"configmaps","key":"ns/name","rv":"123"},
 * {"event":"synced","resource":...,"count":N} once an informer has synced, and
 * {"request":{"method":"GET","uri":"...","websocket":true}} for every request the client sends
 * (a {"response":...} line for a refused WebSocket handshake). On SIGTERM (or the end of stdin)
 * it stops the informers and closes the client before it exits.
 */
public final class Fabric8Informer {
  private static String key(HasMetadata o) {
    return LineProtocol.key(o.getMetadata().getNamespace(), o.getMetadata().getName());
  }

  private static void event(String what, String resource, HasMetadata o) {
    LineProtocol.event(what, resource, o.getMetadata().getNamespace(), o.getMetadata().getName(),
        o.getMetadata().getResourceVersion());
  }

  /** Observes every request the client sends; changes nothing. */
  private static final class RequestLog implements Interceptor {
    @Override
    public void before(BasicBuilder builder, HttpRequest request, RequestTags tags) {
      ObjectNode r = JSON.createObjectNode();
      r.put("method", request.method()).put("uri", request.uri().toString())
          .put("websocket", builder instanceof WebSocket.Builder);
      ObjectNode line = JSON.createObjectNode();
      line.set("request", r);
      out(line);
    }

    @Override
    public CompletableFuture<Boolean> afterFailure(BasicBuilder builder, HttpResponse<?> response, RequestTags tags) {
      if (builder instanceof WebSocket.Builder) {
        ObjectNode r = JSON.createObjectNode();
        r.put("uri", response.request().uri().toString()).put("websocket", true).put("code", response.code());
        ObjectNode line = JSON.createObjectNode();
        line.set("response", r);
        out(line);
      }
      return CompletableFuture.completedFuture(false);
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> opt = LineProtocol.options(args, "--http-watches", "--watch-list", "--insecure");
    // fabric8's own configuration sources (system properties), so that everything not named
    // on the command line keeps the client's defaults.
    System.setProperty(Config.KUBERNETES_AUTH_TRYSERVICEACCOUNT_SYSTEM_PROPERTY, "false");
    if (opt.containsKey("--kubeconfig")) {
      System.setProperty(Config.KUBERNETES_KUBECONFIG_FILE, opt.get("--kubeconfig"));
    } else if (opt.containsKey("--server")) {
      System.setProperty(Config.KUBERNETES_AUTH_TRYKUBECONFIG_SYSTEM_PROPERTY, "false");
      System.setProperty(Config.KUBERNETES_MASTER_SYSTEM_PROPERTY, opt.get("--server"));
      if (opt.containsKey("--token")) {
        System.setProperty(Config.KUBERNETES_OAUTH_TOKEN_SYSTEM_PROPERTY, opt.get("--token"));
      }
      if (opt.containsKey("--ca")) {
        System.setProperty(Config.KUBERNETES_CA_CERTIFICATE_FILE_SYSTEM_PROPERTY, opt.get("--ca"));
      }
      if (opt.containsKey("--insecure")) {
        System.setProperty(Config.KUBERNETES_TRUST_CERT_SYSTEM_PROPERTY, "true");
      }
    } else {
      System.err.println("--kubeconfig FILE or --server URL is required");
      System.exit(2);
    }
    Config config = Config.autoConfigure(null);
    if (opt.containsKey("--http-watches")) {
      config.setOnlyHttpWatches(true);
    }
    if (opt.containsKey("--watch-list")) {
      config.setWatchList(true);
    }
    String namespace = opt.get("--namespace");
    String[] resources = opt.getOrDefault("--resources", "configmaps").split(",");

    KubernetesClient client = new KubernetesClientBuilder().withConfig(config)
        .withHttpClientBuilderConsumer(b -> b.addOrReplaceInterceptor("request-log", new RequestLog()))
        .build();
    Map<String, SharedIndexInformer<? extends HasMetadata>> informers = new LinkedHashMap<>();
    for (String resource : resources) {
      SharedIndexInformer<? extends HasMetadata> informer;
      switch (resource) {
        case "configmaps":
          informer = namespace == null ? client.configMaps().inAnyNamespace().runnableInformer(0)
              : client.configMaps().inNamespace(namespace).runnableInformer(0);
          break;
        case "pods":
          informer = namespace == null ? client.pods().inAnyNamespace().runnableInformer(0)
              : client.pods().inNamespace(namespace).runnableInformer(0);
          break;
        default:
          System.err.println("unknown resource " + resource + " (configmaps, pods)");
          System.exit(2);
          return;
      }
      addHandler(informer, resource);
      informers.put(resource, informer);
    }
    for (Map.Entry<String, SharedIndexInformer<? extends HasMetadata>> e : informers.entrySet()) {
      SharedIndexInformer<? extends HasMetadata> informer = e.getValue();
      informer.start().whenComplete((v, t) -> {
        out(t != null ? LineProtocol.line("error", e.getKey()).put("message", String.valueOf(t))
            : LineProtocol.line("synced", e.getKey()).put("count", informer.getStore().list().size()));
      });
    }

    LineProtocol.serveUntilStopped(() -> {
      Map<String, Map<String, String>> dump = new LinkedHashMap<>();
      informers.forEach((resource, informer) -> {
        Map<String, String> state = dump.computeIfAbsent(resource, r -> new TreeMap<>());
        for (HasMetadata o : informer.getStore().list()) {
          state.put(key(o), o.getMetadata().getResourceVersion());
        }
      });
      return dump;
    });
    informers.values().forEach(SharedIndexInformer::stop);
    client.close();
    LineProtocol.stopped();
  }

  private static <T extends HasMetadata> void addHandler(SharedIndexInformer<T> informer, String resource) {
    informer.addEventHandler(new ResourceEventHandler<T>() {
      @Override
      public void onAdd(T o) {
        event("ADD", resource, o);
      }

      @Override
      public void onUpdate(T before, T after) {
        event("UPDATE", resource, after);
      }

      @Override
      public void onDelete(T o, boolean finalStateUnknown) {
        event("DELETE", resource, o);
      }
    });
  }
}
