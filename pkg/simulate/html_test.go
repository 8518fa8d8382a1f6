package simulate

import (
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHTMLReportInChromium renders a report in headless Chromium (Debian's chromium package,
// installed by .ci/run) and checks the screenshot shows the summary and drawn charts: the
// nodes line's blue and the cost line's green appear in the pixels.
func TestHTMLReportInChromium(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium not found: install Debian's chromium package (.ci/run does)")
	}
	rep := run(t, small)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	f, err := os.Create(page)
	if err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteHTML(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	html, _ := os.ReadFile(page)
	for _, want := range []string{"karpenter simulate: small", "Final fleet", "<svg", "Nodes launched by instance type"} {
		if !strings.Contains(string(html), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	shot := filepath.Join(dir, "report.png")
	cmd := exec.Command(browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--window-size=1200,900", "--screenshot="+shot, "file://"+page)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	in, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	img, err := png.Decode(in)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 800 {
		t.Fatalf("screenshot is %v", b)
	}
	blue, green := countColor(img, 0x25, 0x63, 0xeb), countColor(img, 0x16, 0xa3, 0x4a)
	if blue < 50 || green < 50 {
		t.Errorf("charts not drawn: %d blue and %d green pixels", blue, green)
	}
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
