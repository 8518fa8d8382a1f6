package simulate

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// pageTemplate draws the report on one page: the summary and inputs, charts over time (nodes
// by capacity type and by NodePool, $/hour, pending pods, utilization) with the timeline's
// events marked and numbered on each, the distribution of pending time, nodes removed by
// reason, launches refused, a packing picture of the final fleet, and the event log.
func (rep *Report) pageTemplate() (name string, data any) {
	return "single", newView(rep)
}

// view is a report with its drawings, as the page template reads it.
type view struct {
	*Report
	// Markers are the timeline's events, numbered as on the charts.
	Markers   []marker
	Charts    []template.HTML
	Histogram template.HTML
	Fleet     template.HTML
	// Removals are the removal counts in RemovalReasons' order.
	Removals []reasonCount
	// Log is the event log, at most maxLogEntries of it.
	Log []LogEntry
	// RepairLog are node repair's entries of the log: repairs, reboots and holds.
	RepairLog []LogEntry
	// Stays are why the final fleet's nodes stay, grouped by reason.
	Stays []stayGroup
}

type reasonCount struct {
	Reason string
	Count  int
}

// marker is a timeline event drawn on the charts: a numbered dashed line at its time.
type marker struct {
	N     int
	Hours float64
	At    string
	Event string
	Text  string
}

// maxLogEntries bounds the event log on the page; the JSON has all of it.
const maxLogEntries = 1000

// Colours of the charts' lines. The Chromium test looks for the first two.
const (
	colorNodes    = "#2563eb"
	colorCost     = "#16a34a"
	colorPending  = "#dc2626"
	colorCPU      = "#7c3aed"
	colorMemory   = "#ea580c"
	colorSpot     = "#f59e0b"
	colorOnDemand = "#0891b2"
	colorReserved = "#15803d"
	colorB        = "#db2777"
)

// poolColors colour the NodePools, in name order, cycling.
var poolColors = []string{"#0d9488", "#9333ea", "#ca8a04", "#e11d48", "#4f46e5", "#65a30d", "#c2410c", "#0284c7"}

func newView(rep *Report) *view {
	v := &view{Report: rep, Markers: markers(rep.Events)}
	xs := hours(rep.Series)
	nodes, spot, onDemand, cost, pending, cpu, mem := pick(rep.Series, func(s Sample) float64 { return float64(s.Nodes) }),
		pick(rep.Series, func(s Sample) float64 { return float64(s.SpotNodes) }), pick(rep.Series, func(s Sample) float64 { return float64(s.OnDemandNodes) }),
		pick(rep.Series, func(s Sample) float64 { return s.CostPerHour }), pick(rep.Series, func(s Sample) float64 { return float64(s.Pending) }),
		pick(rep.Series, func(s Sample) float64 { return 100 * s.CPUUtil }), pick(rep.Series, func(s Sample) float64 { return 100 * s.MemUtil })
	var pools []series
	for i, np := range rep.NodePools {
		name := np.Name
		pools = append(pools, series{name, poolColors[i%len(poolColors)], pick(rep.Series, func(s Sample) float64 { return float64(s.NodePools[name]) }), false})
	}
	nodeSeries := []series{{"spot", colorSpot, spot, false}, {"on-demand", colorOnDemand, onDemand, false}}
	nodesTitle := "Nodes, spot and on-demand"
	if slices.ContainsFunc(rep.Series, func(s Sample) bool { return s.ReservedNodes > 0 }) {
		nodeSeries = append(nodeSeries, series{"reserved", colorReserved, pick(rep.Series, func(s Sample) float64 { return float64(s.ReservedNodes) }), false})
		nodesTitle = "Nodes, spot, on-demand and reserved"
	}
	v.Charts = []template.HTML{
		lineChart(nodesTitle, "nodes", xs, v.Markers, append(nodeSeries, series{"all", colorNodes, nodes, true})),
		lineChart("Cost", "$/hour", xs, v.Markers, []series{{"$/hour", colorCost, cost, false}}),
		lineChart("Pending pods", "pods", xs, v.Markers, []series{{"pending", colorPending, pending, false}}),
		lineChart("Requested share of allocatable", "%", xs, v.Markers, []series{{"cpu", colorCPU, cpu, false}, {"memory", colorMemory, mem, false}}),
	}
	if len(pools) > 1 { // with one NodePool it is the first chart again
		v.Charts = append(v.Charts, lineChart("Nodes by NodePool", "nodes", xs, v.Markers, pools))
	}
	v.Histogram = histogramChart(rep.Pods.PendingHistogram)
	v.Fleet = fleetChart(rep.Fleet)
	v.Stays = stayGroups(rep.Fleet)
	for _, r := range orderedReasons(rep.Disruptions) {
		v.Removals = append(v.Removals, reasonCount{r, rep.Disruptions[r]})
	}
	v.Log = rep.Events[:min(len(rep.Events), maxLogEntries)]
	for _, e := range rep.Events {
		if (e.Kind == LogDisruption || e.Kind == LogReboot) && e.Method == MethodRepair && len(v.RepairLog) < maxLogEntries {
			v.RepairLog = append(v.RepairLog, e)
		}
	}
	return v
}

