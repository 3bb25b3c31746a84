// Command watchfanout measures watch fan-out against a Kubernetes API endpoint: it opens
// --watchers HTTP/1.1 watches of pods in one namespace (one connection each, as clients
// that do not share a process do; with --http2, one HTTP/2 connection per
// --per-connection watches, as client-go processes of that many informers), creates pods there at --rate per second for --seconds
// through --create-kubeconfig, and reports, as one JSON line, how long each ADDED event
// took from just before its create request to each watcher (p50, p99, max) and how many
// deliveries arrived, and how many events of any kind but bookmarks. With --ready-file it
// creates that file once every watch has its answer. The created time travels in the pod's kcp-bench/created annotation.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

type event struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"object"`
}

func main() {
	url := flag.String("url", "", "base URL watched (the proxy or the apiserver)")
	token := flag.String("token", "", "bearer token for --url (empty: none)")
	namespace := flag.String("namespace", "bench", "namespace of the pods")
	watchers := flag.Int("watchers", 1000, "watches to open")
	rate := flag.Float64("rate", 10, "pods created per second")
	seconds := flag.Float64("seconds", 20, "how long to create pods")
	createKubeconfig := flag.String("create-kubeconfig", "", "kubeconfig the pods are created with")
	useHTTP2 := flag.Bool("http2", false, "watch over HTTP/2 (ALPN h2; --url must be https)")
	perConnection := flag.Int("per-connection", 10, "with --http2: watches sharing one connection (one client process)")
	readyFile := flag.String("ready-file", "", "created once every watch has its answer, before the first pod")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", *createKubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	cs := kubernetes.NewForConfigOrDie(cfg)

	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, // loopback benchmark only
		ForceAttemptHTTP2:   false,
		TLSNextProto:        map[string]func(string, *tls.Conn) http.RoundTripper{},
		MaxIdleConnsPerHost: -1,
	}
	http11 := &http.Client{Transport: transport}
	// One transport per simulated process: its watches share one HTTP/2 connection.
	clients := map[int]*http.Client{}
	clientFor := func(i int) *http.Client {
		if !*useHTTP2 {
			return http11
		}
		if c, ok := clients[i / *perConnection]; ok {
			return c
		}
		c := &http.Client{Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, // loopback benchmark only
			ForceAttemptHTTP2: true,
		}}
		clients[i / *perConnection] = c
		return c
	}
	var h2responses atomic.Int64

	var mu sync.Mutex
	var latencies []time.Duration
	// deliveries: ADDED events of the created pods; events: every event but bookmarks (the
	// scheduler's updates too), which is what the server wrote.
	var deliveries, events, ready atomic.Int64
	path := fmt.Sprintf("%s/api/v1/namespaces/%s/pods?watch=1&resourceVersion=0&allowWatchBookmarks=true", *url, *namespace)
	for i := 0; i < *watchers; i++ {
		client := clientFor(i)
		go func() {
			req, _ := http.NewRequest("GET", path, nil)
			if *token != "" {
				req.Header.Set("Authorization", "Bearer "+*token)
			}
			resp, err := client.Do(req)
			if err != nil {
				log.Printf("watch: %v", err)
				return
			}
			defer resp.Body.Close()
			if resp.ProtoMajor == 2 {
				h2responses.Add(1)
			}
			ready.Add(1)
			scanner := bufio.NewScanner(resp.Body)
			scanner.Buffer(make([]byte, 1<<20), 16<<20)
			for scanner.Scan() {
				now := time.Now()
				var ev event
				if json.Unmarshal(scanner.Bytes(), &ev) != nil || ev.Type == "BOOKMARK" {
					continue
				}
				events.Add(1)
				if ev.Type != "ADDED" {
					continue
				}
				created, err := strconv.ParseInt(ev.Object.Metadata.Annotations["kcp-bench/created"], 10, 64)
				if err != nil {
					continue
				}
				mu.Lock()
				latencies = append(latencies, now.Sub(time.Unix(0, created)))
				mu.Unlock()
				deliveries.Add(1)
			}
		}()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for ready.Load() < int64(*watchers) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if *readyFile != "" {
		if err := os.WriteFile(*readyFile, nil, 0o644); err != nil {
			log.Fatal(err)
		}
	}

	ctx := context.Background()
	pods := int(*rate * *seconds)
	period := time.Duration(float64(time.Second) / *rate)
	start := time.Now()
	for i := 0; i < pods; i++ {
		time.Sleep(time.Until(start.Add(time.Duration(i) * period)))
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "fanout-", Annotations: map[string]string{
				"kcp-bench/created": strconv.FormatInt(time.Now().UnixNano(), 10)}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example.com/app:1"}}},
		}
		if _, err := cs.CoreV1().Pods(*namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			log.Fatalf("create: %v", err)
		}
	}
	want := int64(pods) * ready.Load()
	settle := time.Now().Add(30 * time.Second)
	for deliveries.Load() < want && time.Now().Before(settle) {
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(latencies, func(a, b int) bool { return latencies[a] < latencies[b] })
	pct := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	out, _ := json.Marshal(map[string]any{
		"watchers": ready.Load(), "pods": pods, "deliveries": deliveries.Load(), "events": events.Load(), "expected": want,
		"p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": pct(1), "http2_watches": h2responses.Load(),
	})
	fmt.Println(string(out))
	os.Exit(0)
}
