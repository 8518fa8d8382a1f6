package simulate

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// twoPools is a workload on two NodePools (spot first by weight, on-demand after) whose
// timeline has a scale-up, jobs, an interruption and a shortage: each a marker on the charts.
const twoPools = `name: two pools
duration: 2h
seed: 5
cloud: {zones: [us-east-1a, us-east-1b]}
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: spot}
  spec:
    weight: 50
    template:
      spec:
        requirements:
          - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
          - {key: kubernetes.io/arch, operator: In, values: [amd64]}
          - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
    limits: {cpu: "16"}
  ---
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: on-demand}
  spec:
    template:
      spec:
        requirements:
          - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
          - {key: kubernetes.io/arch, operator: In, values: [amd64]}
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
` + nodeClassManifest + `timeline:
  - at: 0s
    deploy: {name: web, replicas: 10, pod: {cpu: "1", memory: 2Gi}}
  - at: 20m
    scale: {name: web, replicas: 30}
  - at: 40m
    jobs: {name: batch, count: 8, runtime: 20m, pod: {cpu: "2", memory: 4Gi}}
  - at: 50m
    interrupt: {count: 1}
  - at: 70m
    capacityShortage: {capacityType: spot, for: 20m}
  - at: 80m
    scale: {name: web, replicas: 5}
`

// TestHTMLReportInChromium renders a report in headless Chromium (Debian's chromium package,
// installed by .ci/run) and checks the screenshot: the summary and drawn charts (the nodes
// line's blue and the cost line's green), the timeline's numbered markers on every chart, and
// the per-NodePool view (each NodePool's colour).
func TestHTMLReportInChromium(t *testing.T) {
	rep := run(t, twoPools)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, rep); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, want := range []string{"karpenter simulate: two pools", "Final fleet", "<svg", "Nodes launched by instance type", "Timeline",
		"Nodes by NodePool", "Nodes, spot and on-demand", "Time pods waited for a node", "Nodes removed", "Interrupted",
		"Launches refused for want of capacity", "Event log", "capacity shortage for 20m0s", "NodePools"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(html, "<script") || strings.Contains(html, "http://") || strings.Contains(html, "https://") {
		t.Error("the report is not self-contained")
	}
	// Six timeline events, marked on each of the five charts over time.
	if got := strings.Count(html, `<g class="marker">`); got != 6*5 {
		t.Errorf("%d markers drawn, want 6 events on 5 charts", got)
	}
	img := screenshot(t, html, 1200, 2600)
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 2000 {
		t.Fatalf("screenshot is %v", b)
	}
	for _, c := range []struct {
		what    string
		r, g, b uint8
		least   int
	}{
		{"the nodes line's blue", 0x25, 0x63, 0xeb, 50},
		{"the cost line's green", 0x16, 0xa3, 0x4a, 50},
		{"the spot line", 0xf5, 0x9e, 0x0b, 50},
		{"the first NodePool's line", 0x0d, 0x94, 0x88, 50},
		{"the second NodePool's line", 0x93, 0x33, 0xea, 50},
		{"the markers' circles", 0x37, 0x41, 0x51, 6 * 5 * 60},
	} {
		if n := countColor(img, c.r, c.g, c.b); n < c.least {
			t.Errorf("%s not drawn: %d pixels, want %d", c.what, n, c.least)
		}
	}
}