// markers numbers the timeline's events.
func markers(events []LogEntry) []marker {
	var out []marker
	for _, e := range events {
		if e.Kind != LogTimeline {
			continue
		}
		out = append(out, marker{N: len(out) + 1, Hours: float64(e.AtSeconds) / 3600, At: clock(e.AtSeconds), Event: e.Event, Text: e.Message})
	}
	return out
}

// clock formats seconds from the start as h:mm:ss.
func clock(s int64) string {
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}

func hours(samples []Sample) []float64 {
	return pick(samples, func(s Sample) float64 { return float64(s.AtSeconds) / 3600 })
}

func pick(samples []Sample, f func(Sample) float64) []float64 {
	out := make([]float64, len(samples))
	for i, s := range samples {
		out[i] = f(s)
	}
	return out
}

type series struct {
	name, color string
	ys          []float64
	// dashed draws the line dashed, so that a total drawn over its parts shows through.
	dashed bool
}

// The charts' geometry: the plot spans [left, chartW-right] × [top, chartH-bottom]; markers'
// numbers sit above it, the legend below the axis.
const (
	chartW, chartH              = 520.0, 240.0
	left, right, top, bottom    = 44.0, 16.0, 40.0, 52.0
	markerRadius, markerMinGapX = 7.0, 16.0
)

// lineChart draws step lines (values hold until the next sample) with axes, a legend and the
// markers: a dashed line at each event's time, numbered in a circle above the plot (staggered
// over three rows where they crowd).
func lineChart(title, unit string, xs []float64, ms []marker, ss []series) template.HTML {
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
	if unit == "nodes" || unit == "pods" {
		// Whole things: the four gridlines fall on whole numbers.
		maxY = math.Ceil(maxY/4) * 4
	}
	px := func(x float64) float64 { return left + x/maxX*(chartW-left-right) }
	py := func(y float64) float64 { return chartH - bottom - y/maxY*(chartH-top-bottom) }
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<figure><figcaption>%s <span class="muted">(%s)</span></figcaption><svg viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="%s">`,
		esc(title), esc(unit), chartW, chartH, chartW, chartH, esc(title))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, left, chartH-bottom, chartW-right, chartH-bottom)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, left, top, left, chartH-bottom)
	for i := 0; i <= 4; i++ {
		y := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end">%s</text>`, left-4, py(y)+3, trim(y))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`, left, py(y), chartW-right, py(y))
	}
	for i := 0; i <= 4; i++ {
		x := maxX * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%sh</text>`, px(x), chartH-bottom+14, trim(x))
	}
	lastX, row := math.Inf(-1), 0
	for _, m := range ms {
		x := px(math.Min(m.Hours, maxX))
		if x-lastX < markerMinGapX {
			row = (row + 1) % 3
		} else {
			row = 0
		}
		lastX = x
		cy := top - markerRadius - 1 - float64(row)*(2*markerRadius-1)
		fmt.Fprintf(&b, `<g class="marker"><title>%d. %s %s</title><line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#6b7280" stroke-dasharray="3,3"/>`,
			m.N, m.At, esc(m.Text), x, cy+markerRadius, x, chartH-bottom)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="%.0f" fill="#374151"/><text x="%.1f" y="%.1f" font-size="9" fill="#fff" text-anchor="middle">%d</text></g>`,
			x, cy, markerRadius, x, cy+3, m.N)
	}
	for _, s := range ss {
		var pts []string
		for i := range xs {
			if i > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(s.ys[i-1])))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(xs[i]), py(s.ys[i])))
		}
		dash := ""
		if s.dashed {
			dash = ` stroke-dasharray="6,3"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`, s.color, dash, strings.Join(pts, " "))
	}
	lx := left
	for _, s := range ss {
		name := s.name
		if r := []rune(name); len(r) > legendMaxRunes {
			name = "…" + string(r[len(r)-legendMaxRunes+1:])
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.1f" y="%.1f" font-size="11"><title>%s</title>%s</text>`,
			lx, chartH-18, s.color, lx+14, chartH-9, esc(s.name), esc(name))
		lx += 30 + 6.5*float64(utf8.RuneCountInString(name))
	}
	b.WriteString(`</svg></figure>`)
	return template.HTML(b.String())
}

