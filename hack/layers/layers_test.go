// Package layers holds the test that keeps the module's imports pointing down its layers.
//
// Every package of the module belongs to one layer of the table below, lowest first; a package
// may import packages of its own layer and of those below it, never of a layer above. Go
// refuses import cycles; this refuses the imports that would tie a low, widely used package
// to what is built on it (the pure scheduler to the controllers, the cloud model to the
// metrics of the cluster state), which are the first step to one.
package layers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// module is the module's import path.
const module = "github.com/openkarpenter/karpenter/"

// layers lists the module's packages by layer, lowest first: a package path, or a path ending
// in "/..." for a folder and everything under it. The most specific entry names a package's
// layer.
var layers = []struct {
	name     string
	packages []string
}{
	{"inert: API types and leaf helpers", []string{
		"pkg/apis/...", "pkg/yamlpath", "pkg/events", "pkg/featuregate", "pkg/requeue",
		"pkg/cloudprovider/kubeletcel", "config/crd",
	}},
	{"models: requirements, the LP bound, metrics' names, the EC2 catalog, offline validation", []string{
		"pkg/scheduling", "pkg/scheduler/lowerbound", "pkg/metrics", "pkg/cloudprovider/catalog", "pkg/validation",
		"pkg/providers/aws/userdata", "pkg/providers/aws/fake",
	}},
	{"the cloud model", []string{"pkg/cloudprovider"}},
	{"pure decisions and the clouds", []string{
		"pkg/scheduler", "pkg/packing", "pkg/health",
		"pkg/providers/...",
	}},
	{"the cluster state", []string{"pkg/state"}},
	{"controllers", []string{
		"pkg/nodeclaim", "pkg/nodepool", "pkg/termination", "pkg/expiration", "pkg/reboot", "pkg/repair",
		"pkg/provisioning", "pkg/disruption", "pkg/deletioncost", "pkg/capacitybuffer", "pkg/nodeoverlay",
		"pkg/clustermetrics",
	}},
	{"assemblies: the controller set, the operator, simulate, view, convert", []string{
		"pkg/controllers", "pkg/operator", "pkg/simulate/...", "pkg/view", "pkg/livecluster", "pkg/convert/...",
	}},
	{"commands, test support and tests", []string{"cmd/...", "pkg/test/...", "test/...", "hack/...", "charts/..."}},
}

// layerOf returns the index in layers of the package path (relative to the module), and false
// when no entry names it.
func layerOf(path string) (int, bool) {
	best, bestLen := -1, -1
	for i, l := range layers {
		for _, p := range l.packages {
			if folder, ok := strings.CutSuffix(p, "/..."); ok {
				if (path == folder || strings.HasPrefix(path, folder+"/")) && len(folder) > bestLen {
					best, bestLen = i, len(folder)
				}
			} else if path == p && len(p) > bestLen {
				best, bestLen = i, len(p)
			}
		}
	}
	return best, best >= 0
}

// listed is what go list says of a package.
type listed struct {
	ImportPath string
	Imports    []string
}

// packages lists the module's packages with their imports (test files left out).
func packages(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go list: %v\n%s", err, exit.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("reading go list: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// TestImportsPointDown: no package imports one of a higher layer, and every package has a
// layer.
func TestImportsPointDown(t *testing.T) {
	var problems []string
	for _, p := range packages(t) {
		path, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok {
			continue
		}
		from, ok := layerOf(path)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s has no layer: add it to the table in hack/layers/layers_test.go", path))
			continue
		}
		for _, imp := range p.Imports {
			target, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			to, ok := layerOf(target)
			if ok && to > from {
				problems = append(problems, fmt.Sprintf("%s (%s) imports %s (%s), a higher layer", path, layers[from].name, target, layers[to].name))
			}
		}
	}
	sort.Strings(problems)
	for _, p := range problems {
		t.Error(p)
	}
}

// testOnly lists the packages only tests may import: the in-process EC2 and the test support.
// A program that imports one ships a fake.
var testOnly = []string{"pkg/providers/aws/fake", "pkg/test/..."}

// TestFakesOnlyInTests: no package imports a test-only package, unless it is one itself or is
// itself a test (under test/, or hack/).
func TestFakesOnlyInTests(t *testing.T) {
	isTestOnly := func(path string) bool {
		for _, p := range testOnly {
			if folder, ok := strings.CutSuffix(p, "/..."); ok {
				if path == folder || strings.HasPrefix(path, folder+"/") {
					return true
				}
			} else if path == p {
				return true
			}
		}
		return false
	}
	for _, p := range packages(t) {
		path, ok := strings.CutPrefix(p.ImportPath, module)
		if !ok || isTestOnly(path) || strings.HasPrefix(path, "test/") || strings.HasPrefix(path, "hack/") {
			continue
		}
		for _, imp := range p.Imports {
			if target, ok := strings.CutPrefix(imp, module); ok && isTestOnly(target) {
				t.Errorf("%s imports %s, which only tests may import", path, target)
			}
		}
	}
}

// TestLayerOf: the most specific entry wins, and folders match only whole path elements.
func TestLayerOf(t *testing.T) {
	for path, want := range map[string]int{
		"pkg/cloudprovider":        2,
		"pkg/providers/aws":        3,
		"pkg/providers/aws/fake":   1,
		"pkg/scheduler":            3,
		"pkg/scheduler/lowerbound": 1,
		"pkg/provisioning":         5,
		"pkg/simulate/memory":      6,
		"pkg/apis/karpenter/v1":    0,
		"pkg/apisx":                -1,
		"test/conformance":         7,
	} {
		got, ok := layerOf(path)
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("layerOf(%s) = %d, want %d", path, got, want)
		}
	}
}
