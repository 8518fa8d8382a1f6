package simulate

import (
	"encoding/json"
	"strings"
	"testing"
)

// overlapScript, added to a page, lists after it loads every pair of its boxes (tables,
// figures, cards, headings, paragraphs, and the final fleet's labels) that overlap on screen,
// each clipped by the ancestors that scroll or hide what overflows them.
const overlapScript = `<script>
window.addEventListener("load", () => {
  const visible = (el) => {
    let r = el.getBoundingClientRect();
    let box = {l: r.left, t: r.top, r: r.right, b: r.bottom};
    for (let a = el.parentElement; a; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX === "visible" && s.overflowY === "visible") continue;
      const c = a.getBoundingClientRect();
      box = {l: Math.max(box.l, c.left), t: Math.max(box.t, c.top), r: Math.min(box.r, c.right), b: Math.min(box.b, c.bottom)};
    }
    return box;
  };
  const name = (el) => el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined && el.className ? "." + el.className : "") +
    " «" + (el.textContent || "").trim().slice(0, 40) + "»";
  const els = [...document.querySelectorAll("table, figure, .card, h1, h2, h3, p, svg[aria-label='final fleet'] text")];
  const boxes = els.map(visible);
  const out = [];
  for (let i = 0; i < els.length; i++) {
    for (let j = i + 1; j < els.length; j++) {
      if (els[i].contains(els[j]) || els[j].contains(els[i])) continue;
      const a = boxes[i], b = boxes[j];
      const x = Math.min(a.r, b.r) - Math.max(a.l, b.l), y = Math.min(a.b, b.b) - Math.max(a.t, b.t);
      if (x > 1 && y > 1) out.push(name(els[i]) + " overlaps " + name(els[j]));
    }
  }
  const pre = document.createElement("pre");
  pre.id = "overlaps";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>`

// overlaps renders the page in headless Chromium at the width given and returns the pairs of
// boxes overlapping on screen (overlapScript).
func overlaps(t *testing.T, html string, width int) []string {
	t.Helper()
	dom := string(headless(t, t.TempDir(), strings.Replace(html, "</body>", overlapScript+"</body>", 1), width, 1000, "--virtual-time-budget=5000", "--dump-dom"))
	start := strings.Index(dom, `<pre id="overlaps">`)
	if start < 0 {
		t.Fatalf("the overlap check did not run:\n%.400s", dom)
	}
	text := dom[start+len(`<pre id="overlaps">`):]
	text = text[:strings.Index(text, "</pre>")]
	text = strings.NewReplacer("&quot;", `"`, "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(text)
	var pairs []string
	if err := json.Unmarshal([]byte(text), &pairs); err != nil {
		t.Fatalf("overlaps %q: %v", text, err)
	}
	return pairs
}

// TestReportLayoutHasNoOverlaps: examples/web.yaml's report, its comparison with the
// NodePool restricted to on-demand (two runs side by side), and --from-cluster's page of the
// bundled dump lay out at 1280 and 1920 pixels wide with no box over another: the NodePool
// tables of the two runs, the final fleet's labels.
func TestReportLayoutHasNoOverlaps(t *testing.T) {
	a, b := sharedReport(t, "../../examples/web.yaml"), webOnDemand(t)
	c, err := LoadClusterDump(clusterDump)
	if err != nil {
		t.Fatal(err)
	}
	clusterReport, err := runCluster(c, ClusterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var single, compare, cluster strings.Builder
	if err := WriteHTML(&single, a); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&compare, Compare("examples/web.yaml", "examples/compare/on-demand-only.yaml", a, b)); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&cluster, clusterReport); err != nil {
		t.Fatal(err)
	}
	for _, page := range []struct{ name, html string }{{"report", single.String()}, {"comparison", compare.String()}, {"cluster report", cluster.String()}} {
		for _, width := range []int{1280, 1920} {
			if pairs := overlaps(t, page.html, width); len(pairs) > 0 {
				t.Errorf("the %s at %d px: %d overlaps:\n%s", page.name, width, len(pairs), strings.Join(pairs, "\n"))
			}
		}
	}
}
