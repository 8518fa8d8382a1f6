package yamlpath

import (
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v3"
)

const doc = `metadata:
  name: web
  labels: {app: web}
spec:
  requirements:
    - key: a
      operator: In
    - key: b
      operator: Maybe
  template: &t
    containers: [{name: c}]
  copy: *t
`

func TestFindAndLine(t *testing.T) {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path          string
		find, nearest int
	}{
		{"", 1, 1},
		{"metadata.name", 2, 2},
		{"metadata.labels[app]", 3, 3},
		{"spec.requirements[1].operator", 9, 9},
		{"spec.requirements.operator", 0, 5}, // a name on a list with two items that have it
		{"spec.requirements[5].key", 0, 5},
		{"spec.copy.containers[0].name", 11, 11}, // through an alias
		{"spec.missing.deeper", 0, 4},
		{"spec.requirements[1", 0, 0},
	} {
		_, got := Find(&root, tc.path)
		if got != tc.find {
			t.Errorf("Find(%q) line %d, want %d", tc.path, got, tc.find)
		}
		if got := Line(&root, tc.path); got != tc.nearest {
			t.Errorf("Line(%q) = %d, want %d", tc.path, got, tc.nearest)
		}
	}
	if Line(nil, "a") != 0 {
		t.Error("Line(nil) is not 0")
	}
}

// FuzzFind: no document and field path make Find or Line panic, and a line found is one of
// the document's.
func FuzzFind(f *testing.F) {
	f.Add(doc, "spec.requirements[1].operator")
	f.Add(doc, "spec.copy.containers[0].name")
	f.Add(doc, "spec.requirements.operator")
	f.Add("a: &a [*a]\n", "a[0][0]")
	f.Add("[1, 2]\n", "[5]")
	f.Add("a: {b: c}\n", "a[b")
	f.Add("a:\n  - [x]\n", "a[-1]")
	f.Fuzz(func(t *testing.T, text, path string) {
		var node yaml.Node
		if yaml.Unmarshal([]byte(text), &node) != nil {
			return
		}
		// An empty value is placed on the line after the last. YAML breaks lines at \n, \r (alone), and NEL, LS and PS.
		lines := 1 + strings.Count(strings.ReplaceAll(text, "\r\n", "\n"), "\n") + strings.Count(strings.ReplaceAll(text, "\r\n", "\n"), "\r") +
			strings.Count(text, "\u0085") + strings.Count(text, "\u2028") + strings.Count(text, "\u2029")
		if n, line := Find(&node, path); n != nil && (line < 0 || line > lines+1) {
			t.Errorf("Find(%q) found line %d of %d", path, line, lines)
		}
		if line := Line(&node, path); line < 0 || line > lines+1 {
			t.Errorf("Line(%q) = %d of %d", path, line, lines)
		}
	})
}
