package simulate

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// FuzzParseWorkload: no input makes ParseWorkload panic, and whatever it accepts is within the
// simulator's bounds. The seeds are the bundled examples and hostile inputs (make fuzz runs it
// for a while; make test runs the seeds).
func FuzzParseWorkload(f *testing.F) {
	examples, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range examples {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		"",
		"\x00\x01\x02binary\xff",
		"a: &a [*a, *a]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b, *b]\n",
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		checkBase,
		strings.Replace(checkBase, "replicas: 3", "replicas: 9223372036854775807", 1),
		strings.Replace(checkBase, "replicas: 3", "replicas: -9223372036854775808", 1),
		strings.Replace(checkBase, "replicas: 3", "replicas: 1e300", 1),
		strings.Replace(checkBase, "duration: 1h", "duration: 9223372036854775807ns", 1),
		strings.Replace(checkBase, "duration: 1h", "duration: 99999999999999h", 1),
		strings.Replace(checkBase, "cpu: 500m", "cpu: 1e400", 1),
		checkBase + "  - at: 1m\n    jobs: {name: j, count: 3, runtime: 1m, pod: {template: {spec: {containers: [{name: c, image: i}]}}}}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 2147483647, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}\n",
		"apiVersion: v1\nkind: List\nitems: [1, 2, {kind: Pod}]\n",
		strings.Replace(checkBase, "requirements: []", "requirements: [{key: k, operator: Maybe}]", 1),
		strings.Replace(checkBase, "duration: 1h\n", "duration: 1h\ncloud: {createErrorRate: 2, zones: [a, a, '']}\n", 1),
		checkBase + "  - at: 1m\n    apply: |\n      apiVersion: karpenter.sh/v1\n      kind: NodePool\n      metadata: {name: b}\n      spec: {weight: 0}\n",
		`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := ParseWorkload("fuzz.yaml", data)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Errorf("the error does not name the file: %v", err)
			}
			// Every line named is one of the file's (an empty value may sit on the line after
			// the last; YAML breaks lines at \r too).
			lines := 2 + bytes.Count(data, []byte("\n")) + bytes.Count(data, []byte("\r"))
			for _, m := range errorLine.FindAllSubmatch([]byte(err.Error()), -1) {
				if n, _ := strconv.Atoi(string(m[1])); n < 1 || n > lines {
					t.Errorf("the error names line %d of a file of %d: %v", n, lines, err)
				}
			}
			return
		}
		if w.Duration.Duration <= 0 || w.Duration.Duration > MaxDuration {
			t.Errorf("accepted a duration of %s", w.Duration)
		}
		for _, e := range w.Timeline {
			switch {
			case e.Deploy != nil && (e.Deploy.Replicas < 0 || e.Deploy.Replicas > MaxPodsPerWorkload):
				t.Errorf("accepted %d replicas", e.Deploy.Replicas)
			case e.Scale != nil && (e.Scale.Replicas < 0 || e.Scale.Replicas > MaxPodsPerWorkload):
				t.Errorf("accepted scaling to %d", e.Scale.Replicas)
			case e.Jobs != nil && (e.Jobs.Count <= 0 || e.Jobs.Count > MaxPodsPerWorkload):
				t.Errorf("accepted %d jobs", e.Jobs.Count)
			}
		}
	})
}

// errorLine finds the lines errors name.
var errorLine = regexp.MustCompile(`fuzz\.yaml:(\d+):`)

// FuzzDuration: a workload duration is a positive Go duration within MaxDuration or an
// error, never a panic. (A Go-quoted string is a valid YAML double-quoted scalar.)
func FuzzDuration(f *testing.F) {
	for _, seed := range []string{"90s", "1h30m", "-1s", "", "1e9h", "9223372036854775807ns", "2562047h47m16.854775808s", "1.5h", "nonsense"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		w, err := ParseWorkload("fuzz.yaml", []byte(strings.Replace(checkBase, "duration: 1h", "duration: "+strconv.Quote(text), 1)))
		if err == nil && (w.Duration.Duration <= 0 || w.Duration.Duration > MaxDuration) {
			t.Errorf("accepted duration %q as %s", text, w.Duration)
		}
	})
}
