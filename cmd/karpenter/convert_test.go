package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const kopsTestdata = "../../pkg/convert/kops/testdata"

// run executes the binary's command tree with args and returns stdout, stderr and the error.
func run(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := newRootCommand()
	var stdout, stderr bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	root.SetIn(strings.NewReader(stdin))
	err := root.Execute()
	return stdout.String(), stderr.String(), err
}

func TestConvertKopsPrintsTheGoldenOutput(t *testing.T) {
	dir := filepath.Join(kopsTestdata, "static-seed-001")
	stdout, stderr, err := run(t, "", "convert", "kops", filepath.Join(dir, "input.yaml"),
		"--user-data-dir", filepath.Join(dir, "userdata"), "--root-device-name", "/dev/sda1")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want, err := os.ReadFile(filepath.Join(dir, "output.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("stdout differs from %s:\n%s", dir, stdout)
	}
	if !strings.HasPrefix(stderr, `warning: NodePool "nodes" is static (spec.replicas 4, from minSize): Karpenter launches its nodes only with the StaticCapacity feature gate on`) ||
		!strings.Contains(stderr, "\nwarning: Karpenter cannot switch a NodePool") {
		t.Errorf("stderr: %q", stderr)
	}
}

func TestConvertErrorsAreUsageErrorsAndWriteNothing(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	stdout, _, err := run(t, "", "convert", "kops", filepath.Join(kopsTestdata, "error-validation", "input.yaml"), "-o", out)
	var usage usageError
	if !errors.As(err, &usage) {
		t.Fatalf("want a usage error (exit 2), got %v", err)
	}
	if n := strings.Count(err.Error(), "\n  "); n != 15 {
		t.Errorf("want 15 problems listed, got %d:\n%v", n, err)
	}
	if stdout != "" {
		t.Errorf("stdout: %q", stdout)
	}
	if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
		t.Errorf("output directory exists after an error: %v", statErr)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("left files behind: %v", entries)
	}
}

func TestConvertToDirectory(t *testing.T) {
	out := filepath.Join(t.TempDir(), "nested", "out")
	dir := filepath.Join(kopsTestdata, "multiple-instance-groups")
	_, stderr, err := run(t, "", "convert", "kops", filepath.Join(dir, "input.yaml"), "--user-data-dir", filepath.Join(dir, "userdata"),
		"--root-device-name", "general=/dev/xvda", "--root-device-name", "batch=/dev/sda1", "--output", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	got := fileNames(t, out)
	want := []string{"ec2nodeclass-batch.yaml", "ec2nodeclass-general.yaml", "nodepool-batch.yaml", "nodepool-general.yaml"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	golden, err := os.ReadFile(filepath.Join(dir, "output.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := os.ReadFile(filepath.Join(out, "nodepool-batch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(golden, pool) {
		t.Errorf("nodepool-batch.yaml is not part of the printed output:\n%s", pool)
	}
	// A second run into the existing directory replaces the files.
	if _, stderr, err := run(t, "", "convert", "kops", filepath.Join(dir, "input.yaml"), "--user-data-dir", filepath.Join(dir, "userdata"),
		"--root-device-name", "/dev/xvda", "-o", out); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if got := fileNames(t, out); !reflect.DeepEqual(got, want) {
		t.Errorf("after the second run: %v", got)
	}
}

func TestConvertLegacyFromStdin(t *testing.T) {
	input, err := os.ReadFile("../../pkg/convert/legacy/testdata/seed-003/input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run(t, string(input), "convert", "legacy", "-")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want, err := os.ReadFile("../../pkg/convert/legacy/testdata/seed-003/output.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("stdout:\n%s", stdout)
	}
}

func TestConvertEksctlFiles(t *testing.T) {
	out := t.TempDir()
	_, stderr, err := run(t, "", "convert", "eksctl", "../../pkg/convert/eksctl/testdata/all-options/input.yaml", "--account-id", "123456789012", "-o", out)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if got, want := fileNames(t, out), []string{"cloudformation.yaml", "nodepool.yaml", "values.yaml"}; !reflect.DeepEqual(got, want) {
		t.Errorf("files %v, want %v", got, want)
	}
	values, err := os.ReadFile(filepath.Join(out, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), "interruptionQueue: prod") {
		t.Errorf("values.yaml:\n%s", values)
	}
}

func TestConvertUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"convert", "kops"},
		{"convert", "kops", "x.yaml", "--root-device-name", "/dev/xvda", "--root-device-name", "/dev/sda1"},
		{"convert", "kops", "x.yaml", "--arch", "=arm64"},
		{"convert", "legacy", "does-not-exist.yaml"},
		{"convert", "eksctl", "../../pkg/convert/eksctl/testdata/error-version-malformed/input.yaml"},
	} {
		_, _, err := run(t, "", args...)
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("%v: want a usage error, got %v", args, err)
		}
	}
}

func fileNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestConvertTellsTheFormat(t *testing.T) {
	legacyIn, legacyOut := "../../pkg/convert/legacy/testdata/seed-003/input.yaml", "../../pkg/convert/legacy/testdata/seed-003/output.yaml"
	want, err := os.ReadFile(legacyOut)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run(t, "", "convert", legacyIn)
	if err != nil || stdout != string(want) {
		t.Errorf("convert FILE: %v\n%s\nstdout:\n%s", err, stderr, stdout)
	}
	input, _ := os.ReadFile(legacyIn)
	if stdout, _, err = run(t, string(input), "convert", "-"); err != nil || stdout != string(want) {
		t.Errorf("convert -: %v\nstdout:\n%s", err, stdout)
	}
	// What `kubectl get provisioners,awsnodetemplates -o yaml` prints: one List.
	listIn, listOut := "../../pkg/convert/legacy/testdata/kubectl-list/input.yaml", "../../pkg/convert/legacy/testdata/kubectl-list/output.yaml"
	if want, err := os.ReadFile(listOut); err != nil {
		t.Fatal(err)
	} else if stdout, stderr, err := run(t, "", "convert", listIn); err != nil || stdout != string(want) {
		t.Errorf("convert LIST: %v\n%s\nstdout:\n%s", err, stderr, stdout)
	}
	out := t.TempDir()
	if _, stderr, err := run(t, "", "convert", "../../pkg/convert/eksctl/testdata/all-options/input.yaml", "--account-id", "123456789012", "-o", out); err != nil {
		t.Errorf("convert eksctl file with flags: %v\n%s", err, stderr)
	} else if got := fileNames(t, out); len(got) != 3 {
		t.Errorf("eksctl files %v", got)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"convert", "../../examples/web.yaml"}, "../../examples/web.yaml: cannot tell the format"},
		{[]string{"convert", legacyIn, "../../examples/convert/kops.yaml"}, legacyIn + ", ../../examples/convert/kops.yaml: the files mix formats (kops, legacy)"},
		{[]string{"convert", legacyIn, "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"convert", "../../examples/cluster/nodepool.yaml"}, "../../examples/cluster/nodepool.yaml: NodePool default is Karpenter v1 already: there is nothing to convert"},
		{[]string{"convert", ""}, "an empty file name: name a YAML or JSON file, or - for standard input"},
		{[]string{"convert", "legacy", ""}, "an empty file name"},
	} {
		_, _, err := run(t, "", tc.args...)
		var usage usageError
		if !errors.As(err, &usage) || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want a usage error starting %q", tc.args, err, tc.want)
		}
	}
	if stdout, _, err := run(t, "", "convert"); err != nil || !strings.Contains(stdout, "Available Commands") {
		t.Errorf("convert with no arguments should print its help: %v", err)
	}
}

func TestSimulateReadsPlainManifestsFromStdin(t *testing.T) {
	input, err := os.ReadFile("../../examples/getting-started.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := run(t, string(input), "simulate", "-", "--output", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, `"workload": "standard input"`) || !strings.Contains(stdout, `"launched"`) {
		t.Errorf("stdout:\n%.400s", stdout)
	}
}

