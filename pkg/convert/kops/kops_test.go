package kops_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
	"github.com/openkarpenter/karpenter/pkg/convert/kops"
)

// TestGolden converts every testdata case and compares the outcome with its golden files.
func TestGolden(t *testing.T) {
	for _, c := range golden.Cases(t, "testdata") {
		t.Run(c.Name, func(t *testing.T) {
			result, err := ConvertCase(t, c)
			golden.Check(t, c, golden.OutcomeOf(t, result, err))
		})
	}
}

// ConvertCase runs the conversion of a case: its options.yaml, and the nodeup scripts of its
// userdata/ folder as --user-data-dir would read them.
func ConvertCase(t testing.TB, c golden.Case) (*convert.Result, error) {
	t.Helper()
	var opts kops.Options
	c.Options(t, &opts)
	if c.Has("userdata") {
		scripts, err := kops.LoadUserData(c.Path("userdata"))
		if err != nil {
			t.Fatal(err)
		}
		if opts.UserData == nil {
			opts.UserData = map[string]string{}
		}
		for k, v := range scripts {
			opts.UserData[k] = v
		}
	}
	if c.Has("existing.yaml") {
		existing, err := kops.ExistingNodePools(c.SourcesOf(t, "existing.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		opts.ExistingNodePools = existing
	}
	return kops.Convert(c.Sources(t), opts)
}

func TestLoadUserData(t *testing.T) {
	dir := t.TempDir()
	write := func(path, content string) {
		t.Helper()
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/nodeupscript.sh", "#!/bin/bash\n# a\n")
	write("b.sh", "#!/bin/bash\n# b\n")
	write("notes.txt", "ignored")
	write("empty-folder/other.txt", "ignored")
	scripts, err := kops.LoadUserData(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(scripts) != 2 || scripts["a"] != "#!/bin/bash\n# a\n" || scripts["b"] != "#!/bin/bash\n# b\n" {
		t.Errorf("got %v", scripts)
	}
	write("a.sh", "#!/bin/bash\n")
	if _, err := kops.LoadUserData(dir); err == nil || !strings.Contains(err.Error(), `two nodeup scripts for InstanceGroup "a"`) {
		t.Errorf("two scripts for one group: got %v", err)
	}
	if _, err := kops.LoadUserData(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory: want an error")
	}
}
