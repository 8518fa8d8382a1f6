package simulate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorLines: every error about a workload file names the line of its field in the file,
// in the embedded manifests: block and an apply: event too (their lines are the file's one for
// one), and the simulated cloud's settings are checked with their field and line.
func TestErrorLines(t *testing.T) {
	apply := "  - at: 1m\n    apply: |\n      apiVersion: karpenter.sh/v1\n      kind: NodePool\n      metadata: {name: second}\n      spec:\n        template:\n          spec:\n            nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n            requirements: [{key: k, operator: Maybe}]\n"
	var jobs strings.Builder
	for i := range 10 {
		fmt.Fprintf(&jobs, "  - at: 1m\n    jobs: {name: j%d, count: 100000, runtime: 1m, pod: {cpu: '1'}}\n", i)
	}
	cloud := func(settings string) string {
		return strings.Replace(checkBase, "duration: 1h\n", "duration: 1h\ncloud:\n"+settings, 1)
	}
	for _, tc := range []struct{ name, text, want string }{
		{"operator in the manifests block", strings.Replace(checkBase, "requirements: []", "requirements: [{key: k, operator: Maybe}]", 1),
			`w.yaml:11: NodePool "default": spec.template.spec.requirements[0].operator: Unsupported value: "Maybe"`},
		{"type error in the manifests block", strings.Replace(checkBase, "role: R", "role: [R]", 1),
			`w.yaml:17: EC2NodeClass "default": spec.role: want a string, got a list`},
		{"unknown field in the manifests block", strings.Replace(checkBase, "  spec:\n    template:", "  spec:\n    weigth: 5\n    template:", 1),
			`w.yaml:8: NodePool "default": spec.weigth: unknown field; did you mean weight?`},
		{"duplicate in the manifests block", strings.Replace(checkBase, "timeline:", "  ---\n  apiVersion: karpenter.k8s.aws/v1\n  kind: EC2NodeClass\n  metadata: {name: default}\n  spec: {role: R, amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{tags: {a: b}}], securityGroupSelectorTerms: [{tags: {a: b}}]}\ntimeline:", 1),
			`w.yaml:24: EC2NodeClass "default": metadata.name: Duplicate value: "default": used by an earlier EC2NodeClass (w.yaml:13)`},
		{"operator in an apply event", checkBase + apply,
			`w.yaml:38: NodePool "second": spec.template.spec.requirements[0].operator: Unsupported value: "Maybe"`},
		{"create error rate", cloud("  createErrorRate: 2\n"), "w.yaml:4: cloud.createErrorRate: 2 is not a share of launches from 0 to 1"},
		{"create error rate below 0", cloud("  createErrorRate: -0.5\n"), "w.yaml:4: cloud.createErrorRate: -0.5 is not a share of launches from 0 to 1"},
		{"zone twice", cloud("  zones: [us-east-1a, us-east-1b, us-east-1a]\n"), `w.yaml:4: cloud.zones[2]: "us-east-1a" is given twice (also at cloud.zones[0])`},
		{"empty zone", cloud("  zones:\n    - us-east-1a\n    - ''\n"), "w.yaml:6: cloud.zones[1]: empty: name a zone such as us-east-1a"},
		{"no zones", cloud("  zones: []\n"), "w.yaml:4: cloud.zones: empty: name at least one zone"},
		{"pods per run", checkBase + jobs.String(), "w.yaml:48: timeline[10].jobs.count: the run's pods add up to 1000003 here, more than the simulator's bound of 1000000 pods per run"},
		{"pods per run with scale-ups", checkBase + "  - at: 1m\n    scale: {name: web, replicas: 100000}\n" + strings.Repeat("  - at: 1m\n    scale: {name: web, replicas: 0}\n  - at: 1m\n    scale: {name: web, replicas: 100000}\n", 10),
			"w.yaml:70: timeline[21].scale.replicas: the run's pods add up to 1100000 here"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload("w.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

// TestPlainManifestLimits: the pods of a file of manifests are bounded summed over it, and no
// object may be larger than etcd stores.
func TestPlainManifestLimits(t *testing.T) {
	var jobs strings.Builder
	for i := range 11 {
		fmt.Fprintf(&jobs, "---\napiVersion: batch/v1\nkind: Job\nmetadata: {name: j%d}\nspec: {completions: 100000, template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}}\n", i)
	}
	huge := "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata: {a: " + strings.Repeat("x", 2<<20) + "}\n"
	for _, tc := range []struct{ name, text, want string }{
		{"pods per run", gettingStarted + jobs.String(), `Job "j9": spec.completions: the run's pods add up to 1000009 here, more than the simulator's bound of 1000000 pods per run`},
		{"object size", gettingStarted + huge, "is 2 MiB as JSON, more than the 1.5 MiB the API server (etcd) stores in one object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload("m.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %.500v\nwant an error containing %q", err, tc.want)
			}
		})
	}
}

// TestInputFileLimit: a file past convert.MaxInputBytes is refused, naming it, without being
// read whole.
func TestInputFileLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(path, []byte("name: x\n"+strings.Repeat("#", 17<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, load := range map[string]func() error{
		"workload":  func() error { _, err := LoadWorkload(path); return err },
		"manifests": func() error { _, err := LoadManifests([]string{path, path}); return err },
	} {
		if err := load(); err == nil || !strings.Contains(err.Error(), path+": larger than 16 MiB") {
			t.Errorf("%s: got %v", name, err)
		}
	}
}