// legendMaxRunes bounds a legend entry (a file name, under --compare): a longer one keeps its
// end, which tells files apart, and the whole name shows on hover.
const legendMaxRunes = 32

// histogramChart draws the distribution of pending time: a bar per bucket, its count above.
func histogramChart(buckets []PendingBucket) template.HTML {
	total := 0
	maxN := 0
	for _, bk := range buckets {
		total += bk.Pods
		maxN = max(maxN, bk.Pods)
	}
	if total == 0 {
		return template.HTML("<p>No pod was scheduled.</p>")
	}
	const w, h, l, r, t, bt = 520.0, 200.0, 44.0, 16.0, 16.0, 40.0
	var b strings.Builder
	fmt.Fprintf(&b, `<figure><figcaption>Time pods waited for a node</figcaption><svg viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="pending time distribution">`, w, h, w, h)
	slot := (w - l - r) / float64(len(buckets))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, l, h-bt, w-r, h-bt)
	prev := int64(0)
	for i, bk := range buckets {
		x := l + float64(i)*slot
		bh := float64(bk.Pods) / float64(maxN) * (h - t - bt - 12)
		label := fmt.Sprintf("≤%s", short(bk.UpToSeconds))
		if bk.UpToSeconds == 0 {
			label = fmt.Sprintf(">%s", short(prev))
		}
		prev = bk.UpToSeconds
		fmt.Fprintf(&b, `<g><title>%s: %d pods</title><rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, label, bk.Pods, x+3, h-bt-bh, slot-6, bh, colorPending)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%d</text>`, x+slot/2, h-bt-bh-3, bk.Pods)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text></g>`, x+slot/2, h-bt+14, label)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">waited, from creation to binding</text></svg></figure>`, (l+w-r)/2, h-8)
	return template.HTML(b.String())
}

// short formats seconds as 30s, 2m, 1h.
func short(s int64) string {
	d := time.Duration(s) * time.Second
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", s/3600)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", s/60)
	}
	return fmt.Sprintf("%ds", s)
}

