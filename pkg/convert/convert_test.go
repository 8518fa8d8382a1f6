package convert_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/convert"
	// The golden package defines the -update flag every pkg/convert test binary must accept.
	_ "github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
)

func TestReadSources(t *testing.T) {
	input := `---
# a comment only
---
apiVersion: kops.k8s.io/v1alpha2
kind: Cluster
metadata:
  name: c
---
apiVersion: v1
kind: List
items:
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: a}
- apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: b}
---
{"apiVersion": "kops.k8s.io/v1alpha2", "kind": "InstanceGroup", "metadata": {"name": "nodes"}}
`
	sources, err := convert.ReadSources("in.yaml", strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range sources {
		got = append(got, s.String()+" "+s.Object()+" group="+s.Group())
	}
	want := []string{
		`in.yaml: document 1 Cluster "c" group=kops.k8s.io`,
		`in.yaml: document 2, item 1 NodePool "a" group=karpenter.sh`,
		`in.yaml: document 2, item 2 NodePool "b" group=karpenter.sh`,
		`in.yaml: document 3 InstanceGroup "nodes" group=kops.k8s.io`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := convert.ReadSources("bad.yaml", strings.NewReader("- a\n- b\n")); err == nil {
		t.Error("a list document: want an error")
	}
}

func TestDecodeStrictReportsUnknownFields(t *testing.T) {
	pool := &karpv1.NodePool{}
	problems, err := convert.DecodeStrict([]byte(`{"metadata":{"name":"a"},"spec":{"weight":3,"wieght":4,"template":{"spec":{"nodeClassRef":{"name":"x"},"extra":1}}}}`), pool)
	if err != nil {
		t.Fatal(err)
	}
	if pool.Name != "a" || *pool.Spec.Weight != 3 {
		t.Errorf("decoded %+v", pool)
	}
	want := []convert.UnknownField{{Path: "spec.template.spec.extra"}, {Path: "spec.wieght", DidYouMean: "weight"}}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems %+v, want %+v", problems, want)
	}
	// A misspelling deep in a list of the type, whose index the path gives.
	problems, err = convert.DecodeStrict([]byte(`{"spec":{"template":{"spec":{"requirements":[{"key":"a","operator":"In"},{"key":"b","oprator":"In"}]}}}}`), pool)
	if err != nil {
		t.Fatal(err)
	}
	want = []convert.UnknownField{{Path: "spec.template.spec.requirements[1].oprator", DidYouMean: "operator"}}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems %+v, want %+v", problems, want)
	}
	if _, err := convert.DecodeStrict([]byte(`{"spec":{"weight":"heavy"}}`), pool); err == nil {
		t.Error("a wrong type: want an error")
	}
}

func TestRenderDropsStatusAndEmptyMetadata(t *testing.T) {
	pool := &karpv1.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodePool"},
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       karpv1.NodePoolSpec{Template: karpv1.NodeClaimTemplate{Spec: karpv1.NodeClaimTemplateSpec{NodeClassRef: &karpv1.NodeClassReference{Group: "g", Kind: "K", Name: "n"}}}},
	}
	data, err := convert.Render(convert.Document{File: "p.yaml", Comment: "one\n\ntwo", Content: pool})
	if err != nil {
		t.Fatal(err)
	}
	want := `# one
#
# two
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: p
spec:
  template:
    spec:
      nodeClassRef:
        group: g
        kind: K
        name: "n"
`
	if string(data) != want {
		t.Errorf("got\n%s", data)
	}
}

func TestWriteDir(t *testing.T) {
	docs := []convert.Document{
		{File: "a.yaml", Content: map[string]any{"a": 1}},
		{File: "b.yaml", Content: map[string]any{"b": 1}},
		{File: "a.yaml", Content: map[string]any{"a": 2}},
	}
	dir := filepath.Join(t.TempDir(), "out")
	if err := convert.WriteDir(dir, docs); err != nil {
		t.Fatal(err)
	}
	a, err := os.ReadFile(filepath.Join(dir, "a.yaml"))
	if err != nil || string(a) != "a: 1\n---\na: 2\n" {
		t.Errorf("a.yaml = %q, %v", a, err)
	}
	// Into an existing directory: same names replaced, others kept, no temporary left over.
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := convert.WriteDir(dir, docs[1:2]); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Errorf("beside the output: %v", entries)
	}
	for _, name := range []string{"a.yaml", "b.yaml", "keep.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	// A file where the directory should be is an error, and nothing is written.
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := convert.WriteDir(file, docs); err == nil {
		t.Error("writing into a file: want an error")
	}
	if err := convert.WriteDir(dir, []convert.Document{{File: "../escape.yaml", Content: 1}}); err == nil {
		t.Error("a path as file name: want an error")
	}
}

func TestErrors(t *testing.T) {
	one := convert.Errors{errors.New("a")}
	if one.Error() != "a" {
		t.Errorf("%q", one.Error())
	}
	two := convert.Errors{errors.New("a"), errors.New("b\nc")}
	if two.Error() != "2 errors:\n  a\n  b\n    c" {
		t.Errorf("%q", two.Error())
	}
	if got := convert.AsErrors(errors.New("x")); len(got) != 1 {
		t.Errorf("%v", got)
	}
	if !errors.Is(two, two[1]) {
		t.Error("errors.Is does not see the problems")
	}
}

func TestSuggest(t *testing.T) {
	known := []string{"version", "createServiceAccount", "defaultInstanceProfile", "withSpotInterruptionQueue"}
	for name, want := range map[string]string{
		"verison": "version", "vesion": "version", "Version": "version", "versoin": "version",
		"withSpotInteruptionQueue": "withSpotInterruptionQueue", "createServiceAcount": "createServiceAccount",
		"version": "", "release": "", "v": "",
	} {
		if got := convert.Suggest(name, known); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", name, got, want)
		}
	}
	if got := convert.Suggest("manger", []string{"manager"}); got != "manager" {
		t.Errorf("Suggest(manger) = %q", got)
	}
	if got := convert.Suggest("rol", []string{"role"}); got != "role" {
		t.Errorf("Suggest(rol) = %q", got)
	}
	if got := convert.Suggest("rule", []string{"role"}); got != "role" {
		t.Errorf("Suggest(rule) = %q", got)
	}
	if got := convert.Suggest("image", []string{"manager"}); got != "" {
		t.Errorf("Suggest(image) = %q, want nothing", got)
	}
}
