package eksctl

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// versionPattern is the version syntax eksctl accepts (hashicorp/go-version's): an optional
// "v", dot-separated numbers, an optional pre-release and optional build metadata.
var versionPattern = regexp.MustCompile(`^v?([0-9]+(\.[0-9]+)*?)` +
	`(-([0-9]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)|(-?([A-Za-z\-~]+[0-9A-Za-z\-~]*(\.[0-9A-Za-z\-~]+)*)))?` +
	`(\+([0-9A-Za-z\-~]+(\.[0-9A-Za-z\-~]+)*))?$`)

// version is a parsed version: its numbers and its pre-release.
type version struct {
	segments   []int64
	prerelease string
	original   string
}

// parseVersion reads a version as eksctl does, with eksctl's error text.
func parseVersion(s string) (version, error) {
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		// Capitalized: it is the text eksctl users see (from hashicorp/go-version).
		return version{}, fmt.Errorf("Malformed version: %s", s)
	}
	v := version{original: s, prerelease: m[7]}
	if m[4] != "" {
		v.prerelease = m[4]
	}
	for _, part := range strings.Split(m[1], ".") {
		n, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return version{}, fmt.Errorf("Error parsing version: %w", err)
		}
		v.segments = append(v.segments, n)
	}
	for len(v.segments) < 3 {
		v.segments = append(v.segments, 0)
	}
	return v, nil
}

// mustParseVersion parses a version known to be valid.
func mustParseVersion(s string) version {
	v, err := parseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// compare returns -1, 0 or 1 as v is older than, the same as or newer than o. A pre-release
// is older than its release; pre-releases compare as text.
func (v version) compare(o version) int {
	for i := 0; i < max(len(v.segments), len(o.segments)); i++ {
		a, b := segment(v.segments, i), segment(o.segments, i)
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
	}
	switch {
	case v.prerelease == o.prerelease:
		return 0
	case v.prerelease == "":
		return 1
	case o.prerelease == "":
		return -1
	case v.prerelease < o.prerelease:
		return -1
	default:
		return 1
	}
}

func segment(s []int64, i int) int64 {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// lessThan reports whether v is older than o.
func (v version) lessThan(o version) bool { return v.compare(o) < 0 }
