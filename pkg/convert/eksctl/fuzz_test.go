package eksctl_test

import (
	"testing"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/convert/eksctl"
	"github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
)

// FuzzConvert feeds the eksctl converter arbitrary files (seeded in testdata/fuzz/FuzzConvert
// from the golden inputs and hostile ones): it must not panic, every error must name the file,
// and every accepted output must pass the CRDs.
func FuzzConvert(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		golden.CheckFuzzed(t, data, func(sources []convert.Source) (*convert.Result, error) {
			return eksctl.Convert(sources, eksctl.Options{AccountID: "123456789012"})
		})
	})
}