func TestSimulateReadsManifestsFromFilesAndDirectories(t *testing.T) {
	input, err := os.ReadFile("../../examples/getting-started.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The getting-started manifests, one file each, as a user keeps them.
	dir := t.TempDir()
	var files []string
	for i, doc := range strings.Split(string(input), "\n---\n") {
		file := filepath.Join(dir, fmt.Sprintf("%02d.yaml", i))
		if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
	}
	want, stderr, err := run(t, "", "simulate", "../../examples/getting-started.yaml", "--output", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, args := range [][]string{files, {dir}, {files[0], filepath.Join(dir, "..", filepath.Base(dir))}} {
		stdout, stderr, err := run(t, "", append([]string{"simulate", "--output", "json"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		// The same run, but for the workload's name.
		cut := func(s string) string { return regexp.MustCompile(`"workload": "[^"]*"`).ReplaceAllString(s, "") }
		if cut(stdout) != cut(want) {
			t.Errorf("%v: a different report from the same manifests:\n%.600s", args, stdout)
		}
	}
	_, _, err = run(t, "", "simulate", "../../examples/web.yaml", files[0])
	var usage usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "a workload file with a timeline is simulated on its own") {
		t.Errorf("a workload file among manifests: got %v", err)
	}
}

// TestConvertOutputIsNotAFormat: -o json (simulate's format flag) is refused with the fix,
// creating no directory, unless a directory of that name exists.
func TestConvertOutputIsNotAFormat(t *testing.T) {
	input, err := filepath.Abs("../../pkg/convert/legacy/testdata/seed-003/input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"convert", "legacy", input, "-o", "json"},
		{"convert", input, "--output", "yaml"},
	} {
		stdout, _, err := run(t, "", args...)
		var usage usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), "is the directory to write one file per object into, not a format") ||
			!strings.Contains(err.Error(), "Leave out -o to print the YAML to standard output (karpenter convert legacy FILE... > out.yaml)") {
			t.Errorf("%v: want a usage error explaining -o, got %v", args, err)
		}
		if stdout != "" {
			t.Errorf("%v: stdout %q", args, stdout)
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) != 0 {
		t.Errorf("left files behind: %v", entries)
	}
	if err := os.Mkdir("json", 0o755); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run(t, "", "convert", "legacy", input, "-o", "json"); err != nil {
		t.Fatalf("into an existing directory json: %v\n%s", err, stderr)
	}
	if len(fileNames(t, "json")) == 0 {
		t.Error("nothing written into the existing directory json")
	}
}

// TestConvertReportsUnreadableFilesFirst: a file that cannot be read is reported as such, file
// name first, as a usage error, not as a file of unknown format; every such file at once.
func TestConvertReportsUnreadableFilesFirst(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	binary := filepath.Join(dir, "binary.yaml")
	if err := os.WriteFile(binary, []byte{0x7f, 'E', 'L', 'F', 0, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	legacyIn := "../../pkg/convert/legacy/testdata/seed-003/input.yaml"
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"convert", missing}, []string{missing + ": no such file or directory"}},
		{[]string{"convert", dir}, []string{dir + ": is a directory: convert reads files, not directories"}},
		{[]string{"convert", empty}, []string{empty + ": the file is empty"}},
		{[]string{"convert", binary}, []string{binary + ": binary data (byte 4 is not UTF-8 text)"}},
		{[]string{"convert", legacyIn, missing, dir}, []string{"2 errors:", missing + ": no such file", dir + ": is a directory"}},
		{[]string{"convert", "legacy", legacyIn, missing}, []string{missing + ": no such file or directory"}},
		{[]string{"convert", "kops", empty}, []string{empty + ": the file is empty"}},
	} {
		stdout, _, err := run(t, "", tc.args...)
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("%v: want a usage error (exit 2), got %v", tc.args, err)
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: %v\nwant it to say %q", tc.args, err, want)
			}
		}
		if strings.Contains(err.Error(), "cannot tell the format") || stdout != "" {
			t.Errorf("%v: %v, stdout %q", tc.args, err, stdout)
		}
	}
}

// TestConvertFlagValuesAreNotInputs: telling the format, convert reads only the input files,
// not the values of the subcommands' flags (a device name, a directory), and passes each flag
// once to the subcommand.
func TestConvertFlagValuesAreNotInputs(t *testing.T) {
	dir := filepath.Join(kopsTestdata, "static-seed-001")
	stdout, stderr, err := run(t, "", "convert", filepath.Join(dir, "input.yaml"),
		"--user-data-dir", filepath.Join(dir, "userdata"), "--root-device-name", "/dev/sda1")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	want, err := os.ReadFile(filepath.Join(dir, "output.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("stdout differs from %s:\n%s", dir, stdout)
	}
}

// TestConvertRefusesWhatTheAPIServerWould: a legacy TTL longer than a duration holds, once a
// panic, and values the v1 CRDs refuse are usage errors naming the file, line and field, and
// nothing is written.
func TestConvertRefusesWhatTheAPIServerWould(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  []string
	}{
		{"error-ttl-too-long", []string{
			"input.yaml:8: Provisioner \"default\": spec.ttlSecondsAfterEmpty: Invalid value: 9223372037: must be at most 9223372036 seconds",
			"input.yaml:9: Provisioner \"default\": spec.ttlSecondsUntilExpired: Invalid value: 9223372036854775807: must be at most 9223372036 seconds",
		}},
		{"error-refused-output", []string{
			`input.yaml:14: Provisioner "default": spec.requirements[1].operator: Unsupported value: "Maybe"`,
			// v1.15.2's kubelet is free-form: the EC2NodeClass controller refuses what the CRD did.
			`input.yaml:20: Provisioner "default": spec.kubeletConfiguration.maxPods: -1 can't be negative (InvalidKubeletConfiguration, by the EC2NodeClass controller)`,
		}},
	} {
		out := filepath.Join(t.TempDir(), "out")
		input := filepath.Join("../../pkg/convert/legacy/testdata", tc.input, "input.yaml")
		for _, args := range [][]string{{"convert", "legacy", input, "-o", out}, {"convert", input}} {
			stdout, _, err := run(t, "", args...)
			var usage usageError
			if !errors.As(err, &usage) {
				t.Fatalf("%v: want a usage error (exit 2), got %v", args, err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%v: %v\nwant it to say %q", args, err, want)
				}
			}
			if stdout != "" {
				t.Errorf("%v: stdout %q", args, stdout)
			}
			if _, statErr := os.Stat(out); !os.IsNotExist(statErr) {
				t.Errorf("%v: output directory exists after an error: %v", args, statErr)
			}
		}
	}
}
