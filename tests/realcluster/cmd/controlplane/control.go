package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type secondAPIServer struct {
	child *child
	url   string
}

// control serves what a test must do to the cluster that no API request does.
type control struct {
	cluster   *cluster
	apiserver *child
	etcdURL   string
	ctx       context.Context

	mu         sync.Mutex
	stopped    time.Time        // when the apiserver was last stopped (guarded by mu)
	second     *secondAPIServer // guarded by mu
	churnStops []context.CancelFunc
	churnWG    sync.WaitGroup
}

func (c *control) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /restart-apiserver", func(w http.ResponseWriter, r *http.Request) {
		c.apiserver.stop()
		if err := c.apiserver.start(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := c.cluster.waitReady(120 * time.Second); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "restarted")
	})
	// A kube-apiserver restart in steps, with what a test does meanwhile (writes through
	// the second apiserver, a compaction) between them: stopped (SIGTERM, or SIGKILL with
	// kill=1), then started once `down` has passed since the stop. Each answers when it
	// happened (Unix ms): "answering" is its first HTTP answer after the start (to /readyz,
	// whatever the status: clients are served from then on), "ready" its first ok /readyz.
	mux.HandleFunc("POST /apiserver/stop", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("kill") == "1" {
			c.apiserver.kill()
		} else {
			c.apiserver.stop()
		}
		c.mu.Lock()
		c.stopped = time.Now()
		c.mu.Unlock()
		answerJSON(w, map[string]int64{"stopped": c.stopped.UnixMilli()})
	})
	mux.HandleFunc("POST /apiserver/start", func(w http.ResponseWriter, r *http.Request) {
		down, _ := time.ParseDuration(r.URL.Query().Get("down"))
		c.mu.Lock()
		stopped := c.stopped
		c.mu.Unlock()
		time.Sleep(time.Until(stopped.Add(down))) // the outage's length is the fault's, not a wait for a condition
		if err := c.apiserver.start(); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		started := time.Now()
		answering, err := c.cluster.waitAnswering(120 * time.Second)
		if err == nil {
			err = c.cluster.waitReadyEvery(120*time.Second, 20*time.Millisecond)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		answerJSON(w, map[string]int64{"started": started.UnixMilli(), "answering": answering.UnixMilli(),
			"ready": time.Now().UnixMilli()})
	})
	// A second kube-apiserver on the same etcd (an HA control plane's other member), for
	// writes while the first is down; answers its URL.
	mux.HandleFunc("POST /second-apiserver", func(w http.ResponseWriter, r *http.Request) {
		url, err := c.startSecond()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		answerJSON(w, map[string]string{"url": url})
	})
	mux.HandleFunc("GET /revision", answerRevision(c.revision))
	// Compacts etcd at its current revision: every older resourceVersion is gone for
	// reads that reach etcd (Exact LISTs, watches older than the watch cache's window).
	mux.HandleFunc("POST /compact", answerRevision(c.compact))
	// Background churn like a real cluster's: N fake Nodes, each renewing its Lease every
	// `interval` (default 10s, as kubelets do), and `events` Events written per second.
	mux.HandleFunc("POST /churn", func(w http.ResponseWriter, r *http.Request) {
		nodes, _ := strconv.Atoi(r.URL.Query().Get("nodes"))
		events, _ := strconv.ParseFloat(r.URL.Query().Get("events"), 64)
		interval := 10 * time.Second
		if s := r.URL.Query().Get("interval"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			interval = d
		}
		if err := c.startChurn(nodes, events, interval); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, "churning")
	})
	mux.HandleFunc("POST /churn/stop", func(w http.ResponseWriter, r *http.Request) {
		c.stopChurn()
		fmt.Fprintln(w, "stopped")
	})
	return mux
}

func answerJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// startSecond starts the second apiserver once (the first's flags on another port) and
// waits until it is ready.
func (c *control) startSecond() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.second != nil {
		return c.second.url, nil
	}
	port := freePort()
	argv := append([]string{}, c.apiserver.argv...)
	for i := range argv {
		if argv[i] == "--secure-port" {
			argv[i+1] = strconv.Itoa(port)
		}
	}
	child := &child{name: "kube-apiserver-2", dir: c.apiserver.dir, argv: argv}
	if err := child.start(); err != nil {
		return "", err
	}
	url := fmt.Sprintf("https://127.0.0.1:%d", port)
	second := newCluster(url, c.cluster.caPEM)
	second.alive = child.alive
	if err := second.waitReady(120 * time.Second); err != nil {
		child.stop()
		return "", err
	}
	c.second = &secondAPIServer{child: child, url: url}
	return url, nil
}

func (c *control) stopSecond() {
	c.mu.Lock()
	second := c.second
	c.second = nil
	c.mu.Unlock()
	if second != nil {
		second.child.stop()
	}
}

// answerRevision writes the etcd revision `f` returns, or its error as a 500.
func answerRevision(f func(context.Context) (int64, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rev, err := f(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintln(w, rev)
	}
}

func (c *control) etcd() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{c.etcdURL}, DialTimeout: 5 * time.Second})
}

func (c *control) revision(ctx context.Context) (int64, error) {
	cli, err := c.etcd()
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	resp, err := cli.Get(ctx, "compact_rev_key")
	if err != nil {
		return 0, err
	}
	return resp.Header.Revision, nil
}

func (c *control) compact(ctx context.Context) (int64, error) {
	rev, err := c.revision(ctx)
	if err != nil {
		return 0, err
	}
	cli, err := c.etcd()
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	_, err = cli.Compact(ctx, rev, clientv3.WithCompactPhysical())
	return rev, err
}

func fakeNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods: resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "type": "fake"}},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		},
	}
}

// startChurn creates the fake Nodes (Ready, with room for pods) and their Leases, then
// renews the Leases and writes Events until stopped.
func (c *control) startChurn(nodes int, events float64, interval time.Duration) error {
	cs := c.cluster.cs
	ctx, cancel := context.WithCancel(c.ctx)
	c.mu.Lock()
	c.churnStops = append(c.churnStops, cancel)
	c.mu.Unlock()
	for i := 0; i < nodes; i++ {
		name := fmt.Sprintf("fake-node-%d", i)
		node, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(name), metav1.CreateOptions{})
		if ignoreExists(err) != nil {
			return err
		}
		if err == nil {
			// Status is a subresource: the create dropped it.
			node.Status = fakeNode(name).Status
			if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
		holder, secs := name, int32(40)
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, RenewTime: &metav1.MicroTime{Time: time.Now()}}}
		if _, err := cs.CoordinationV1().Leases("kube-node-lease").Create(ctx, lease, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return err
		}
		c.churnWG.Add(1)
		go func(name string, offset time.Duration) {
			defer c.churnWG.Done()
			c.renewLease(ctx, name, interval, offset)
		}(name, interval*time.Duration(i)/time.Duration(max(nodes, 1)))
	}
	if events > 0 {
		c.churnWG.Add(1)
		go func() {
			defer c.churnWG.Done()
			c.writeEvents(ctx, events)
		}()
	}
	return nil
}

func (c *control) renewLease(ctx context.Context, name string, interval, offset time.Duration) {
	leases := c.cluster.cs.CoordinationV1().Leases("kube-node-lease")
	select {
	case <-ctx.Done():
		return
	case <-time.After(offset):
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		lease, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
			_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		}
		if err != nil && ctx.Err() == nil {
			log.Printf("renewing lease %s: %v", name, err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (c *control) writeEvents(ctx context.Context, perSecond float64) {
	evs := c.cluster.cs.CoreV1().Events("default")
	t := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := metav1.Now()
		ev := &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{GenerateName: "churn-"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "fake-node-0", APIVersion: "v1"},
			Reason:         "Churn", Message: fmt.Sprintf("background event %d", i), Type: corev1.EventTypeNormal,
			FirstTimestamp: now, LastTimestamp: now, Count: 1, Source: corev1.EventSource{Component: "controlplane"},
		}
		if _, err := evs.Create(ctx, ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			log.Printf("writing event: %v", err)
		}
	}
}

func (c *control) stopChurn() {
	c.mu.Lock()
	stops := c.churnStops
	c.churnStops = nil
	c.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	c.churnWG.Wait()
}
