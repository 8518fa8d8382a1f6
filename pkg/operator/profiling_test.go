package operator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestProfilingHandlers: with ENABLE_PROFILING the metrics address serves Karpenter's pprof
// paths (the index and named profiles such as the heap); without it, none.
func TestProfilingHandlers(t *testing.T) {
	if h := profilingHandlers(false); h != nil {
		t.Errorf("profiling off serves %d paths", len(h))
	}
	mux := http.NewServeMux()
	for path, h := range profilingHandlers(true) {
		mux.Handle(path, h)
	}
	server := httptest.NewServer(mux)
	defer server.Close()
	for path, want := range map[string]string{"/debug/pprof/": "goroutine", "/debug/pprof/heap?debug=1": "heap profile", "/debug/pprof/goroutine?debug=1": "goroutine profile"} {
		resp, err := http.Get(server.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, body lacks %q", path, resp.StatusCode, want)
		}
	}
}
