// Package eventsref checks, from Karpenter's own sources, that every Event reason the reference
// release defines is accounted for in docs/events.md: recorded by our controllers (a row of its
// tables) or listed, with why, among "Karpenter's Events we do not record". The next release's
// new reasons fail here until they are.
package eventsref

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/openkarpenter/karpenter/test/conformance/internal/upstream"
)

// upstreamReasons reads the string constants of Karpenter core's pkg/events/reason.go from the
// module cache.
func upstreamReasons(t *testing.T) []string {
	t.Helper()
	path := upstream.CoreFile(t, "pkg/events/reason.go")
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for _, v := range spec.Values {
			if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				s, _ := strconv.Unquote(lit.Value)
				reasons = append(reasons, s)
			}
		}
		return false
	})
	if len(reasons) < 10 {
		t.Fatalf("%s: only %d reasons read", path, len(reasons))
	}
	return reasons
}

// TestEveryEventReasonAccountedFor: each of Karpenter core v1.15.0's Event reasons is a reason
// of a row of docs/events.md's tables, or named in its section of Events not recorded.
func TestEveryEventReasonAccountedFor(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "events.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	const notRecordedHeading = "### Karpenter's Events we do not record"
	start := strings.Index(doc, notRecordedHeading)
	if start < 0 {
		t.Fatalf("docs/events.md has no %q section", notRecordedHeading)
	}
	notRecorded := doc[start:]
	if end := strings.Index(notRecorded[len(notRecordedHeading):], "\n## "); end >= 0 {
		notRecorded = notRecorded[:len(notRecordedHeading)+end]
	}
	recorded := map[string]bool{}
	row := regexp.MustCompile("^\\|[^|]*\\|[^|]*\\| ([^|]*)\\|")
	name := regexp.MustCompile("`([A-Za-z]+)`")
	for _, line := range strings.Split(doc[:start], "\n") {
		if m := row.FindStringSubmatch(line); m != nil {
			for _, r := range name.FindAllStringSubmatch(m[1], -1) {
				recorded[r[1]] = true
			}
		}
	}
	for _, reason := range upstreamReasons(t) {
		if !recorded[reason] && !strings.Contains(notRecorded, "`"+reason+"`") {
			t.Errorf("Karpenter's Event reason %s is neither recorded (a row of docs/events.md) nor listed among the Events not recorded", reason)
		}
	}
}
