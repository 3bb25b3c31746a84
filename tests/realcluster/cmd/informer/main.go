// Command informer keeps an informer cache of pods, the way Go controllers do, against the
// server in --kubeconfig: a client-go SharedInformerFactory (--kind client-go) or a
// controller-runtime manager's cache (--kind controller-runtime). It prints JSON lines:
// {"event":"synced"} once the cache has synced, one {"event":...} line per change, and on
// the stdin line "dump" {"dump":{"<ns>/<name>":"<resourceVersion>",...}}.
//
// client-go's environment decides the protocol, as in any Go controller:
// KUBE_FEATURE_WatchListClient=false turns the watch-list protocol off (it is on by
// default), and KUBE_WATCHLIST_INCONSISTENCY_DETECTOR=true makes every watch-list sync
// compare the cache with an Exact LIST; a difference panics the process.
//
// --resources configmaps,secrets,deployments.apps/v1 instead keeps one informer per listed
// resource of one SharedInformerFactory (what a controller of several kinds runs) and
// prints {"event":"synced","seconds":S} once all have synced; stdin's end ends it. With
// --report-protocol it then prints {"event":"protocols","counts":{"HTTP/2.0":N,...}}: the
// HTTP version of every response client-go's transport received (its own negotiation).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var stdout = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

func emit(v any) {
	stdout.Lock()
	defer stdout.Unlock()
	_ = stdout.enc.Encode(v)
}

// protocols counts the HTTP version of each response, as negotiated by client-go's transport.
var protocols = struct {
	sync.Mutex
	counts map[string]int
}{counts: map[string]int{}}

type protocolRecorder struct{ next http.RoundTripper }

func (p protocolRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err == nil {
		protocols.Lock()
		protocols.counts[resp.Proto]++
		protocols.Unlock()
	}
	return resp, err
}

var reportProtocol bool

func key(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// dumper answers "dump" lines on stdin with the cache's key -> resourceVersion map.
func serveDumps(list func() ([]corev1.Pod, error)) {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() != "dump" {
			continue
		}
		pods, err := list()
		if err != nil {
			emit(map[string]string{"error": err.Error()})
			continue
		}
		state := make(map[string]string, len(pods))
		for i := range pods {
			state[key(&pods[i])] = pods[i].ResourceVersion
		}
		emit(map[string]any{"dump": state})
	}
	os.Exit(0)
}

func handlers() toolscache.ResourceEventHandlerFuncs {
	return toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				emit(map[string]string{"event": "added", "key": key(p), "rv": p.ResourceVersion})
			}
		},
		UpdateFunc: func(_, obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				emit(map[string]string{"event": "updated", "key": key(p), "rv": p.ResourceVersion})
			}
		},
		DeleteFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok {
				emit(map[string]string{"event": "deleted", "key": key(p)})
			}
		},
	}
}

// shardSelector, when set, makes the pod informer one shard's (KEP-5866): its lists and
// watches carry shardSelector, as a sharded controller's replica sets it.
var shardSelector string

func runClientGo(ctx context.Context, cfg *rest.Config) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.ShardSelector = shardSelector
	}))
	pods := factory.Core().V1().Pods()
	if _, err := pods.Informer().AddEventHandler(handlers()); err != nil {
		log.Fatal(err)
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			log.Fatalf("cache of %v did not sync", typ)
		}
	}
	emit(map[string]string{"event": "synced"})
	serveDumps(func() ([]corev1.Pod, error) {
		objs := pods.Informer().GetStore().List()
		out := make([]corev1.Pod, 0, len(objs))
		for _, o := range objs {
			out = append(out, *o.(*corev1.Pod))
		}
		return out, nil
	})
}

func runControllerRuntime(ctx context.Context, cfg *rest.Config) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: server.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		log.Fatal(err)
	}
	informer, err := mgr.GetCache().GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := informer.AddEventHandler(handlers()); err != nil {
		log.Fatal(err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			log.Fatal(err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		log.Fatal("controller-runtime cache did not sync")
	}
	emit(map[string]string{"event": "synced"})
	var c crcache.Cache = mgr.GetCache()
	serveDumps(func() ([]corev1.Pod, error) {
		list := &corev1.PodList{}
		err := c.List(ctx, list)
		return list.Items, err
	})
}

func main() {
	// A flag set of its own: controller-runtime registers --kubeconfig on the global one.
	flags := flag.NewFlagSet("informer", flag.ExitOnError)
	kubeconfig := flags.String("kubeconfig", "", "kubeconfig of the server to watch")
	kind := flags.String("kind", "client-go", "client-go or controller-runtime")
	resources := flags.String("resources", "", "client-go informers of these resources instead of pods "+
		"(configmaps for core/v1, deployments.apps/v1 for others)")
	flags.StringVar(&shardSelector, "shard-selector", "", "client-go pods: the informer's shardSelector (one shard's informer)")
	flags.BoolVar(&reportProtocol, "report-protocol", false, "with --resources: print the HTTP versions of the responses once synced")
	_ = flags.Parse(os.Args[1:])
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	if reportProtocol {
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return protocolRecorder{rt} })
	}
	cfg.Timeout = 30 * time.Second
	ctx := context.Background()
	if *resources != "" {
		runClientGoResources(ctx, cfg, strings.Split(*resources, ","))
		return
	}
	switch *kind {
	case "client-go":
		runClientGo(ctx, cfg)
	case "controller-runtime":
		runControllerRuntime(ctx, cfg)
	default:
		fmt.Fprintf(os.Stderr, "unknown --kind %q\n", *kind)
		os.Exit(2)
	}
}

// gvr reads "configmaps" (core/v1) or "deployments.apps/v1".
func gvr(name string) schema.GroupVersionResource {
	resource, version, found := strings.Cut(name, "/")
	if !found {
		return schema.GroupVersionResource{Version: "v1", Resource: name}
	}
	plural, group, _ := strings.Cut(resource, ".")
	return schema.GroupVersionResource{Group: group, Version: version, Resource: plural}
}

func runClientGoResources(ctx context.Context, cfg *rest.Config, resources []string) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	for _, r := range resources {
		generic, err := factory.ForResource(gvr(r))
		if err != nil {
			log.Fatalf("%s: %v", r, err)
		}
		_ = generic.Informer()
	}
	started := time.Now()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			log.Fatalf("cache of %v did not sync", typ)
		}
	}
	emit(map[string]any{"event": "synced", "seconds": time.Since(started).Seconds()})
	if reportProtocol {
		protocols.Lock()
		emit(map[string]any{"event": "protocols", "counts": protocols.counts})
		protocols.Unlock()
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
	}
}
