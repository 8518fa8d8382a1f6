package view

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the output")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run with -update to accept it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// cluster is a small cluster with a node in every state, an unmanaged node, claims launching
// and pending pods.
func cluster() Objects {
	launched := map[string]string{corev1.LabelInstanceTypeStable: "large", karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeSpot, corev1.LabelTopologyZone: "zone-b"}
	return Objects{
		Nodes: []corev1.Node{
			testNode("ip-10-0-1-10.ec2.internal", nodeOptions{created: t0.Add(-50 * time.Hour), cpu: "2", memory: "8Gi"}),
			testNode("ip-10-0-1-11.ec2.internal", nodeOptions{created: t0.Add(-3 * time.Hour), instanceType: "large", capacityType: karpv1.CapacityTypeSpot, zone: "zone-b", cpu: "8", memory: "32Gi"}),
			testNode("ip-10-0-1-12.ec2.internal", nodeOptions{created: t0.Add(-90 * time.Minute), cordoned: true}),
			testNode("ip-10-0-1-13.ec2.internal", nodeOptions{created: t0.Add(-80 * time.Minute), disrupted: true}),
			testNode("ip-10-0-1-14.ec2.internal", nodeOptions{created: t0.Add(-45 * time.Second), notReady: true}),
			testNode("system-1", nodeOptions{created: t0.Add(-400 * 24 * time.Hour), unmanaged: true, instanceType: "m-unknown.xlarge", cpu: "4", memory: "16Gi"}),
		},
		NodeClaims: []karpv1.NodeClaim{
			testClaim("default-x7k2p", claimOptions{labels: launched, created: t0.Add(-20 * time.Second)}),
			testClaim("default-q9w4z", claimOptions{created: t0.Add(-5 * time.Second)}),
		},
		Pods: []corev1.Pod{
			testPod("a1", "ip-10-0-1-10.ec2.internal", "1500m", "2Gi", corev1.PodRunning),
			testPod("a2", "ip-10-0-1-10.ec2.internal", "250m", "512Mi", corev1.PodRunning),
			testPod("b1", "ip-10-0-1-11.ec2.internal", "7", "30Gi", corev1.PodRunning),
			testPod("b2", "ip-10-0-1-11.ec2.internal", "1", "1Gi", corev1.PodSucceeded),
			testPod("c1", "ip-10-0-1-12.ec2.internal", "100m", "100Mi", corev1.PodRunning),
			testPod("s1", "system-1", "3", "4Gi", corev1.PodRunning),
			testPod("pending-1", "", "1", "1Gi", corev1.PodPending),
			testPod("pending-2", "", "1", "1Gi", corev1.PodPending),
			testPod("pending-3", "", "1", "1Gi", corev1.PodPending),
		},
	}
}

