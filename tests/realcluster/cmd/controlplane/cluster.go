package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// cluster is the admin's view of the apiserver, for bootstrapping and churn.
type cluster struct {
	url    string
	caPEM  []byte
	config *rest.Config
	cs     *kubernetes.Clientset
	alive  func() bool // the apiserver process still runs
}

func newCluster(url string, caPEM []byte) *cluster {
	cfg := &rest.Config{Host: url, BearerToken: "admin-token", TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS: 500, Burst: 1000, Timeout: 30 * time.Second}
	return &cluster{url: url, caPEM: caPEM, config: cfg, cs: kubernetes.NewForConfigOrDie(cfg)}
}

func (c *cluster) waitReady(timeout time.Duration) error {
	return c.waitReadyEvery(timeout, 200*time.Millisecond)
}

// waitAnswering asks /readyz every 20 ms until the apiserver answers at all (any status):
// when it serves requests again after a start; returns that moment.
func (c *cluster) waitAnswering(timeout time.Duration) (time.Time, error) {
	client, err := rest.HTTPClientFor(c.config)
	if err != nil {
		return time.Time{}, err
	}
	client.Timeout = time.Second
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if c.alive != nil && !c.alive() {
			return time.Time{}, fmt.Errorf("kube-apiserver exited")
		}
		resp, err := client.Get(c.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			return time.Now(), nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("no answer after %v", timeout)
}

// waitReadyEvery asks /readyz every `interval` until it answers ok.
func (c *cluster) waitReadyEvery(timeout, interval time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if c.alive != nil && !c.alive() {
			return fmt.Errorf("kube-apiserver exited")
		}
		body, err := c.cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && string(body) == "ok" {
			return nil
		}
		last = err
		time.Sleep(interval)
	}
	return fmt.Errorf("not ready after %v: %v", timeout, last)
}

func writeKubeconfig(path, url string, caPEM []byte, token string) error {
	body := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: real
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: user
  user:
    token: %s
contexts:
- name: real
  context:
    cluster: real
    user: user
current-context: real
`, url, b64(caPEM), token)
	return os.WriteFile(path, []byte(body), 0o600)
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// bootstrap installs the RBAC of the test identities, the Widget CRD and the sample data
// (the same objects the bundled test apiserver's --sample-data creates).
func (c *cluster) bootstrap(ctx context.Context, sample bool) error {
	cs := c.cs
	for _, ns := range []string{"demo", "team-a", "limited"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return err
		}
	}
	// limited may do anything, in namespace limited only. (The "edit" ClusterRole is
	// aggregated by kube-controller-manager, which is not always running here.)
	if _, err := cs.RbacV1().Roles("limited").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "limited-all"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	if _, err := cs.RbacV1().RoleBindings("limited").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "limited-all"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "limited-all"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "limited"}},
	}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	// The proxy's identity: read and watch what it caches, and ask the apiserver to review
	// the tokens and requests of its gateway's callers.
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-cache-proxy"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
		},
	}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-cache-proxy"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "kube-cache-proxy"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "kube-cache-proxy"}},
	}, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	if err := c.installWidgetCRD(ctx); err != nil {
		return fmt.Errorf("widget CRD: %w", err)
	}
	if !sample {
		return nil
	}
	for i := 0; i < 3; i++ {
		for _, p := range []struct{ ns, name, node string }{
			{"default", fmt.Sprintf("web-%d", i), "node-0"}, {"demo", fmt.Sprintf("api-%d", i), "node-1"},
		} {
			if _, err := cs.CoreV1().Pods(p.ns).Create(ctx, samplePod(p.name, p.node, i), metav1.CreateOptions{}); ignoreExists(err) != nil {
				return err
			}
		}
	}
	for i := 0; i < 2; i++ {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("configmap-%d", i), Labels: map[string]string{"app": fmt.Sprintf("app-%d", i)}},
			Data: map[string]string{"config.yaml": fmt.Sprintf("key: value-%d\nother: 1\n", i), "mode": "production"}}
		if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return err
		}
	}
	dyn, err := dynamic.NewForConfig(c.config)
	if err != nil {
		return err
	}
	for i := 0; i < 2; i++ {
		color := map[bool]string{true: "blue", false: "red"}[i%2 == 1]
		w := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": fmt.Sprintf("widget-%d", i), "labels": map[string]any{"app": fmt.Sprintf("app-%d", i)}},
			"spec":     map[string]any{"color": color, "size": int64(i)},
		}}
		if _, err := dyn.Resource(widgetsGVR).Namespace("default").Create(ctx, w, metav1.CreateOptions{}); ignoreExists(err) != nil {
			return err
		}
	}
	return nil
}

func samplePod(name, node string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": fmt.Sprintf("app-%d", i), "tier": "backend"},
			Annotations: map[string]string{"prometheus.io/scrape": "true"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "main", Image: "registry.example.com/app:1.2.3",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}}},
	}
}

// installWidgetCRD creates widgets.example.com as the test apiserver serves it (status
// subresource, printer columns, spec.color selectable) and waits until it is served.
func (c *cluster) installWidgetCRD(ctx context.Context) error {
	client, err := apiextclient.NewForConfig(c.config)
	if err != nil {
		return err
	}
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: "example.com", Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget",
				ListKind: "WidgetList", ShortNames: []string{"wd"}, Categories: []string{"all"}},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextv1.JSONSchemaProps{
							"color": {Type: "string"}, "size": {Type: "integer"}}},
						"status": {Type: "object", XPreserveUnknownFields: ptr(true)},
					},
				}},
				Subresources:     &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
				SelectableFields: []apiextv1.SelectableField{{JSONPath: ".spec.color"}},
				AdditionalPrinterColumns: []apiextv1.CustomResourceColumnDefinition{
					{Name: "Color", Type: "string", JSONPath: ".spec.color", Description: "The widget's color"},
					{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
					{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
				},
			}},
		},
	}
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); ignoreExists(err) != nil {
		return err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err == nil {
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextv1.Established && cond.Status == apiextv1.ConditionTrue {
					// Established means the API is registered; discovery follows shortly.
					if _, err := c.cs.Discovery().ServerResourcesForGroupVersion("example.com/v1"); err == nil {
						return nil
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("CRD not established in 60s")
}

func ptr[T any](v T) *T { return &v }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
