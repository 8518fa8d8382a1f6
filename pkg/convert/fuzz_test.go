package convert_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/openkarpenter/karpenter/pkg/convert"
)

// FuzzDetectFormat feeds the reader and the format detection of `karpenter convert FILE`
// arbitrary files (seeded in testdata/fuzz/FuzzDetectFormat from the converters' golden inputs
// and hostile ones): they must not panic; the reader must name the file first in every error,
// or return documents that are JSON objects that know their line; the detection must name one
// of the three formats or say why not.
func FuzzDetectFormat(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		sources, err := convert.ReadSources("fuzz.yaml", bytes.NewReader(data))
		if err != nil {
			for _, line := range convert.AsErrors(err).Lines() {
				if !strings.HasPrefix(line, "fuzz.yaml:") {
					t.Errorf("an error that does not start with the file name: %s", line)
				}
			}
			return
		}
		for _, src := range sources {
			if trimmed := bytes.TrimSpace(src.JSON); len(trimmed) == 0 || trimmed[0] != '{' {
				t.Errorf("%s is not a JSON object: %s", src, src.JSON)
			}
			if src.Line < 1 || !strings.HasPrefix(src.At("metadata.name"), "fuzz.yaml:") {
				t.Errorf("%s: no line (document line %d)", src, src.Line)
			}
		}
		format, err := convert.DetectFormat(sources)
		switch {
		case err != nil:
			if !strings.HasPrefix(err.Error(), "fuzz.yaml: cannot tell the format") && !strings.HasPrefix(err.Error(), "fuzz.yaml: the files mix formats") {
				t.Errorf("detection: %v", err)
			}
		case format != convert.FormatKops && format != convert.FormatEksctl && format != convert.FormatLegacy:
			t.Errorf("format %q", format)
		}
	})
}
