package legacy_test

import (
	"testing"

	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/convert/internal/golden"
	"github.com/openkarpenter/karpenter/pkg/convert/legacy"
)

// FuzzConvert feeds the legacy converter arbitrary files (seeded in testdata/fuzz/FuzzConvert
// from the golden inputs and hostile ones), with and without the v0.x defaults: it must not
// panic, every error must name the file, and every accepted output must pass the CRDs.
func FuzzConvert(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, ignoreDefaults bool) {
		golden.CheckFuzzed(t, data, func(sources []convert.Source) (*convert.Result, error) {
			return legacy.Convert(sources, legacy.Options{IgnoreDefaults: ignoreDefaults})
		})
	})
}
