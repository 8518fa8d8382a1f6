package main

import (
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
