package harness

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SimulateJSON runs `binary simulate -o json` on plain manifests and decodes its report
// (package simulate's Report, or the part of it the caller reads) into report, failing the
// test on error.
func SimulateJSON(t testing.TB, binary, manifests string, report any) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(file, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary, "simulate", "-o", "json", file).Output()
	if err != nil {
		var stderr string
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("karpenter simulate: %v\n%s", err, stderr)
	}
	if err := json.Unmarshal(out, report); err != nil {
		t.Fatalf("reading the simulate report: %v", err)
	}
}
