package main

import (
	"errors"
	"strings"
	"testing"
)

// TestVersionFlag: `karpenter --version` prints what `karpenter version` prints.
func TestVersionFlag(t *testing.T) {
	flag, _, err := run(t, "", "--version")
	if err != nil {
		t.Fatalf("karpenter --version: %v", err)
	}
	command, _, err := run(t, "", "version")
	if err != nil {
		t.Fatalf("karpenter version: %v", err)
	}
	if flag != command || !strings.HasPrefix(flag, "karpenter "+version+" (revision ") {
		t.Errorf("karpenter --version printed %q, karpenter version %q", flag, command)
	}
}

// TestSimulateReportPathCheckedFirst: a --report page that cannot be written fails before the
// run, naming the path and what is wrong with it.
func TestSimulateReportPathCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{dir + "/missing/report.html", "--report " + dir + "/missing/report.html: the directory " + dir + "/missing does not exist"},
		{dir, "--report " + dir + ": is a directory: name a file, such as " + dir + "/report.html"},
	} {
		_, _, err := run(t, "", "simulate", "../../examples/web.yaml", "--report", tc.path)
		var usage usageError
		if !errors.As(err, &usage) || err.Error() != tc.want {
			t.Errorf("--report %s: got %v, want the usage error %q", tc.path, err, tc.want)
		}
	}
}
