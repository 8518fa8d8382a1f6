package simulate

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
)

// WriteHTML writes the report as one self-contained HTML page (no scripts, no network): the
// summary, charts of nodes and $/hour, pending pods and utilization over time, and a packing
// picture of the final fleet.
func (rep *Report) WriteHTML(w io.Writer) error {
	data := struct {
		*Report
		Charts []template.HTML
		Fleet  template.HTML
	}{Report: rep}
	xs := make([]float64, len(rep.Series))
	nodes, cost, pending, cpu, mem := make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs)), make([]float64, len(xs))
	for i, s := range rep.Series {
		xs[i] = float64(s.AtSeconds) / 3600
		nodes[i], cost[i], pending[i] = float64(s.Nodes), s.CostPerHour, float64(s.Pending)
		cpu[i], mem[i] = 100*s.CPUUtil, 100*s.MemUtil
	}
	data.Charts = []template.HTML{
		lineChart("Nodes", "nodes", xs, []series{{"nodes", "#2563eb", nodes}}),
		lineChart("Cost", "$/hour", xs, []series{{"$/hour", "#16a34a", cost}}),
		lineChart("Pending pods", "pods", xs, []series{{"pending", "#dc2626", pending}}),
		lineChart("Requested share of allocatable", "%", xs, []series{{"cpu", "#7c3aed", cpu}, {"memory", "#ea580c", mem}}),
	}
	data.Fleet = fleetChart(rep.Fleet)
	return page.Execute(w, data)
}

type series struct {
	name, color string
	ys          []float64
}

const chartW, chartH, pad = 560.0, 200.0, 40.0

// lineChart draws step lines (values hold until the next sample) with axes and a legend.
func lineChart(title, unit string, xs []float64, ss []series) template.HTML {
	var b strings.Builder
	maxX, maxY := 0.0, 0.0
	for _, x := range xs {
		maxX = math.Max(maxX, x)
	}
	for _, s := range ss {
		for _, y := range s.ys {
			maxY = math.Max(maxY, y)
		}
	}
	if maxX == 0 {
		maxX = 1
	}
	if maxY == 0 {
		maxY = 1
	}
	maxY = niceCeil(maxY)
	px := func(x float64) float64 { return pad + x/maxX*(chartW-2*pad) }
	py := func(y float64) float64 { return chartH - pad + -y/maxY*(chartH-2*pad) }
	fmt.Fprintf(&b, `<figure><figcaption>%s</figcaption><svg viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`,
		template.HTMLEscapeString(title), chartW, chartH, chartW, chartH, template.HTMLEscapeString(title))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, pad, chartH-pad, chartW-pad, chartH-pad)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, pad, pad, pad, chartH-pad)
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end">%s</text>`, pad-4, py(y)+3, trim(y))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`, pad, py(y), chartW-pad, py(y))
	}
	for i := 0; i <= 4; i++ {
		x := maxX * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%sh</text>`, px(x), chartH-pad+14, trim(x))
	}
	for si, s := range ss {
		var pts []string
		for i := range xs {
			if i > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(s.ys[i-1])))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(s.ys[i])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, s.color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f" font-size="11">%s</text>`,
			chartW-pad-90, pad-28+float64(si)*14, s.color, chartW-pad-76, pad-19+float64(si)*14, template.HTMLEscapeString(s.name))
	}
	fmt.Fprintf(&b, `<text x="4" y="14" font-size="11">%s</text></svg></figure>`, template.HTMLEscapeString(unit))
	return template.HTML(b.String())
}

