package eksctl_test

import (
	"testing"

	"github.com/openkarpenter/karpenter/pkg/convert/eksctl"
	"github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
)

// TestGolden converts every testdata case and compares the outcome with its golden files.
func TestGolden(t *testing.T) {
	for _, c := range golden.Cases(t, "testdata") {
		t.Run(c.Name, func(t *testing.T) {
			var opts eksctl.Options
			c.Options(t, &opts)
			result, err := eksctl.Convert(c.Sources(t), opts)
			golden.Check(t, c, golden.OutcomeOf(t, result, err))
		})
	}
}
