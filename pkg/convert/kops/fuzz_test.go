package kops_test

import (
	"testing"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
	"github.com/openkarpenter/karpenter/pkg/convert/kops"
)

// FuzzConvert feeds the kOps converter arbitrary files (seeded in testdata/fuzz/FuzzConvert
// from the golden inputs and hostile ones), for kOps 1.36's output and the legacy one: it must
// not panic, every error must name the file, and every accepted output must pass the CRDs.
func FuzzConvert(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, legacy bool) {
		golden.CheckFuzzed(t, data, func(sources []convert.Source) (*convert.Result, error) {
			return kops.Convert(sources, kops.Options{Legacy: legacy, RootDeviceName: "/dev/xvda"})
		})
	})
}
