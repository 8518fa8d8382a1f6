package eksctl

import "testing"

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.2.1", "v1.2.1", 0},
		{"0.28.0", "v0.20.0", 1},
		{"v0.19.3", "v0.20.0", -1},
		{"1.2", "1.2.0", 0},
		{"1", "0.99.99", 1},
		{"0.20.0-rc.1", "0.20.0", -1},
		{"0.20.0+build.5", "0.20.0", 0},
		{"0.32.10", "0.32.9", 1},
	} {
		a, err := parseVersion(tc.a)
		if err != nil {
			t.Fatalf("%s: %v", tc.a, err)
		}
		if got := a.compare(mustParseVersion(tc.b)); got != tc.want {
			t.Errorf("compare(%s, %s) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	for _, bad := range []string{"latest", "", "v", "1..2", "1.2.x", "one"} {
		if _, err := parseVersion(bad); err == nil || err.Error() != "Malformed version: "+bad {
			t.Errorf("%q: got %v", bad, err)
		}
	}
}
