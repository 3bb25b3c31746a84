// Command hollownode is a kubemark hollow node (k8s.io/kubernetes/cmd/kubemark, the same
// module version as the control plane) whose servers listen on 127.0.0.1 only: the real
// kubelet (--morph=kubelet) or kube-proxy (--morph=proxy) code against the apiserver, with a
// fake container runtime, fake image service, stub container manager and fake cAdvisor.
//
// kubemark's own command builds the kubelet's configuration with the server bound to 0.0.0.0
// and no flag to change it (pkg/kubemark.GetHollowKubeletConfig), and puts its root folder and
// runtime socket under /tmp. This command builds the same hollow kubelet from pkg/kubemark and
// only changes those: the kubelet server on --bind-address:--kubelet-port, no read-only port,
// everything it writes under --root-dir. (The node's address stays the machine's: the kubelet
// refuses a loopback node IP.) The proxy morph is
// kubemark's own (pkg/proxy/kubemark), which serves nothing (no healthz, no metrics address).
package main

import (
	"context"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	clientset "k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	remote "k8s.io/cri-client/pkg"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
	kubemarkproxy "k8s.io/kubernetes/pkg/proxy/kubemark"

	_ "k8s.io/component-base/metrics/prometheus/restclient" // client metrics, as kubemark registers them
)

type options struct {
	kubeconfig, name, morph, rootDir, bindAddress, contentType string
	kubeletPort, maxPods, burst                                int
	qps                                                        float32
}

func main() {
	o := options{}
	fs := pflag.CommandLine
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of this node's identity")
	fs.StringVar(&o.name, "name", "", "the node's name")
	fs.StringVar(&o.morph, "morph", "", "kubelet or proxy")
	fs.StringVar(&o.rootDir, "root-dir", "", "folder for everything the kubelet writes (created)")
	fs.StringVar(&o.bindAddress, "bind-address", "127.0.0.1", "address of the kubelet's server")
	fs.IntVar(&o.kubeletPort, "kubelet-port", 0, "the kubelet server's port (required for the kubelet)")
	fs.IntVar(&o.maxPods, "max-pods", 110, "pods the kubelet admits")
	fs.StringVar(&o.contentType, "kube-api-content-type", "application/vnd.kubernetes.protobuf", "as kubemark's flag")
	fs.Float32Var(&o.qps, "kube-api-qps", 10, "as kubemark's flag")
	fs.IntVar(&o.burst, "kube-api-burst", 20, "as kubemark's flag")
	klog.InitFlags(nil)
	fs.AddGoFlagSet(goflag.CommandLine)
	pflag.Parse()
	if o.kubeconfig == "" || o.name == "" {
		klog.Fatal("--kubeconfig and --name are required")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	var err error
	switch o.morph {
	case "kubelet":
		err = runKubelet(ctx, &o)
	case "proxy":
		err = runProxy(ctx, &o)
	default:
		err = fmt.Errorf("unknown --morph %q (kubelet or proxy)", o.morph)
	}
	if err != nil {
		klog.ErrorS(err, "hollow node failed", "morph", o.morph)
		klog.Flush()
		os.Exit(1)
	}
}

func clientConfig(o *options, userAgent string) (*restclient.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.ContentType, cfg.QPS, cfg.Burst, cfg.UserAgent = o.contentType, o.qps, o.burst, userAgent
	return cfg, nil
}

// runKubelet runs kubemark's hollow kubelet; it returns when ctx ends (the kubelet has no
// graceful stop: the process exits).
func runKubelet(ctx context.Context, o *options) error {
	if o.rootDir == "" || o.kubeletPort == 0 {
		return fmt.Errorf("--root-dir and --kubelet-port are required for the kubelet")
	}
	cfg, err := clientConfig(o, "hollow-kubelet")
	if err != nil {
		return err
	}
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	flags, kc := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName: o.name, KubeletPort: o.kubeletPort, KubeletReadOnlyPort: 0, MaxPods: o.maxPods,
		NodeLabels: map[string]string{},
	})
	// GetHollowKubeletConfig made its folders under /tmp: use ours instead.
	_ = os.RemoveAll(flags.RootDirectory)
	flags.RootDirectory = o.rootDir
	kc.StaticPodPath = filepath.Join(o.rootDir, "static-pods")
	kc.PodLogsDir = filepath.Join(o.rootDir, "pod-logs")
	for _, d := range []string{kc.StaticPodPath, kc.PodLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	kc.Address = o.bindAddress

	// As kubemark: heartbeats (lease, node status) unthrottled, timing out at the shorter of
	// the status period and the lease duration.
	heartbeat := *cfg
	heartbeat.Timeout = min(kc.NodeStatusUpdateFrequency.Duration, time.Duration(kc.NodeLeaseDurationSeconds)*time.Second)
	heartbeat.QPS = -1
	heartbeatClient, err := clientset.NewForConfig(&heartbeat)
	if err != nil {
		return err
	}
	endpoint := "unix://" + filepath.Join(o.rootDir, "runtime.sock")
	fakeRuntime := fakeremote.NewFakeRemoteRuntime()
	if err := fakeRuntime.Start(endpoint); err != nil {
		return fmt.Errorf("fake runtime: %w", err)
	}
	defer fakeRuntime.Stop()
	runtimeService, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).
		WithConnectionTimeout(15 * time.Second).Build(ctx)
	if err != nil {
		return fmt.Errorf("runtime service: %w", err)
	}
	hollow := kubemark.NewHollowKubelet(flags, kc, client, heartbeatClient, &cadvisortest.Fake{NodeName: o.name},
		fakeRuntime.ImageService, runtimeService, cm.NewStubContainerManager())
	go hollow.Run(ctx)
	<-ctx.Done()
	return nil
}

// runProxy runs kubemark's hollow kube-proxy (a fake proxier behind the real informers).
func runProxy(ctx context.Context, o *options) error {
	cfg, err := clientConfig(o, "hollow-proxy")
	if err != nil {
		return err
	}
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	recorder := broadcaster.NewRecorder(legacyscheme.Scheme, "kube-proxy")
	proxy := kubemarkproxy.NewHollowProxy(o.name, client, client.CoreV1(), broadcaster, recorder)
	done := make(chan error, 1)
	go func() { done <- proxy.Run() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return nil
	}
}