// fleetChart draws each final node as a box whose area shows its price (the dearest node the
// largest box) and whose fill shows requested cpu (left half) and memory (right half) over
// allocatable, labelled with its instance type and $/hour; the boxes flow in rows.
func fleetChart(fleet []FleetNode) template.HTML {
	if len(fleet) == 0 {
		return template.HTML("<p>No nodes at the end of the run.</p>")
	}
	const minBox, maxBox, gap, label, rowWidth = 30.0, 90.0, 10.0, 24.0, 1100.0
	dearest := 0.0
	for _, n := range fleet {
		dearest = math.Max(dearest, n.PricePerHour)
	}
	type placed struct {
		x, y, box float64
		n         FleetNode
	}
	var boxes []placed
	x, y, rowHeight, width := gap, gap, 0.0, 0.0
	for _, n := range fleet {
		box := maxBox
		if dearest > 0 {
			box = math.Max(minBox, maxBox*math.Sqrt(n.PricePerHour/dearest))
		}
		// The cell is as wide as the box or its label, whichever is wider (9px text, about
		// 5.5px a character).
		cell := math.Max(box, 5.5*float64(max(len(n.InstanceType), len(priceLabel(n.PricePerHour)))))
		if x+cell > rowWidth && x > gap {
			x, y, rowHeight = gap, y+rowHeight+label+gap, 0
		}
		boxes = append(boxes, placed{x + (cell-box)/2, y, box, n})
		rowHeight = math.Max(rowHeight, box)
		x += cell + gap
		width = math.Max(width, x)
	}
	height := y + rowHeight + label + gap
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img" aria-label="final fleet">`, width, height, width, height)
	for _, p := range boxes {
		n, x, y, box := p.n, p.x, p.y, p.box
		cpu, mem := ratio(n.CPURequested, n.CPUAllocatable), ratio(n.MemRequestedGiB, n.MemAllocGiB)
		fmt.Fprintf(&b, `<g class="node"><title>%s %s %s: %d pods, cpu %.1f/%.1f, memory %.1f/%.1f GiB, $%.4f/h%s</title>`,
			template.HTMLEscapeString(n.Name), n.InstanceType, n.CapacityType, n.Pods, n.CPURequested, n.CPUAllocatable, n.MemRequestedGiB, n.MemAllocGiB, n.PricePerHour,
			template.HTMLEscapeString(staysTitle(n)))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#f3f4f6" stroke="#6b7280"/>`, x, y, box, box)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x, y+box*(1-cpu), box/2, box*cpu, colorCPU)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`, x+box/2, y+box*(1-mem), box/2, box*mem, colorMemory)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" text-anchor="middle">%s</text>`, x+box/2, y+box+10, template.HTMLEscapeString(n.InstanceType))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" text-anchor="middle" fill="#6b7280">%s</text></g>`, x+box/2, y+box+20, priceLabel(n.PricePerHour))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// priceLabel is a node's $/hour as its box says it.
func priceLabel(perHour float64) string { return fmt.Sprintf("$%.4f/h", perHour) }

// staysTitle is why the node stays, for its box's tooltip; empty when not explained.
func staysTitle(n FleetNode) string {
	if n.StaysBecause == "" {
		return ""
	}
	return "; stays: " + n.StaysBecause
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
	"pct":     func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) },
	"secs":    seconds,
	"clock":   clock,
	"join":    strings.Join,
	"removed": removals,
	"sub":     func(a, b int) int { return a - b },
	"inc":     func(i int) int { return i + 1 },
	"offerings": func(os []Offering) string {
		parts := make([]string, len(os))
		for i, o := range os {
			parts[i] = o.InstanceType + " " + o.CapacityType + " " + o.Zone
		}
		return strings.Join(parts, ", ")
	},
	"trim":   trim,
	"signed": signedTrim,
	"limits": func(m map[string]string) string {
		var parts []string
		for _, k := range sortedKeys(m) {
			parts = append(parts, k+" "+m[k])
		}
		return strings.Join(parts, ", ")
	},
}).Parse(pageTemplate))

