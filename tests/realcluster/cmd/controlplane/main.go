// Command controlplane runs a real Kubernetes control plane on 127.0.0.1 for the tests:
// etcd and kube-apiserver as child processes (binaries from --bin), with generated PKI,
// RBAC and Node authorization, NodeRestriction admission, a static token file of test
// identities, the test CRD and the sample data. Once the apiserver is ready and loaded it
// writes DIR/url, DIR/control and one kubeconfig per identity (admin, limited, nobody, proxy,
// controller-manager, scheduler), then prints "listening on 127.0.0.1:PORT" (the apiserver's address).
//
// It serves control endpoints on DIR/control (POST /restart-apiserver, /compact,
// /churn?nodes=N&events=R; GET /revision) for what a test must do to the cluster that no
// API request does. SIGTERM stops the children and exits; their PIDs are also in DIR/*.pid
// so that a stop script can end them if this process died.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

type identity struct{ name, token, groups string }

// The test identities. limited is confined to namespace "limited" by a RoleBinding;
// nobody has no rights; proxy gets what the proxy's ClusterRole grants; node-1 is a kubelet
// (group system:nodes), which the Node authorizer lets list only its own pods, by selector.
var identities = []identity{
	{"admin", "admin-token", "system:masters"},
	{"limited", "limited-token", ""},
	{"nobody", "nobody-token", ""},
	{"proxy", "proxy-token", ""},
	{"controller-manager", "kcm-token", ""},
	{"scheduler", "scheduler-token", ""},
	{"node-1", "node-1-token", "system:nodes"},
}

// userName is the Kubernetes user each identity authenticates as.
func userName(id identity) string {
	switch id.name {
	case "proxy":
		return "kube-cache-proxy"
	case "controller-manager":
		return "system:kube-controller-manager"
	case "node-1":
		return "system:node:fake-node-1" // a kubelet, for the Node authorizer
	case "scheduler":
		return "system:kube-scheduler"
	}
	return id.name
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// child is one supervised process whose PID is kept in DIR/<name>.pid.
type child struct {
	name, dir string
	argv      []string
	mu        sync.Mutex
	cmd       *exec.Cmd
}

func (c *child) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	logf, err := os.OpenFile(filepath.Join(c.dir, c.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	c.cmd = cmd
	go func() { cmd.Wait(); logf.Close() }()
	return os.WriteFile(filepath.Join(c.dir, c.name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
}

// kill ends the process at once (SIGKILL), as a crash or an OOM kill would.
func (c *child) kill() {
	c.mu.Lock()
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill()
	for cmd.ProcessState == nil {
		time.Sleep(5 * time.Millisecond)
	}
	os.Remove(filepath.Join(c.dir, c.name+".pid"))
}

// alive says whether the process runs (false once it exited on its own).
func (c *child) alive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd != nil && c.cmd.ProcessState == nil
}

func (c *child) stop() {
	c.mu.Lock()
	cmd := c.cmd
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for cmd.ProcessState == nil {
			time.Sleep(20 * time.Millisecond)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	os.Remove(filepath.Join(c.dir, c.name+".pid"))
}

func main() {
	dir := flag.String("dir", "", "working directory (PKI, data, logs, kubeconfigs)")
	bin := flag.String("bin", "", "folder with kube-apiserver and etcd")
	sample := flag.Bool("sample-data", true, "load the sample data")
	featureGates := flag.String("feature-gates", "", "kube-apiserver's --feature-gates (e.g. ShardedListAndWatch=true)")
	flag.Parse()
	if *dir == "" || *bin == "" {
		log.Fatal("--dir and --bin are required")
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		log.Fatal(err)
	}
	*dir = abs
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		log.Fatal(err)
	}

	p, err := newPKI(*dir)
	if err != nil {
		log.Fatalf("generating PKI: %v", err)
	}
	tokenFile := filepath.Join(*dir, "tokens.csv")
	var tokens []byte
	for _, id := range identities {
		tokens = append(tokens, fmt.Sprintf("%s,%s,%s,%q\n", id.token, userName(id), id.name, id.groups)...)
	}
	if err := os.WriteFile(tokenFile, tokens, 0o600); err != nil {
		log.Fatal(err)
	}

	etcdPort, peerPort, apiPort := freePort(), freePort(), freePort()
	etcd := &child{name: "etcd", dir: *dir, argv: []string{filepath.Join(*bin, "etcd"),
		"--data-dir", filepath.Join(*dir, "etcd-data"),
		"--client-port", strconv.Itoa(etcdPort), "--peer-port", strconv.Itoa(peerPort)}}
	if err := etcd.start(); err != nil {
		log.Fatalf("starting etcd: %v", err)
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	if err := waitTCP(fmt.Sprintf("127.0.0.1:%d", etcdPort), 60*time.Second); err != nil {
		log.Fatalf("etcd did not start: %v", err)
	}

	apiserver := &child{name: "kube-apiserver", dir: *dir, argv: []string{filepath.Join(*bin, "kube-apiserver"),
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(apiPort),
		"--tls-cert-file", p.serverCert, "--tls-private-key-file", p.serverKey, "--client-ca-file", p.caCert,
		"--token-auth-file", tokenFile,
		"--authorization-mode", "Node,RBAC",
		"--service-account-key-file", p.saPub, "--service-account-signing-key-file", p.saKey,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--cert-dir", filepath.Join(*dir, "apiserver-certs"),
		// Pods are created without a kubelet or the token controller behind them.
		"--disable-admission-plugins", "ServiceAccount",
		// What a real cluster's kubelets meet beside the Node authorizer: a node may write only
		// its own Node, Lease and the Pods bound to it (hollow nodes, tests/realcluster/fleet.py).
		"--enable-admission-plugins", "NodeRestriction",
		"--allow-privileged",
		// The tests compact etcd themselves (/compact); nothing compacts behind them.
		"--etcd-compaction-interval", "0",
		"--profiling=false",
		// The advertised address is loopback, which the endpoint reconciler refuses; no
		// in-cluster client needs the kubernetes Service's endpoints here.
		"--endpoint-reconciler-type", "none",
	}}
	if *featureGates != "" {
		apiserver.argv = append(apiserver.argv, "--feature-gates", *featureGates)
	}
	if err := apiserver.start(); err != nil {
		log.Fatalf("starting kube-apiserver: %v", err)
	}
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	cl := newCluster(apiURL, p.caPEM)
	cl.alive = apiserver.alive
	if err := cl.waitReady(120 * time.Second); err != nil {
		log.Fatalf("kube-apiserver did not become ready (see %s): %v", filepath.Join(*dir, "kube-apiserver.log"), err)
	}
	for _, id := range identities {
		if err := writeKubeconfig(filepath.Join(*dir, id.name+".kubeconfig"), apiURL, p.caPEM, id.token); err != nil {
			log.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := cl.bootstrap(ctx, *sample); err != nil {
		log.Fatalf("loading RBAC, CRD and sample data: %v", err)
	}

	ctl := &control{cluster: cl, apiserver: apiserver, etcdURL: etcdURL, ctx: ctx}
	ctlListener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ctlListener, ctl.handler())
	if err := os.WriteFile(filepath.Join(*dir, "control"), []byte("http://"+ctlListener.Addr().String()+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*dir, "url"), []byte(apiURL+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("listening on 127.0.0.1:%d\n", apiPort)
	os.Stdout.Sync()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	cancel()
	ctl.stopChurn()
	ctl.stopSecond()
	apiserver.stop()
	etcd.stop()
}

func waitTCP(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
