// protofixtures writes the protobuf encoding of the API machinery's JSON fixtures
// (../shared/testdata/k8s-api-fixtures), as kube-apiserver would send them, and what
// client-go reads of each object's metadata: the corpus of the proxy's protobuf reader
// tests and fuzz seeds (tests/testdata/protobuf, cache/protobuf_object.h).
//
//	protofixtures -in DIR -out DIR
//
// For each fixture of a type client-go's scheme knows and that has a protobuf encoding,
// OUT gets NAME.pb (the `k8s\0` envelope around runtime.Unknown) and NAME.meta.json.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

type objectMeta struct {
	APIVersion               string            `json:"apiVersion"`
	Kind                     string            `json:"kind"`
	Name                     string            `json:"name"`
	GenerateName             string            `json:"generateName"`
	Namespace                string            `json:"namespace"`
	UID                      string            `json:"uid"`
	ResourceVersion          string            `json:"resourceVersion"`
	Generation               int64             `json:"generation"`
	CreationTimestampSeconds int64             `json:"creationTimestampSeconds"`
	HasDeletionTimestamp     bool              `json:"hasDeletionTimestamp"`
	Labels                   map[string]string `json:"labels"`
	Annotations              map[string]string `json:"annotations"`
}

func main() {
	in := flag.String("in", "", "folder of JSON fixtures")
	out := flag.String("out", "", "folder to write NAME.pb and NAME.meta.json to")
	flag.Parse()
	if *in == "" || *out == "" {
		log.Fatal("-in and -out are required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(*in, "*.json"))
	if err != nil {
		log.Fatal(err)
	}
	sort.Strings(files)
	decoder := scheme.Codecs.UniversalDeserializer()
	encoder := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	written, skipped := 0, 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			log.Fatal(err)
		}
		obj, gvk, err := decoder.Decode(data, nil, nil)
		if err != nil {
			skipped++ // a type client-go's scheme does not register
			continue
		}
		accessor, err := meta.Accessor(obj)
		if err != nil {
			skipped++ // not an object with ObjectMeta (a list, a review)
			continue
		}
		var encoded bytes.Buffer
		if err := encoder.Encode(obj, &encoded); err != nil {
			skipped++ // no protobuf encoding
			continue
		}
		m := objectMeta{
			APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind,
			Name: accessor.GetName(), GenerateName: accessor.GetGenerateName(), Namespace: accessor.GetNamespace(),
			UID: string(accessor.GetUID()), ResourceVersion: accessor.GetResourceVersion(),
			Generation: accessor.GetGeneration(), CreationTimestampSeconds: accessor.GetCreationTimestamp().Unix(),
			HasDeletionTimestamp: accessor.GetDeletionTimestamp() != nil,
			Labels: accessor.GetLabels(), Annotations: accessor.GetAnnotations(),
		}
		metaJSON, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			log.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(file), ".json")
		if err := os.WriteFile(filepath.Join(*out, base+".pb"), encoded.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*out, base+".meta.json"), append(metaJSON, '\n'), 0o644); err != nil {
			log.Fatal(err)
		}
		written++
	}
	log.Printf("%d objects written, %d fixtures skipped", written, skipped)
}