const pageTemplate = `{{define "style"}}<style>
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#111}
h1{font-size:20px} h2{font-size:16px;margin-top:24px} h3{font-size:14px} .cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.card{border:1px solid #ddd;border-radius:6px;padding:10px 14px;min-width:130px} .card b{display:block;font-size:20px}
.charts{display:flex;flex-wrap:wrap;gap:16px} figure{margin:0;border:1px solid #eee;border-radius:6px;padding:8px}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px} table{border-collapse:collapse;font-size:13px}
td,th{border-bottom:1px solid #eee;padding:4px 10px;text-align:left;vertical-align:top} .legend span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px}
.num{display:inline-block;min-width:18px;height:18px;border-radius:9px;background:#374151;color:#fff;text-align:center;font-size:11px;line-height:18px}
.side{display:flex;gap:24px;align-items:flex-start} .side>div{flex:1;min-width:0;overflow-x:auto} .muted{color:#6b7280}
.better{color:#15803d} .worse{color:#b91c1c} ul.reqs{margin:0;padding-left:16px}
</style>{{end}}

{{define "single"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>karpenter simulate: {{.Workload}}</title>
{{template "style"}}<style>body{max-width:1200px}</style></head><body>
<h1>karpenter simulate: {{.Workload}}</h1>
{{template "body" .}}
</body></html>
{{end}}

{{define "body"}}<p>{{.Duration}} of virtual time, seed {{.Seed}}{{if .Version}}, karpenter {{.Version}}{{end}}.</p>
<div class="cards">
<div class="card">peak cost<b>${{printf "%.4f" .Cost.PeakPerHour}}/h</b></div>
<div class="card">final cost<b>${{printf "%.4f" .Cost.FinalPerHour}}/h</b></div>
<div class="card">total spend<b>${{printf "%.2f" .Cost.Total}}</b></div>
{{if gt .Packing.FinalBoundPerHour 0.0}}<div class="card" title="the fleet's $/hour over the lower bound of its pods packed from scratch (peak {{printf "%.2f" .Packing.PeakRatio}}×)">packing at the end<b>{{printf "%.2f" .Packing.FinalRatio}}× bound</b></div>
{{end}}<div class="card">nodes launched<b>{{.Nodes.Launched}}</b></div>
<div class="card">peak nodes<b>{{.Nodes.Peak}}</b></div>
<div class="card">pending p95<b>{{secs .Pods.PendingP95S}}</b></div>
<div class="card">cpu requested<b>{{pct .Util.CPUMean}}</b></div>
<div class="card">memory requested<b>{{pct .Util.MemoryMean}}</b></div>
</div>
{{if .Pods.Unscheduled}}<h2>Pods never scheduled</h2>
<table><tr><th>workload</th><th>pods</th><th>reason</th></tr>
{{range .Pods.Unscheduled}}<tr><td>{{.Workload}}</td><td>{{.Pods}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
{{if .Markers}}<h2>Timeline</h2>
<table><tr><th></th><th>at</th><th>event</th></tr>
{{range .Markers}}<tr><td><span class="num">{{.N}}</span></td><td>{{.At}}</td><td>{{.Text}}</td></tr>
{{end}}</table>{{end}}
<h2>Over time</h2>
<p class="muted">Numbered lines mark the timeline's events above.</p>
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
<h2>Pending time</h2>
<p>{{.Pods.Scheduled}} pods scheduled: mean {{secs .Pods.PendingMeanS}}, p95 {{secs .Pods.PendingP95S}}, max {{secs .Pods.PendingMaxS}}{{if .Pods.NeverScheduled}}; {{.Pods.NeverScheduled}} never scheduled{{end}}.</p>
<div class="charts">{{.Histogram}}</div>
<h2>NodePools</h2>
<table><tr><th>NodePool</th><th>settings</th><th>launched</th><th>spot / on-demand</th><th>peak</th><th>final</th><th>$/hour at end</th><th>spent</th><th>no capacity</th><th>removed</th></tr>
{{range .NodePools}}<tr><td><b>{{.Name}}</b></td><td>{{if not .Inputs.Found}}<span class="muted">gone at the end of the run</span>{{else}}<ul class="reqs">
{{range .Inputs.Requirements}}<li>{{.}}</li>{{end}}
{{if .Inputs.Weight}}<li>weight {{.Inputs.Weight}}</li>{{end}}{{if .Inputs.Limits}}<li>limits {{limits .Inputs.Limits}}</li>{{end}}
{{range .Inputs.Taints}}<li>taint {{.}}</li>{{end}}
<li>consolidation {{or .Inputs.ConsolidationPolicy "default"}}{{if .Inputs.ConsolidateAfter}} after {{.Inputs.ConsolidateAfter}}{{end}}{{if .Inputs.ExpireAfter}}, expire after {{.Inputs.ExpireAfter}}{{end}}</li>
{{range .Inputs.Budgets}}<li>budget {{.}}</li>{{end}}
<li>nodeclass {{.Inputs.NodeClass}}</li></ul>{{end}}</td>
<td>{{.Results.Launched}}</td><td>{{.Results.LaunchedSpot}} / {{.Results.LaunchedOnDemand}}{{if .Results.LaunchedReserved}} / {{.Results.LaunchedReserved}} reserved{{end}}</td><td>{{.Results.Peak}}</td><td>{{.Results.Final}}</td>
<td>{{printf "%.4f" .Results.FinalPerHour}}</td><td>${{printf "%.2f" .Results.Cost}}</td><td>{{.Results.FailedLaunches}}</td><td>{{removed .Results.Removed}}</td></tr>
{{end}}</table>
{{if .Reservations}}<h2>Capacity reservations</h2>
<table><tr><th>reservation</th><th>type</th><th>instance type</th><th>zone</th><th>slots</th><th>launched</th><th>peak in use</th><th>in use at end</th></tr>
{{range .Reservations}}<tr><td>{{.ID}}</td><td>{{.Type}}</td><td>{{.InstanceType}}</td><td>{{.Zone}}</td><td>{{.Count}}</td><td>{{.Launched}}</td><td>{{.Peak}}</td><td>{{if .EndSeconds}}ended{{else}}{{.Final}}{{end}}</td></tr>
{{end}}</table>{{end}}
<h2>Nodes removed</h2>
{{if .Removals}}<table><tr><th>reason</th><th>nodes</th></tr>{{range .Removals}}<tr><td>{{.Reason}}</td><td>{{.Count}}</td></tr>{{end}}</table>
{{else}}<p>None.</p>{{end}}
{{if .Repairs}}<h2>Node repair</h2>
<p>{{.Repairs.Removed}} unhealthy nodes removed{{if .Repairs.Escalated}} ({{.Repairs.Escalated}} rebooted too often, replaced instead){{end}}, {{.Repairs.Reboots}} reboots ({{.Repairs.RebootsSucceeded}} succeeded, {{.Repairs.RebootsFailed}} failed), {{.Repairs.Blocked}} holds.</p>
<table><tr><th>at</th><th>action</th><th>node</th><th>what happened</th></tr>
{{range .RepairLog}}<tr><td>{{clock .AtSeconds}}</td><td>{{if eq .Kind "reboot"}}reboot {{end}}{{.Action}}</td><td>{{join .Nodes ", "}}</td><td>{{.Message}}</td></tr>
{{end}}</table>{{end}}
<h2>Launches refused for want of capacity</h2>
{{if .FailedLaunches}}<table><tr><th>at</th><th>nodeclaim</th><th>NodePool</th><th>offerings tried</th></tr>
{{range .FailedLaunches}}<tr><td>{{clock .AtSeconds}}</td><td>{{.NodeClaim}}</td><td>{{.NodePool}}</td><td>{{offerings .Offerings}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
<h2>Final fleet</h2>
<p class="legend">Each box is a node; its fill is the requested share of<span style="background:#7c3aed"></span>cpu<span style="background:#ea580c"></span>memory.</p>
{{.Fleet}}
{{if .Stays}}<h3>Why the nodes at the end stay</h3>
<table><tr><th>nodes</th><th>$/hour</th><th>why (Karpenter's rules)</th><th>what would change it</th></tr>
{{range .Stays}}<tr><td>{{.Types}}</td><td>{{printf "%.4f" .PerHour}}</td><td>{{.Reason}}</td><td>{{.Change}}</td></tr>
{{end}}</table>{{end}}
<h2>Nodes launched by instance type</h2>
<table><tr><th>instance type</th><th>capacity</th><th>count</th><th>$/hour each</th></tr>
{{range .Nodes.ByType}}<tr><td>{{.InstanceType}}</td><td>{{.CapacityType}}</td><td>{{.Count}}</td><td>{{printf "%.4f" .PricePerHour}}</td></tr>
{{end}}</table>
{{if .Warnings}}<h2>Warnings</h2><ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Event log</h2>
<details><summary>{{len .Events}} entries{{if gt (len .Events) (len .Log)}} (the first {{len .Log}} here; all of them in --output json){{end}}</summary>
<table><tr><th>at</th><th>kind</th><th>what happened</th></tr>
{{range .Log}}<tr><td>{{clock .AtSeconds}}</td><td>{{.Kind}}{{if .Reason}} ({{.Reason}}){{end}}</td><td>{{.Message}}</td></tr>
{{end}}</table></details>
{{end}}

{{define "fleetGroups"}}{{if .Groups}}<table><tr><th>NodePool</th><th>type</th><th>capacity</th><th>nodes</th><th>$/hour each</th><th>$/hour</th></tr>
{{range .Groups}}<tr><td>{{.NodePool}}</td><td>{{.InstanceType}}</td><td>{{.CapacityType}}</td><td>{{.Nodes}}</td><td>{{if .Priced}}{{printf "%.4f" .PricePerHour}}{{else}}unpriced{{end}}</td><td>{{if .Priced}}{{printf "%.4f" .PerHour}}{{else}}-{{end}}</td></tr>
{{end}}</table>{{end}}{{end}}

{{define "cluster"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>karpenter simulate --from-cluster: {{.Source}}</title>
{{template "style"}}<style>body{max-width:1200px}</style></head><body>
<h1>karpenter simulate --from-cluster: {{.Source}}</h1>
<p>{{.Today.Nodes}} nodes, {{.Pods.Workload}} pods ({{.Pods.Pending}} pending) and {{.Pods.Daemon}} DaemonSet or static pods; NodePools: {{.NodePoolsFrom}}; seed {{.Seed}}{{if .Version}}, karpenter {{.Version}}{{end}}.</p>
<div class="cards">
<div class="card">today<b>${{printf "%.4f" .Savings.TodayPerHour}}/h</b></div>
<div class="card">after consolidation<b>${{printf "%.4f" .Savings.ConsolidatedPerHour}}/h</b></div>
<div class="card">from scratch<b>${{printf "%.4f" .Savings.FromScratchPerHour}}/h</b></div>
<div class="card">consolidation saves<b>${{printf "%.2f" .Savings.ConsolidationMonth}}/month</b></div>
<div class="card">from scratch saves<b>${{printf "%.2f" .Savings.FromScratchMonth}}/month</b></div>
</div>
<h2>Today: {{.Today.Nodes}} nodes, ${{printf "%.4f" .Today.PerHour}}/hour</h2>
{{template "fleetGroups" .Today}}
{{if .Today.Unpriced}}<p class="muted">Not priced (instance types the catalog does not know), left out of every $ figure: {{join .Today.Unpriced ", "}}.</p>{{end}}
<h2>Consolidation now: {{.Consolidation.Fleet.Nodes}} nodes, ${{printf "%.4f" .Consolidation.Fleet.PerHour}}/hour</h2>
{{if .Consolidation.Steps}}<table><tr><th></th><th>at</th><th>method</th><th>reason</th><th>what it does</th><th>nodes</th><th>$/hour after</th></tr>
{{range $i, $s := .Consolidation.Steps}}<tr><td>{{inc $i}}</td><td>{{clock $s.AtSeconds}}</td><td>{{$s.Method}}</td><td>{{$s.Reason}}</td><td>{{$s.Message}}</td><td>{{join $s.Nodes ", "}}</td><td>{{printf "%.4f" $s.PerHourAfter}}</td></tr>
{{end}}</table>{{else}}<p>No command: consolidation leaves the fleet as it is.</p>{{end}}
{{if .Consolidation.Unmanaged}}<p class="muted">{{.Consolidation.Unmanaged}} nodes Karpenter does not manage are never disrupted: --adopt-nodes NODEPOOL takes them into a NodePool.</p>{{end}}
{{if not .Consolidation.Settled}}<p class="muted">Still consolidating when the run ended ({{.Consolidation.Duration}}): a longer --settle shows the rest.</p>{{end}}
{{template "fleetGroups" .Consolidation.Fleet}}
<h2>From scratch: {{.FromScratch.Fleet.Nodes}} nodes, ${{printf "%.4f" .FromScratch.Fleet.PerHour}}/hour</h2>
{{template "fleetGroups" .FromScratch.Fleet}}
{{if .FromScratch.Unscheduled}}<table><tr><th>workload</th><th>pods never scheduled</th><th>why</th></tr>
{{range .FromScratch.Unscheduled}}<tr><td>{{.Workload}}</td><td>{{.Pods}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>{{end}}
{{if .Warnings}}<h2>Warnings</h2><ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>
{{end}}

{{define "compare"}}<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>karpenter simulate: {{.A}} vs {{.B}}</title>
{{template "style"}}</head><body>
<h1>karpenter simulate: A vs B</h1>
<p><b>A</b> {{.A}}<br><b>B</b> {{.B}}<br>{{.RunA.Duration}} of virtual time, seed {{.RunA.Seed}}{{if .RunA.Version}}, karpenter {{.RunA.Version}}{{end}}.</p>
<h2>Differences</h2>
{{if .Differences}}<table><tr><th>figure</th><th>A</th><th>B</th><th>B − A</th><th></th></tr>
{{range .Differences}}<tr><td>{{.Metric}}</td><td>{{trim .A}}</td><td>{{trim .B}}</td><td>{{signed .Change}}</td><td>{{.Relative}}</td></tr>
{{end}}</table>{{else}}<p>None: the two runs agree on every figure.</p>{{end}}
{{if .Unchanged}}<p class="muted">The same in both: {{join .UnchangedNames ", "}}.</p>{{end}}
{{if .Why}}<p><b>Why:</b> {{.Why}}</p>{{end}}
<h2>A and B over time</h2>
<div class="charts">{{range .Charts}}{{.}}{{end}}</div>
<h2>Each run</h2>
<div class="side"><div><h2>A: {{.A}}</h2>{{template "body" .ViewA}}</div><div><h2>B: {{.B}}</h2>{{template "body" .ViewB}}</div></div>
</body></html>
{{end}}`