// fleetChart draws each final node as a box whose fill shows requested cpu (left half) and
// memory (right half) over allocatable.
func fleetChart(fleet []FleetNode) template.HTML {
	if len(fleet) == 0 {
		return template.HTML("<p>No nodes at the end of the run.</p>")
	}
	const box, gap, perRow = 46.0, 8.0, 12
	rows := (len(fleet) + perRow - 1) / perRow
	width, height := perRow*(box+gap)+gap, float64(rows)*(box+gap+14)+gap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="final fleet">`, width, height, width, height)
	for i, n := range fleet {
		x := gap + float64(i%perRow)*(box+gap)
		y := gap + float64(i/perRow)*(box+gap+14)
		cpu, mem := ratio(n.CPURequested, n.CPUAllocatable), ratio(n.MemRequestedGiB, n.MemAllocGiB)
		fmt.Fprintf(&b, `<g><title>%s %s %s: %d pods, cpu %.1f/%.1f, memory %.1f/%.1f GiB, $%.4f/h</title>`,
			template.HTMLEscapeString(n.Name), n.InstanceType, n.CapacityType, n.Pods, n.CPURequested, n.CPUAllocatable, n.MemRequestedGiB, n.MemAllocGiB, n.PricePerHour)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f3f4f6" stroke="#6b7280"/>`, x, y, box, box)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#7c3aed"/>`, x, y+box*(1-cpu), box/2, box*cpu)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#ea580c"/>`, x+box/2, y+box*(1-mem), box/2, box*mem)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="8" text-anchor="middle">%s</text></g>`, x+box/2, y+box+10, template.HTMLEscapeString(n.InstanceType))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return math.Min(1, a/b)
}

func niceCeil(v float64) float64 {
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*exp >= v {
			return m * exp
		}
	}
	return 10 * exp
}

func trim(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct":  func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
	"secs": seconds,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>karpenter simulate: {{.Workload}}</title>
<style>
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#111;max-width:1200px}
h1{font-size:20px} .cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:10px 14px;min-width:150px} .card b{display:block;font-size:20px}
.charts{display:flex;flex-wrap:wrap;gap:16px} figure{margin:0;border:1px solid #eee;border-radius:6px;padding:8px}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px} table{border-collapse:collapse;font-size:13px}
td,th{border-bottom:1px solid #eee;padding:4px 10px;text-align:left} .legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}
</style></head><body>
<h1>karpenter simulate: {{.Workload}}</h1>
<p>{{.Duration}} of virtual time, seed {{.Seed}}.</p>
<div class="cards">
<div class="card">peak cost<b>${{printf "%.2f" .Cost.PeakPerHour}}/h</b></div>
<div class="card">final cost<b>${{printf "%.2f" .Cost.FinalPerHour}}/h</b></div>
<div class="card">total spend<b>${{printf "%.2f" .Cost.Total}}</b></div>
<div class="card">nodes launched<b>{{.Nodes.Launched}}</b></div>
<div class="card">peak nodes<b>{{.Nodes.Peak}}</b></div>
<div class="card">pending p95<b>{{secs .Pods.PendingP95S}}</b></div>
<div class="card">cpu requested<b>{{pct .Util.CPUMean}}</b></div>
<div class="card">memory requested<b>{{pct .Util.MemoryMean}}</b></div>
</div>
{{if .Pods.Unscheduled}}<h2>Pods never scheduled</h2>
<table><tr><th>workload</th><th>pods</th><th>reason</th></tr>
{{range .Pods.Unscheduled}}<tr><td>{{.Workload}}</td><td>{{.Pods}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
<h2>Final fleet</h2>
<p class="legend">Each box is a node; its fill is the requested share of<span style="background:#7c3aed"></span>cpu<span style="background:#ea580c"></span>memory.</p>
{{.Fleet}}
<h2>Nodes launched by instance type</h2>
<table><tr><th>instance type</th><th>capacity</th><th>count</th><th>$/hour each</th></tr>
{{range .Nodes.ByType}}<tr><td>{{.InstanceType}}</td><td>{{.CapacityType}}</td><td>{{.Count}}</td><td>{{printf "%.4f" .PricePerHour}}</td></tr>
{{end}}</table>
{{if .Disruptions}}<h2>Nodes removed</h2><table>{{range $k, $v := .Disruptions}}<tr><td>{{$k}}</td><td>{{$v}}</td></tr>{{end}}</table>{{end}}
</body></html>
`))
