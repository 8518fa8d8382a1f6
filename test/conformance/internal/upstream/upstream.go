// Package upstream finds Karpenter's own sources for the conformance checks that read them.
package upstream

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// CoreFile is the path of a file of Karpenter core (sigs.k8s.io/karpenter, at the version this
// module requires) in the module cache, such as "pkg/events/reason.go".
func CoreFile(t testing.TB, path string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/karpenter").Output()
	if err != nil {
		t.Fatalf("locating sigs.k8s.io/karpenter: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(path))
}