func render(t *testing.T, s Snapshot, opts RenderOptions) string {
	t.Helper()
	var b bytes.Buffer
	if err := Render(&b, s, opts); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestViewRenderGolden(t *testing.T) {
	for _, key := range []SortKey{SortCreation, SortPrice} {
		s := NewSnapshot(cluster(), Options{Now: t0, Prices: testPrices, Sort: key})
		golden(t, "render-"+string(key)+".txt", render(t, s, RenderOptions{}))
	}
	golden(t, "render-empty.txt", render(t, NewSnapshot(Objects{}, Options{Now: t0}), RenderOptions{BarWidth: 10}))
}

func TestViewRenderPlainHasNoEscapes(t *testing.T) {
	out := render(t, NewSnapshot(cluster(), Options{Now: t0, Prices: testPrices}), RenderOptions{})
	if strings.Contains(out, "\x1b") {
		t.Errorf("plain output has escape codes:\n%q", out)
	}
}

func TestViewRenderColor(t *testing.T) {
	s := NewSnapshot(Objects{
		Nodes: []corev1.Node{
			testNode("low", nodeOptions{cpu: "10", memory: "10Gi", created: t0.Add(-3 * time.Hour)}),
			testNode("mid", nodeOptions{cpu: "10", memory: "10Gi", created: t0.Add(-2 * time.Hour)}),
			testNode("high", nodeOptions{cpu: "10", memory: "10Gi", created: t0.Add(-time.Hour), notReady: true}),
		},
		Pods: []corev1.Pod{
			testPod("a", "low", "1", "1Gi", corev1.PodRunning),
			testPod("b", "mid", "7500m", "7Gi", corev1.PodRunning),
			testPod("c", "high", "9500m", "10Gi", corev1.PodRunning),
		},
	}, Options{Now: t0, Prices: testPrices})
	out := render(t, s, RenderOptions{Color: true, BarWidth: 10})
	lines := strings.Split(out, "\n")
	find := func(prefix string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		t.Fatalf("no line starts with %q in:\n%s", prefix, out)
		return ""
	}
	for _, tc := range []struct{ line, want string }{
		{"low", ansiGreen + "█░░░░░░░░░  10%" + ansiReset},
		{"mid", ansiYellow + "████████░░  75%" + ansiReset},
		{"high", ansiRed + "█████████░  95%" + ansiReset}, // CPU: not quite full
		{"high", ansiRed + "██████████ 100%" + ansiReset}, // memory
		{"high", ansiRed + "NotReady" + ansiReset},
		{ansiBold + "NAME", ansiBold + "NAME" + ansiReset + "  " + ansiBold + "NODEPOOL" + ansiReset},
	} {
		if l := find(tc.line); !strings.Contains(l, tc.want) {
			t.Errorf("line %q lacks %q", l, tc.want)
		}
	}
	// Colour codes do not count towards column widths: the columns line up as in plain text.
	plain := render(t, s, RenderOptions{BarWidth: 10})
	if got := stripANSI(out); got != plain {
		t.Errorf("coloured output without its codes differs from plain:\n%s\nvs\n%s", got, plain)
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\x1b' {
			i += strings.IndexByte(s[i:], 'm')
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func TestViewRenderPages(t *testing.T) {
	s := NewSnapshot(cluster(), Options{Now: t0, Prices: testPrices})
	full := render(t, s, RenderOptions{})
	if lines := strings.Count(full, "\n"); lines != 14 { // 4 header, blank, titles, 8 rows
		t.Fatalf("full frame has %d lines, want 14", lines)
	}
	fullLines := strings.Split(full, "\n")
	header, rows := fullLines[:6], fullLines[6:14]
	for _, tc := range []struct {
		height, page int
		keys         bool
		wantRows     []string // lines of the full frame's rows shown
		wantFooter   string   // the last line; "" for none
	}{
		{0, 0, false, rows, ""},
		{14, 0, false, rows, ""},
		{100, 3, true, rows, ""}, // all fit: no pages, whatever the page asked
		{13, 0, false, rows[:6], "rows 1–6 of 8, page 1/2 (a taller terminal shows more)"},
		{13, 1, false, rows[6:], "rows 7–8 of 8, page 2/2 (a taller terminal shows more)"},
		{13, 7, true, rows[6:], "rows 7–8 of 8, page 2/2  ·  ←/→ or PgUp/PgDn: page  ·  q: quit"}, // past the last
		{13, -1, true, rows[:6], "rows 1–6 of 8, page 1/2  ·  ←/→ or PgUp/PgDn: page  ·  q: quit"},
		{10, 1, false, rows[3:6], "rows 4–6 of 8, page 2/3 (a taller terminal shows more)"},
		{8, 7, false, rows[7:], "rows 8–8 of 8, page 8/8 (a taller terminal shows more)"},
		{3, 2, false, rows[2:3], "rows 3–3 of 8, page 3/8 (a taller terminal shows more)"}, // one row a page at least
	} {
		out := render(t, s, RenderOptions{Height: tc.height, Page: tc.page, PageKeys: tc.keys})
		want := slices.Concat(header, tc.wantRows)
		if tc.wantFooter != "" {
			want = append(want, tc.wantFooter)
		}
		if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !slices.Equal(got, want) {
			t.Errorf("height %d, page %d: got\n%s\nwant\n%s", tc.height, tc.page, out, strings.Join(want, "\n"))
		}
		if n := strings.Count(out, "\n"); tc.height > 0 && n > max(tc.height, 8) {
			t.Errorf("height %d: %d lines", tc.height, n)
		}
	}
	// Every page in turn shows every row once, in order.
	var paged []string
	for page := range pageCount(&s, 9) {
		lines := strings.Split(render(t, s, RenderOptions{Height: 9, Page: page}), "\n")
		paged = append(paged, lines[6:len(lines)-2]...)
	}
	if !slices.Equal(paged, rows) {
		t.Errorf("the pages show\n%s\nwant\n%s", strings.Join(paged, "\n"), strings.Join(rows, "\n"))
	}
	// The footer is dimmed in colour.
	if out := render(t, s, RenderOptions{Height: 9, Color: true}); !strings.Contains(out, ansiDim+"rows 1–2 of 8, page 1/4") {
		t.Errorf("no dim footer in:\n%q", out)
	}
}

func TestViewBar(t *testing.T) {
	for _, tc := range []struct {
		f     float64
		width int
		want  string
	}{
		{0, 4, "░░░░"},
		{-1, 4, "░░░░"},
		{0.01, 4, "█░░░"}, // anything above zero shows
		{0.25, 4, "█░░░"},
		{0.5, 4, "██░░"},
		{0.62, 4, "██░░"},
		{0.63, 4, "███░"},
		{0.99, 4, "███░"}, // anything below full leaves a gap
		{1, 4, "████"},
		{2.5, 4, "████"},
		{0.5, 0, ""},
	} {
		if got := bar(tc.f, tc.width); got != tc.want {
			t.Errorf("bar(%v, %d) = %q, want %q", tc.f, tc.width, got, tc.want)
		}
	}
}

func TestViewFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{cores(16000), "16"},
		{cores(6500), "6.5"},
		{cores(250), "0.25"},
		{cores(1), "0"},
		{cores(0), "0"},
		{bytesIEC(64 << 30), "64Gi"},
		{bytesIEC(12<<30 + 300<<20), "12.3Gi"},
		{bytesIEC(512 << 20), "512Mi"},
		{bytesIEC(0), "0Mi"},
		{dollars(1.23456, 3), "$1.235"},
		{dollars(0, 2), "$0.00"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if w := width(ansiRed + "██ 5%" + ansiReset); w != 5 {
		t.Errorf("width = %d, want 5", w)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

func TestViewRenderWriteError(t *testing.T) {
	if err := Render(failingWriter{}, Snapshot{}, RenderOptions{}); err == nil {
		t.Error("Render swallowed the writer's error")
	}
}

// TestViewRenderWidth: a frame wider than the terminal gives up its columns of least use first,
// then narrows its bars and shortens its names: at 80, 120 and 140 columns and one short of
// its full width, no line is wider, and every row keeps its name (shortened), cost, bars and
// state. Only past what the steps can give up are lines cut.
func TestViewRenderWidth(t *testing.T) {
	s := NewSnapshot(cluster(), Options{Now: t0, Prices: testPrices})
	widest := func(frame string) int {
		w := 0
		for l := range strings.Lines(frame) {
			w = max(w, width(strings.TrimSuffix(l, "\n")))
		}
		return w
	}
	full := render(t, s, RenderOptions{})
	if got := render(t, s, RenderOptions{Width: widest(full)}); got != full {
		t.Errorf("at its full width the frame changed:\n%s\nwant\n%s", got, full)
	}
	for _, w := range []int{widest(full) - 1, 140, 120, 80} {
		for _, color := range []bool{false, true} {
			out := render(t, s, RenderOptions{Width: w, Color: color})
			if got := widest(out); got > w {
				t.Errorf("width %d: a line of %d cells:\n%s", w, got, out)
			}
			plain := stripANSI(out)
			for _, r := range s.Rows {
				line := ""
				for l := range strings.Lines(plain) {
					if strings.HasPrefix(l, shortName(r.Name, 16)) {
						line = l
					}
				}
				price := "-"
				if r.Priced {
					price = strconv.FormatFloat(r.Price, 'f', 4, 64)
				}
				if line == "" || !strings.Contains(line, price) || !r.Claim && !strings.Contains(line, barEmpty+barEmpty) && !strings.Contains(line, barFull) ||
					!strings.HasSuffix(strings.TrimSpace(line), string(r.State)) {
					t.Errorf("width %d, colour %v: row %s lacks its name, price %s, bars or state %s:\n%s", w, color, r.Name, price, r.State, plain)
				}
			}
		}
	}
	// At 80 columns the age, capacity type and zone went first.
	narrow := stripANSI(render(t, s, RenderOptions{Width: 80}))
	for _, gone := range []string{"AGE", "CAPACITY", "ZONE"} {
		if strings.Contains(narrow, gone) {
			t.Errorf("at 80 columns the %s column stays:\n%s", gone, narrow)
		}
	}
	// Too narrow for what the steps can give up: lines are cut, their colours reset.
	out := render(t, s, RenderOptions{Width: 30, Color: true})
	for l := range strings.Lines(out) {
		l = strings.TrimSuffix(l, "\n")
		if width(l) > 30 {
			t.Errorf("width 30: a line of %d cells: %q", width(l), l)
		}
		if width(l) == 30 && strings.Contains(l, "\x1b[") && !strings.HasSuffix(l, ansiReset) {
			t.Errorf("width 30: a cut line does not reset its colour: %q", l)
		}
	}
}

// resourceCluster is cluster() with a GPU node of team ml whose pods request GPUs and local
// storage, for the views of other resources and of extra labels.
func resourceCluster() Objects {
	objs := cluster()
	gpu := testNode("gpu-1", nodeOptions{created: t0.Add(-2 * time.Hour), instanceType: "large", cpu: "8", memory: "32Gi",
		labels: map[string]string{"team": "ml"}})
	gpu.Status.Allocatable[gpuResource] = resource.MustParse("4")
	gpu.Status.Allocatable[corev1.ResourceEphemeralStorage] = resource.MustParse("100Gi")
	objs.Nodes = append(objs.Nodes, gpu)
	for _, name := range []string{"train-1", "train-2", "train-3"} {
		p := *builders.Pod(builders.PodOptions{Name: name, NodeName: "gpu-1", CPU: "2", Memory: "4Gi",
			Extended: map[corev1.ResourceName]string{gpuResource: "1", corev1.ResourceEphemeralStorage: "10Gi"}})
		p.Status.Phase = corev1.PodRunning
		objs.Pods = append(objs.Pods, p)
	}
	return objs
}

const gpuResource corev1.ResourceName = "nvidia.com/gpu"

func TestViewRenderResourcesAndLabels(t *testing.T) {
	s := NewSnapshot(resourceCluster(), Options{
		Now: t0, Prices: testPrices,
		Resources:   []corev1.ResourceName{corev1.ResourceCPU, gpuResource, corev1.ResourceEphemeralStorage},
		ExtraLabels: []string{corev1.LabelTopologyZone, "team", UsageLabel(corev1.ResourceMemory), NodeAgeLabel},
	})
	out := render(t, s, RenderOptions{BarWidth: 10})
	golden(t, "render-resources.txt", out)

	lines := strings.Split(out, "\n")
	for _, want := range []string{
		// The header's titles widen to the longest resource name.
		"Cost               $1.100/hour  $803.00/month  (2 rows without a price)",
		"CPU                ██████░░░░  64%  17.85 of 28 cores requested",
		"nvidia.com/gpu     ████████░░  75%  3 of 4 requested",
		"ephemeral-storage  ███░░░░░░░  30%  30Gi of 100Gi requested",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Memory ") {
		t.Errorf("memory, measured for an extra label, is shown:\n%s", out)
	}
	titles := strings.Fields(lines[6])
	if want := []string{"NAME", "NODEPOOL", "TYPE", "CAPACITY", "ZONE", "$/HOUR", "CPU", "NVIDIA.COM/GPU", "EPHEMERAL-STORAGE",
		"PODS", "AGE", "STATE", "ZONE", "TEAM", "NODE-MEMORY-USAGE", "NODE-AGE"}; !slices.Equal(titles, want) {
		t.Errorf("titles %q, want %q", titles, want)
	}
	for _, tc := range []struct {
		name string
		want []string // the fields after STATE: zone, team, memory usage, age
	}{
		{"gpu-1", []string{"zone-a", "ml", "38%", "120m"}},
		{"system-1", []string{"zone-a", "-", "25%", "400d"}},
		{"default-x7k2p", []string{"zone-b", "-", "-", "20s"}}, // a claim: its launched zone, no usage
		{"default-q9w4z", []string{"-", "-", "-", "5s"}},
	} {
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 0 && f[0] == tc.name {
				if got := f[len(f)-4:]; !slices.Equal(got, tc.want) {
					t.Errorf("%s: extra labels %q, want %q", tc.name, got, tc.want)
				}
			}
		}
	}
	// The GPU node's usage bars and pods.
	if l := lines[slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "gpu-1 ") })]; !strings.Contains(l, "████████░░  75%  ███░░░░░░░  30%    3/110") {
		t.Errorf("gpu-1's line %q lacks its GPU and storage bars and 3/110 pods", l)
	}
}

func TestViewExtraLabelTitles(t *testing.T) {
	got := extraLabelTitles([]string{"topology.kubernetes.io/zone", "team", "karpenter.sh/nodepool", "example.com/nodepool", NodeAgeLabel})
	want := []string{"ZONE", "TEAM", "KARPENTER.SH/NODEPOOL", "EXAMPLE.COM/NODEPOOL", "NODE-AGE"}
	if !slices.Equal(got, want) {
		t.Errorf("titles %q, want %q", got, want)
	}
}

func TestViewAmount(t *testing.T) {
	for _, tc := range []struct {
		name corev1.ResourceName
		v    int64
		want string
	}{
		{corev1.ResourceCPU, 2500, "2.5"},
		{corev1.ResourceMemory, 3 << 30, "3Gi"},
		{corev1.ResourceEphemeralStorage, 512 << 20, "512Mi"},
		{"hugepages-2Mi", 1 << 30, "1Gi"},
		{corev1.ResourcePods, 110, "110"},
		{gpuResource, 4, "4"},
	} {
		if got := amount(tc.name, tc.v); got != tc.want {
			t.Errorf("amount(%s, %d) = %q, want %q", tc.name, tc.v, got, tc.want)
		}
	}
}

// With three bars a line, once the columns of least use are gone, each bar gives up a third of
// the excess width, rounded up.
func TestViewRenderWidthThreeBars(t *testing.T) {
	s := NewSnapshot(resourceCluster(), Options{Now: t0, Prices: testPrices,
		Resources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, gpuResource}})
	fit := fitting{hidden: map[string]bool{"AGE": true, "CAPACITY": true, "ZONE": true}, nameMax: 28}
	fullFrame, full := renderFrame(&s, RenderOptions{BarWidth: DefaultBarWidth}, fit)
	for _, tc := range []struct{ width, wantBar int }{
		{full, DefaultBarWidth},
		{full - 1, DefaultBarWidth - 1},
		{full - 3, DefaultBarWidth - 1},
		{full - 4, DefaultBarWidth - 2},
		{full - 30, DefaultBarWidth - 10},
	} {
		got := render(t, s, RenderOptions{Width: tc.width})
		want, _ := renderFrame(&s, RenderOptions{BarWidth: tc.wantBar}, fit)
		if tc.width == full {
			want = fullFrame
		}
		if got != want {
			t.Errorf("width %d: not the frame with bars of %d:\n%s\nwant\n%s", tc.width, tc.wantBar, got, want)
		}
	}
}
