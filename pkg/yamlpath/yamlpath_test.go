package yamlpath

import (
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
