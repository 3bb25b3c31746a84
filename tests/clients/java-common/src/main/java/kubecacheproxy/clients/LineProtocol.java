package kubecacheproxy.clients;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.Supplier;

/**
 * The line protocol of the Java test clients (tests/clients/java, tests/clients/client-java),
 * which the real-cluster tests read: one JSON object per line on stdout, each with "mono"
 * (System.nanoTime() in seconds: CLOCK_MONOTONIC on Linux, the clock of Python's
 * time.monotonic()); the stdin line "dump" answers {"dump":{resource:{"ns/name":"rv"}}}; SIGTERM
 * or the end of stdin stops the client. Both builds compile this file with their own sources
 * (Jackson comes with either library).
 */
public final class LineProtocol {
  public static final ObjectMapper JSON = new ObjectMapper();

  private LineProtocol() {}

  /** Prints `line` with its "mono" time. */
  public static synchronized void out(ObjectNode line) {
    line.put("mono", System.nanoTime() / 1e9);
    System.out.println(line.toString());
    System.out.flush();
  }

  /** {"event": what, "resource": resource}, to add to and print. */
  public static ObjectNode line(String what, String resource) {
    return JSON.createObjectNode().put("event", what).put("resource", resource);
  }

  /** Prints an object's event: {"event","resource","key","rv"}. */
  public static void event(String what, String resource, String namespace, String name, String rv) {
    out(line(what, resource).put("key", key(namespace, name)).put("rv", rv));
  }

  public static String key(String namespace, String name) {
    return (namespace == null || namespace.isEmpty() ? "" : namespace + "/") + name;
  }

  /** The command line's "--name value" options, and `flags` (without a value) as "true"; exits 2
   * on anything else. */
  public static Map<String, String> options(String[] args, String... flags) {
    Map<String, String> opt = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (java.util.Arrays.asList(flags).contains(a)) {
        opt.put(a, "true");
      } else if (a.startsWith("--") && i + 1 < args.length) {
        opt.put(a, args[++i]);
      } else {
        System.err.println("unknown argument " + a);
        System.exit(2);
      }
    }
    return opt;
  }

  /** Answers "dump" on stdin with `dump`'s stores until SIGTERM or the end of stdin. */
  public static void serveUntilStopped(Supplier<Map<String, Map<String, String>>> dump) throws InterruptedException {
    CountDownLatch stop = new CountDownLatch(1);
    sun.misc.Signal.handle(new sun.misc.Signal("TERM"), s -> stop.countDown());
    Thread stdin = new Thread(() -> {
      try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
        String l;
        while ((l = in.readLine()) != null) {
          if (l.trim().equals("dump")) {
            ObjectNode line = JSON.createObjectNode();
            line.set("dump", JSON.valueToTree(dump.get()));
            out(line);
          }
        }
      } catch (Exception ignored) {
        // stdin closed
      }
      stop.countDown();
    }, "stdin");
    stdin.setDaemon(true);
    stdin.start();
    stop.await();
  }

  /** Prints {"event":"stopped"} and exits 0. */
  public static void stopped() {
    out(JSON.createObjectNode().put("event", "stopped"));
    System.exit(0);
  }
}