// TestCompareReportInChromium renders --compare's page: the differences come first, both runs
// are drawn on the same charts (A blue, B pink) with the markers, and each run's report
// follows.
func TestCompareReportInChromium(t *testing.T) {
	a := run(t, twoPools)
	w, err := ParseWorkload("two-pools.yaml", []byte(twoPools))
	if err != nil {
		t.Fatal(err)
	}
	// B: the on-demand NodePool alone.
	path := filepath.Join(t.TempDir(), "on-demand.yaml")
	manifests := twoPools[strings.Index(twoPools, "  apiVersion: karpenter.sh/v1\n  kind: NodePool\n  metadata: {name: on-demand}"):strings.Index(twoPools, "timeline:")]
	if err := os.WriteFile(path, []byte("manifests: |\n"+manifests), 0o644); err != nil {
		t.Fatal(err)
	}
	other, err := w.WithManifests(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(t.Context(), other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := Compare("two-pools.yaml", "on-demand.yaml", a, b)
	if len(c.Differences) == 0 || c.Differences[0].Metric != "total cost ($)" {
		t.Fatalf("differences %+v, want the cost first", c.Differences)
	}
	var buf bytes.Buffer
	if err := WriteHTML(&buf, c); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	diff, overTime, each := strings.Index(html, "<h2>Differences</h2>"), strings.Index(html, "<h2>A and B over time</h2>"), strings.Index(html, "<h2>Each run</h2>")
	if diff < 0 || overTime < diff || each < overTime {
		t.Errorf("sections at %d, %d, %d: want the differences, then both runs over time, then each run", diff, overTime, each)
	}
	if !strings.Contains(html, "A: two-pools.yaml") || !strings.Contains(html, "B: on-demand.yaml") {
		t.Error("the page does not name the runs")
	}
	img := screenshot(t, html, 1200, 1400)
	for _, col := range []struct {
		what    string
		r, g, b uint8
	}{{"run A's lines", 0x25, 0x63, 0xeb}, {"run B's lines", 0xdb, 0x27, 0x77}, {"the markers", 0x37, 0x41, 0x51}} {
		if n := countColor(img, col.r, col.g, col.b); n < 200 {
			t.Errorf("%s not drawn: %d pixels", col.what, n)
		}
	}
}

// screenshot renders the page in headless Chromium at the given window size. With
// KARPENTER_SCREENSHOTS=dir it also keeps the PNG there, to look at.
func screenshot(t *testing.T, html string, width, height int) image.Image {
	t.Helper()
	dir := t.TempDir()
	shot := filepath.Join(dir, "report.png")
	headless(t, dir, html, width, height, "--screenshot="+shot)
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("KARPENTER_SCREENSHOTS"); keep != "" {
		if err := os.WriteFile(filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_")+".png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// headless opens the page in headless Chromium, in a window of the size given, with its
// profile and the page in dir, and returns what it prints on standard output (args say what:
// --screenshot=FILE, --dump-dom).
func headless(t *testing.T, dir, html string, width, height int, args ...string) []byte {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: install Debian's chromium package (.ci/run does)")
	}
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(browser, append(append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + filepath.Join(dir, "profile"),
		"--window-size=" + strconv.Itoa(width) + "," + strconv.Itoa(height)}, args...), "file://"+page)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return out
}

// countColor counts pixels within a small distance of an RGB colour.
func countColor(img image.Image, r, g, b uint8) int {
	n := 0
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if near(pr>>8, r) && near(pg>>8, g) && near(pb>>8, b) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b uint8) bool {
	d := int(a) - int(b)
	return d > -24 && d < 24
}

// TestHTMLPricesOneFormat: the page prints every hourly price with four decimals ($0.0576/h,
// as the text report) and every amount spent or saved with two, never one beside the other
// for the same kind of figure.
func TestHTMLPricesOneFormat(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHTML(&buf, sharedReport(t, "../../examples/web.yaml")); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	hourly := regexp.MustCompile(`\$(\d+)\.(\d+)/h`).FindAllStringSubmatch(page, -1)
	if len(hourly) == 0 {
		t.Fatal("no hourly price on the page")
	}
	for _, m := range hourly {
		if len(m[2]) != 4 {
			t.Errorf("hourly price %s: want four decimals", m[0])
		}
	}
	for _, m := range regexp.MustCompile(`\$(\d+)\.(\d+)(?:[^/\d]|$)`).FindAllStringSubmatch(page, -1) {
		if len(m[2]) != 2 {
			t.Errorf("amount %s: want two decimals", m[0])
		}
	}
}
