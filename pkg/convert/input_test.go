package convert_test

import (
	"bytes"
	"encoding/json"
	"k8s.io/apimachinery/pkg/api/resource"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/convert"
)

// TestReadSourcesRefusesWhatIsNoInput: every stream that holds no object, or a document that
// cannot become one, is an error that names the file first, and the line when there is one.
func TestReadSourcesRefusesWhatIsNoInput(t *testing.T) {
	aliasBomb := "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n" +
		"d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n" +
		"g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\nh: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
	for _, tc := range []struct {
		name, input, want string
	}{
		{"empty", "", "in.yaml: the file is empty: want YAML or JSON objects"},
		{"blank", " \n\n\t\n", "in.yaml: the file is empty"},
		{"comments only", "# nothing\n---\n# here\n", "in.yaml: no document, only comments or empty documents"},
		{"null documents", "---\nnull\n---\n~\n", "in.yaml: no document"},
		{"binary", "kind: X\n\x00\x01\x02", "in.yaml: binary data (byte 8 is not UTF-8 text)"},
		{"not UTF-8", "kind: \xff\xfe", "in.yaml: binary data (byte 6 is not UTF-8 text)"},
		{"UTF-16", "\xff\xfek\x00i\x00n\x00d\x00", "in.yaml: UTF-16 text (as Windows PowerShell's > writes): save it as UTF-8"},
		{"a list", "kind: X\n---\n- a\n- b\n", "in.yaml:3: a list, not an object: want an object with apiVersion and kind"},
		{"a string", "hello\n", "in.yaml:1: a string, not an object"},
		{"a number", "\n\n42\n", "in.yaml:3: a number, not an object"},
		{"wrong kind type", "apiVersion: v1\nkind: [a]\n", "in.yaml:2: an object without kind (document 1): kind: want a string, got a list"},
		{"syntax", "kind: X\n---\n# c\nkind: Y\nfoo: [\n", "in.yaml:5: invalid YAML: did not find expected node content"},
		{"duplicate key", "kind: X\nmetadata:\n  name: a\n  name: b\n", `in.yaml:4: invalid YAML: key "name" already set in map`},
		{"text after separator", "kind: X\n--- kind: Y\n", `in.yaml:2: "kind: Y" after the document separator ---: put the document on the next line`},
		{"alias bomb", aliasBomb, "in.yaml: document 1: document contains excessive aliasing"},
		{"deep nesting", "a: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "in.yaml: document 1: exceeded max depth of 10000"},
		{"NaN", "kind: X\nspec:\n  items:\n  - weight: .nan\n", "in.yaml:4: spec.items[0].weight: NaN is not a number Kubernetes objects can hold"},
		{"infinity", "kind: X\nspec: {limit: -.Inf}\n", "in.yaml:2: spec.limit: -Inf is not a number"},
		{"object past etcd's limit", "kind: X\n---\nkind: Big\ndata: {a: " + strings.Repeat("x", 2<<20) + "}\n",
			"in.yaml:3: document 2 is 2 MiB as JSON, more than the 1.5 MiB the API server (etcd) stores in one object: split it"},
		{"document text past twice etcd's limit", "kind: Big\ndata:\n" + strings.Repeat("  - [x]\n", 1<<19),
			"in.yaml:1: document 1 is 4 MiB of text, more than twice the 1.5 MiB the API server (etcd) stores in one object: split it"},
		{"List item past etcd's limit", "kind: List\nitems:\n- {kind: A}\n- {kind: B, data: {a: " + strings.Repeat("x", 2<<20) + "}}\n",
			"in.yaml:4: document 1, item 2 is 2 MiB as JSON, more than the 1.5 MiB"},
	} {
		_, err := convert.ReadSources("in.yaml", strings.NewReader(tc.input))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	big := bytes.Repeat([]byte("# padding\n"), convert.MaxInputBytes/10+1)
	if _, err := convert.ReadSources("big.yaml", bytes.NewReader(big)); err == nil || !strings.HasPrefix(err.Error(), "big.yaml: larger than 16 MiB") {
		t.Errorf("a file over the limit: got %v", err)
	}
}

// TestParseSourcesFromALine: YAML embedded in a file from a line on (a workload's manifests:
// block) is named by the file's lines, in its documents' fields and in the parser's messages.
func TestParseSourcesFromALine(t *testing.T) {
	text := "apiVersion: v1\nkind: A\nmetadata: {name: a}\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n"
	sources, err := convert.ParseSources("w.yaml", []byte(text), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 2 || sources[0].Line != 10 || sources[1].Line != 14 || sources[1].At("metadata.name") != "w.yaml:17" {
		t.Errorf("got %+v", sources)
	}
	if _, err := convert.ParseSources("w.yaml", []byte("kind: A\n---\nkind: B\nfoo: [\n"), 10); err == nil || !strings.HasPrefix(err.Error(), "w.yaml:13: invalid YAML") {
		t.Errorf("a YAML error: got %v", err)
	}
}

// TestReadSourcesReportsEveryBadDocument: one run lists the problems of every document.
func TestReadSourcesReportsEveryBadDocument(t *testing.T) {
	_, err := convert.ReadSources("in.yaml", strings.NewReader("- a\n---\nkind: X\n---\nfoo: [\n---\n7\n"))
	want := "in.yaml:1: a list, not an object: want an object with apiVersion and kind|" +
		"in.yaml:5: invalid YAML: did not find expected node content|" +
		"in.yaml:7: a number, not an object: want an object with apiVersion and kind"
	if got := strings.Join(convert.AsErrors(err).Lines(), "|"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestReadFilesNamesTheFileFirst: files that cannot be read are reported as such, each by
// name, all in one run, rather than as documents of an unknown format.
func TestReadFilesNamesTheFileFirst(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	_, err := convert.ReadFiles([]string{good, missing, dir, empty}, strings.NewReader(""))
	want := []string{
		missing + ": no such file or directory",
		dir + ": is a directory: convert reads files, not directories; name the files (such as " + dir + "/*.yaml)",
		empty + ": the file is empty: want YAML or JSON objects",
	}
	if got := convert.AsErrors(err).Lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	sources, err := convert.ReadFiles([]string{good, "-"}, strings.NewReader("apiVersion: v1\nkind: Secret\nmetadata: {name: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sources) != 2 || sources[0].File != good || sources[1].File != "standard input" || sources[1].Kind != "Secret" {
		t.Errorf("sources %+v", sources)
	}
}

// TestFieldLine finds the line of fields, of List items, of map keys in brackets, and of a
// field named on a list whose index the path leaves out when one item has it.
func TestFieldLine(t *testing.T) {
	input := `# leading comment
apiVersion: v1
kind: List
items:
- apiVersion: karpenter.sh/v1alpha5
  kind: Provisioner
  metadata:
    name: a
    labels:
      app.kubernetes.io/name: x
  spec:
    requirements:
    - key: a
      operator: In
    - key: b
      oprator: In
---
apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data:
  k: &v value
  copy: *v
`
	sources, err := convert.ReadSources("in.yaml", strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	item, cm := sources[0], sources[1]
	for _, tc := range []struct {
		src  convert.Source
		path string
		want int
	}{
		{item, "", 5},
		{item, "metadata.name", 8},
		{item, "metadata.labels[app.kubernetes.io/name]", 10},
		{item, "spec.requirements[1]", 15},
		{item, "spec.requirements[1].key", 15},
		{item, "spec.requirements.oprator", 16},
		{item, "spec.requirements.key", 0}, // both items have it
		{item, "spec.requirements[2]", 0},
		{item, "spec.missing", 0},
		{cm, "", 18},
		{cm, "metadata.name", 20},
		{cm, "data.copy", 23},
	} {
		if got := tc.src.FieldLine(tc.path); got != tc.want {
			t.Errorf("%s %q: line %d, want %d", tc.src, tc.path, got, tc.want)
		}
	}
	if got := item.At("spec.missing.deeper"); got != "in.yaml:11" {
		t.Errorf("At a missing field = %q, want its parent's line", got)
	}
	if item.Line != 5 || cm.Line != 18 {
		t.Errorf("document lines %d and %d, want 5 and 18", item.Line, cm.Line)
	}
}

// TestDecodeErrorNamesTheField: a value of the wrong type, or one its type cannot parse, is
// reported at its field and line with what the field takes.
func TestDecodeErrorNamesTheField(t *testing.T) {
	type spec struct {
		Replicas *int32            `json:"replicas"`
		Count    uint8             `json:"count"`
		Names    []string          `json:"names"`
		Limits   map[string]string `json:"limits"`
	}
	type object struct {
		Kind string `json:"kind"`
		Spec spec   `json:"spec"`
	}
	for _, tc := range []struct{ input, want string }{
		{"kind: X\nspec:\n  replicas: 3000000000\n", "in.yaml:3: X (document 1): spec.replicas: want a whole number from -2147483648 to 2147483647, got 3000000000"},
		{"kind: X\nspec:\n  count: -1\n", "in.yaml:3: X (document 1): spec.count: want a whole number from 0 to 255, got -1"},
		{"kind: X\nspec:\n  names: {a: b}\n", "in.yaml:3: X (document 1): spec.names: want a list, got an object"},
		{"kind: X\nspec:\n  limits: [a]\n", "in.yaml:3: X (document 1): spec.limits: want an object, got a list"},
		{"kind: X\nspec: true\n", "in.yaml:2: X (document 1): spec: want an object, got true or false"},
	} {
		sources, err := convert.ReadSources("in.yaml", strings.NewReader(tc.input))
		if err != nil {
			t.Fatal(err)
		}
		var obj object
		err = json.Unmarshal(sources[0].JSON, &obj)
		if err == nil {
			t.Fatalf("%q: no decoding error", tc.input)
		}
		if got := sources[0].DecodeError(err, &obj, sources[0].JSON).Error(); got != tc.want {
			t.Errorf("got  %s\nwant %s", got, tc.want)
		}
	}
}

// TestDecodeErrorsNamesEveryField: every wrong value of a document is named, in lists too
// (encoding/json names no index: the list is named, and the field is dropped from every item
// to go on).
func TestDecodeErrorsNamesEveryField(t *testing.T) {
	type item struct {
		Size int32 `json:"size"`
	}
	type spec struct {
		Items []item             `json:"items"`
		Count uint8              `json:"count"`
		CPU   *resource.Quantity `json:"cpu"`
	}
	type object struct {
		Kind string `json:"kind"`
		Spec spec   `json:"spec"`
	}
	sources, err := convert.ReadSources("in.yaml", strings.NewReader("kind: X\nspec:\n  items:\n  - size: a\n  - size: b\n  count: -1\n  cpu: lots\n"))
	if err != nil {
		t.Fatal(err)
	}
	var obj object
	err = json.Unmarshal(sources[0].JSON, &obj)
	if err == nil {
		t.Fatal("no decoding error")
	}
	var got []string
	for _, e := range sources[0].DecodeErrors(err, &obj, sources[0].JSON, json.Unmarshal) {
		got = append(got, e.Error())
	}
	want := []string{
		"in.yaml:3: X (document 1): spec.items.size: want a whole number from -2147483648 to 2147483647, got a string",
		"in.yaml:6: X (document 1): spec.count: want a whole number from 0 to 255, got -1",
		"in.yaml:7: X (document 1): spec.cpu: want a quantity such as 500m, 2, 1.5 or 4Gi (quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')",
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
