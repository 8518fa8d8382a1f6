package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hostileMemoryLimit is the address space (ulimit -v, KiB) each hostile input runs in: about
// 3 GB, a fraction of what the unbounded inputs grew to before they had bounds.
const hostileMemoryLimit = 3_000_000

// hostileWorkload is a valid workload file; each hostile case changes one part of it.
const hostileWorkload = `name: hostile
duration: 1h
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    template:
      spec:
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
        requirements: []
  ---
  apiVersion: karpenter.k8s.aws/v1
  kind: EC2NodeClass
  metadata: {name: default}
  spec:
    role: R
    amiSelectorTerms: [{alias: al2023@latest}]
    subnetSelectorTerms: [{tags: {a: b}}]
    securityGroupSelectorTerms: [{tags: {a: b}}]
timeline:
  - at: 0s
    deploy: {name: web, replicas: 3, pod: {cpu: 500m, memory: 1Gi}}
`

// TestHostileInputUnderMemoryLimit runs the karpenter binary over the worst inputs found for
// simulate and convert, each under ulimit -v: counts and durations far past the bounds, YAML
// alias bombs, nesting 100,000 deep, 15 MiB of requirements, and 1 GiB on standard input. Each
// must be refused with exit status 2 and an error that names its file, within a minute: never
// a Go out-of-memory error, a panic or a long run. The inputs are generated here, in a
// temporary directory; the peak memory of each run is logged when /usr/bin/time is there.
func TestHostileInputUnderMemoryLimit(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("needs bash for ulimit")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "karpenter")
	build := exec.Command("go", "build", "-o", bin, "github.com/openkarpenter/karpenter/cmd/karpenter")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building karpenter: %v\n%s", err, out)
	}
	timeV := ""
	if exec.Command("/usr/bin/time", "-v", "true").Run() == nil {
		timeV = "/usr/bin/time -v "
	}

	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var jobs strings.Builder
	jobs.WriteString(hostileWorkload)
	for i := range 11 {
		fmt.Fprintf(&jobs, "  - at: 1m\n    jobs: {name: batch-%d, count: 100000, runtime: 1m, pod: {cpu: 100m}}\n", i)
	}
	// Each level holds nine of the one below: 9^9 strings from a few hundred bytes.
	bomb := "a: &a [x,x,x,x,x,x,x,x,x]\n"
	for i, name := range "bcdefghi" {
		prev := string("abcdefghi"[i])
		bomb += fmt.Sprintf("%c: &%c [%s]\n", name, name, strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ","))
	}
	deep := "a: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n"
	requirement := "      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge, c5.large]}\n"
	requirements := strings.Repeat(requirement, (15<<20)/len(requirement))
	nodePool := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: big}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n      requirements:\n" + requirements
	provisioner := "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: big}\nspec:\n  requirements:\n" + strings.ReplaceAll(requirements, "      - ", "  - ")
	// 1 GiB of YAML-looking text, made by a pipe as it is read: never a file.
	gibibyte := `yes 'key: value' | head -c 1073741824 | `

	for _, tc := range []struct {
		name string
		// pipe, when set, feeds standard input; args follow the binary.
		pipe string
		args []string
		// file the error must name.
		file string
	}{
		{name: "replicas 10^12", args: []string{"simulate", write("replicas.yaml", strings.Replace(hostileWorkload, "replicas: 3", "replicas: 1000000000000", 1))}},
		{name: "a million pods of jobs", args: []string{"simulate", write("jobs.yaml", jobs.String())}},
		{name: "duration 2000000h", args: []string{"simulate", write("duration.yaml", strings.Replace(hostileWorkload, "duration: 1h", "duration: 2000000h", 1))}},
		{name: "plain replicas 10^12", args: []string{"simulate", write("deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 1000000000000, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}\n")}},
		{name: "alias bomb in a workload", args: []string{"simulate", write("bomb-workload.yaml", "name: x\nduration: 1h\n"+bomb)}},
		{name: "alias bomb in manifests", args: []string{"simulate", write("bomb-manifests.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\n"+bomb)}},
		{name: "alias bomb to convert", args: []string{"convert", write("bomb-legacy.yaml", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: bomb}\n"+bomb)}},
		{name: "nesting to simulate", args: []string{"simulate", write("deep-workload.yaml", deep)}},
		{name: "nesting in manifests", args: []string{"simulate", write("deep-manifests.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\n"+deep)}},
		{name: "nesting to convert", args: []string{"convert", "legacy", write("deep-legacy.yaml", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: deep}\n"+deep)}},
		{name: "15 MiB of requirements to simulate", args: []string{"simulate", write("requirements.yaml", nodePool)}},
		{name: "15 MiB of requirements in a workload", args: []string{"simulate", write("requirements-workload.yaml",
			strings.Replace(hostileWorkload, "        requirements: []\n", "        requirements:\n"+strings.ReplaceAll(requirements, "      - ", "          - "), 1))}},
		{name: "15 MiB of requirements to convert", args: []string{"convert", write("requirements-legacy.yaml", provisioner)}},
		{name: "1 GiB on standard input to simulate", pipe: gibibyte, args: []string{"simulate", "-"}, file: "standard input"},
		{name: "1 GiB on standard input to convert", pipe: gibibyte, args: []string{"convert", "-"}, file: "standard input"},
		{name: "1 GiB on standard input to convert legacy", pipe: gibibyte, args: []string{"convert", "legacy", "-"}, file: "standard input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := tc.file
			if file == "" {
				file = tc.args[len(tc.args)-1]
			}
			script := fmt.Sprintf("ulimit -v %d\n%s%s\"$@\"", hostileMemoryLimit, tc.pipe, timeV)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, append([]string{"-c", script, "bash", bin}, tc.args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			start := time.Now()
			err := cmd.Run()
			elapsed := time.Since(start)
			var exit *exec.ExitError
			code := 0
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			}
			out := stderr.String()
			message, rss := out, ""
			if i := strings.Index(out, "\tCommand being timed"); i >= 0 {
				message = out[:i]
				if m := maxRSS.FindStringSubmatch(out[i:]); m != nil {
					rss = m[1] + " KiB peak RSS, "
				}
			}
			t.Logf("exit %d, %s%s: %.300s", code, rss, elapsed.Round(time.Millisecond), strings.TrimSpace(message))
			switch {
			case ctx.Err() != nil:
				t.Fatalf("still running after a minute")
			case code != exitCodeUsage:
				t.Errorf("exit status %d, want %d (bad input)\n%.2000s", code, exitCodeUsage, message)
			case strings.Contains(message, "panic") || strings.Contains(message, "out of memory") || strings.Contains(message, "fatal error"):
				t.Errorf("crashed:\n%.2000s", message)
			case !strings.Contains(message, file):
				t.Errorf("the error does not name %s:\n%.2000s", file, message)
			}
			if stdout.Len() > 0 {
				t.Errorf("wrote to standard output: %.300s", stdout.String())
			}
		})
	}
}

// maxRSS finds the peak resident memory in /usr/bin/time -v's report.
var maxRSS = regexp.MustCompile(`Maximum resident set size \(kbytes\): (\d+)`)
