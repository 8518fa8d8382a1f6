package view

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// DefaultBarWidth is the width of a usage bar, in cells, when RenderOptions does not say.
const DefaultBarWidth = 20

// Thresholds of the bars' colours: green below YellowAt, yellow below RedAt, red above.
const (
	YellowAt = 0.70
	RedAt    = 0.90
)

// ANSI escape sequences (SGR) for the colours of a terminal.
const (
	ansiReset  = "\x1b[0m"
	ansiBold   = "\x1b[1m"
	ansiDim    = "\x1b[2m"
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

const (
	barFull  = "█"
	barEmpty = "░"
	// unknown fills a cell whose value is not known.
	unknown = "-"
)

// RenderOptions configure Render. The zero value is plain text with bars of DefaultBarWidth,
// every row shown in full.
type RenderOptions struct {
	// Color paints the bars and states with ANSI colours; for terminals only.
	Color bool
	// BarWidth is the width of a usage bar in cells; zero means DefaultBarWidth.
	BarWidth int
	// Width, when positive, is the most cells a line may take: the bars shrink (down to
	// MinBarWidth) to make the table fit, and what still does not fit is cut off.
	Width int
	// Height, when positive, is the most lines the frame may take: when the rows do not fit,
	// they are split into pages (of one row at least) and the last line says which is shown.
	Height int
	// Page is the page shown, counted from 0, when the rows are split; past the last page means
	// the last.
	Page int
	// PageKeys says the reader can turn the pages with the keys of a live view: the last line
	// of a split frame names them.
	PageKeys bool
}

// MinBarWidth is the narrowest a bar gets when RenderOptions.Width makes it shrink.
const MinBarWidth = 5

// Render writes s as text: a header with the cluster's cost, counts and total usage of each of
// its resources, then one line per row. It makes one call to w.Write. When the frame is wider
// than opts.Width, it gives up cells in fitSteps' order (columns of least use first, then
// narrower bars and shorter names) until it fits: every row keeps its name, cost, bars and
// state; what still does not fit is cut off.
func Render(w io.Writer, s Snapshot, opts RenderOptions) error {
	if opts.BarWidth <= 0 {
		opts.BarWidth = DefaultBarWidth
	}
	fit := fitting{hidden: map[string]bool{}}
	frame, widest := renderFrame(&s, opts, fit)
	wanted := opts.BarWidth
	for _, step := range fitSteps {
		if opts.Width <= 0 || widest <= opts.Width {
			break
		}
		if !step(&s, &opts, &fit, widest) {
			continue
		}
		frame, widest = renderFrame(&s, opts, fit)
	}
	// A later step may have freed more than the bars gave up: they take back what fits.
	if opts.Width > 0 && widest <= opts.Width {
		for bar := wanted; bar > opts.BarWidth; bar-- {
			wider := opts
			wider.BarWidth = bar
			if f, w := renderFrame(&s, wider, fit); w <= opts.Width {
				frame, widest = f, w
				break
			}
		}
	}
	if opts.Width > 0 && widest > opts.Width {
		frame = cutLines(frame, opts.Width, opts.Color)
	}
	_, err := io.WriteString(w, frame)
	return err
}

// fitting is what a frame leaves out to fit RenderOptions.Width: the columns hidden, by title,
// and the most cells a row's name may take (0: all of it).
type fitting struct {
	hidden  map[string]bool
	nameMax int
}

// fitStep gives up some of a frame's cells, given how wide it is now; it reports whether it
// changed anything.
type fitStep func(s *Snapshot, opts *RenderOptions, fit *fitting, widest int) bool

// hide returns a step that hides the columns of these titles.
func hide(titles ...string) fitStep {
	return func(_ *Snapshot, opts *RenderOptions, fit *fitting, _ int) bool {
		changed := false
		for _, t := range titles {
			changed = changed || !fit.hidden[t]
			fit.hidden[t] = true
		}
		return changed
	}
}

// hideExtraLabels hides the --extra-labels columns.
func hideExtraLabels(s *Snapshot, opts *RenderOptions, fit *fitting, widest int) bool {
	return hide(extraLabelTitles(s.ExtraLabels)...)(s, opts, fit, widest)
}

// shortenNames caps a row's name at n cells (see shortName).
func shortenNames(n int) fitStep {
	return func(_ *Snapshot, _ *RenderOptions, fit *fitting, _ int) bool {
		if fit.nameMax != 0 && fit.nameMax <= n {
			return false
		}
		fit.nameMax = n
		return true
	}
}

// narrowBars narrows the bars, each by its share of the excess width rounded up, to floor at
// the least.
func narrowBars(floor int) fitStep {
	return func(s *Snapshot, opts *RenderOptions, _ *fitting, widest int) bool {
		bars := len(s.Resources)
		if bars == 0 || opts.Width <= 0 {
			return false
		}
		bar := max(opts.BarWidth-(widest-opts.Width+bars-1)/bars, floor)
		if bar >= opts.BarWidth {
			return false
		}
		opts.BarWidth = bar
		return true
	}
}

// fitSteps are the steps Render takes, in order, while a frame is too wide: first the columns a
// reader needs least (age, capacity type, zone) and the domain of long node names, then
// narrower bars, the pods, NodePool, extra-label and type columns, the narrowest bars, and the
// shortest names. A row's name, cost, bars and state stay to the end, as eks-node-viewer's.
var fitSteps = []fitStep{
	hide("AGE"),
	hide("CAPACITY"),
	shortenNames(28),
	hide("ZONE"),
	narrowBars(10),
	hide("PODS"),
	hide("NODEPOOL"),
	narrowBars(MinBarWidth),
	hideExtraLabels,
	hide("TYPE"),
	shortenNames(16),
}

// shortName is name in at most n cells (n of 0: all of it): the part before its first dot when
// that fits (ip-10-0-0-21.us-east-1.compute.internal is ip-10-0-0-21), else its first n−1
// cells and an ellipsis.
func shortName(name string, n int) string {
	if n <= 0 || utf8.RuneCountInString(name) <= n {
		return name
	}
	if host, _, ok := strings.Cut(name, "."); ok && host != "" && utf8.RuneCountInString(host) <= n {
		return host
	}
	return string([]rune(name)[:n-1]) + "…"
}

// pageCount is how many pages Render splits the rows of s into to fit height lines: 1 when
// they all fit or height is not positive.
func pageCount(s *Snapshot, height int) int {
	size := pageSize(s, height)
	if size == 0 {
		return 1
	}
	return (len(s.Rows) + size - 1) / size
}

// pageSize is how many rows a page of s holds in height lines, or 0 when the rows need not be
// split.
func pageSize(s *Snapshot, height int) int {
	if height <= 0 {
		return 0
	}
	// Below the header: a blank line and the column titles, then the rows; when they do not
	// all fit, the last line says which page is shown.
	fit := height - headerLines(s) - 2
	if fit >= len(s.Rows) {
		return 0
	}
	return max(fit-1, 1)
}

// renderFrame returns the frame, without what fit leaves out, and the width of its widest line.
func renderFrame(s *Snapshot, opts RenderOptions, fit fitting) (string, int) {
	p := painter{color: opts.Color}
	var b strings.Builder
	renderHeader(&b, s, opts, p)
	b.WriteByte('\n')

	// The columns are as wide as all the rows need, so that they do not move between pages.
	first, last := 0, len(s.Rows)
	pages, page := pageCount(s, opts.Height), 0
	if pages > 1 {
		size := pageSize(s, opts.Height)
		page = min(max(opts.Page, 0), pages-1)
		first, last = page*size, min((page+1)*size, len(s.Rows))
	}
	cols := []column{{title: "NAME"}, {title: "NODEPOOL"}, {title: "TYPE"}, {title: "CAPACITY"}, {title: "ZONE"}, {title: "$/HOUR", right: true}}
	for _, name := range s.Resources {
		cols = append(cols, column{title: strings.ToUpper(resourceTitle(name))})
	}
	cols = append(cols, column{title: "PODS", right: true}, column{title: "AGE", right: true}, column{title: "STATE"})
	for _, title := range extraLabelTitles(s.ExtraLabels) {
		cols = append(cols, column{title: title})
	}
	var shown []column
	for _, c := range cols {
		if !fit.hidden[c.title] {
			shown = append(shown, c)
		}
	}
	t := newTable(p, shown...)
	for i := range s.Rows {
		cells := rowCells(&s.Rows[i], s, opts, p)
		cells[0].text = shortName(cells[0].text, fit.nameMax)
		kept := cells[:0]
		for j, c := range cells {
			if !fit.hidden[cols[j].title] {
				kept = append(kept, c)
			}
		}
		t.add(kept)
	}
	t.write(&b, first, last)
	if pages > 1 {
		footer := fmt.Sprintf("rows %d–%d of %d, page %d/%d", first+1, last, len(s.Rows), page+1, pages)
		if opts.PageKeys {
			footer += "  ·  ←/→ or PgUp/PgDn: page  ·  q: quit"
		} else {
			footer += " (a taller terminal shows more)"
		}
		b.WriteString(p.paint(ansiDim, footer))
		b.WriteByte('\n')
	}
	frame := b.String()
	widest := 0
	for line := range strings.Lines(frame) {
		widest = max(widest, width(strings.TrimSuffix(line, "\n")))
	}
	return frame, widest
}

// cutLines cuts every line of frame to its first n cells, ending each cut line's colours.
func cutLines(frame string, n int, color bool) string {
	var b strings.Builder
	for line := range strings.Lines(frame) {
		line = strings.TrimSuffix(line, "\n")
		if width(line) <= n {
			b.WriteString(line)
			b.WriteByte('\n')
			continue
		}
		cells := 0
		for i := 0; i < len(line) && cells < n; {
			if line[i] == '\x1b' {
				j := strings.IndexByte(line[i:], 'm')
				if j < 0 {
					break
				}
				b.WriteString(line[i : i+j+1])
				i += j + 1
				continue
			}
			_, size := utf8.DecodeRuneInString(line[i:])
			b.WriteString(line[i : i+size])
			i += size
			cells++
		}
		if color {
			b.WriteString(ansiReset)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// headerLines is how many lines renderHeader writes for s: cost, nodes, and one per resource.
func headerLines(s *Snapshot) int { return 2 + len(s.Resources) }

func renderHeader(b *strings.Builder, s *Snapshot, opts RenderOptions, p painter) {
	sum := &s.Summary
	// The titles are as wide as the widest, and at least as "Memory ".
	titleWidth := 7
	for _, name := range s.Resources {
		titleWidth = max(titleWidth, width(resourceTitle(name)))
	}
	title := func(t string) string { return p.paint(ansiBold, t+strings.Repeat(" ", titleWidth-width(t))) }
	fmt.Fprintf(b, "%s  %s/hour  %s/month", title("Cost"), dollars(sum.PricePerHour, 3), dollars(sum.PricePerMonth(), 2))
	if sum.Unpriced > 0 {
		fmt.Fprintf(b, "  (%d %s without a price)", sum.Unpriced, plural(sum.Unpriced, "row", "rows"))
	}
	if p := sum.Packing; p != nil && p.Bound > 0 {
		// Ours: the Karpenter nodes' $/hour over the least any packing of their pods costs.
		fmt.Fprintf(b, "  ·  packing %.2f× the bound (%s/hour)", p.Ratio(), dollars(p.Bound, 3))
		switch {
		case !sum.PackingAsOf.IsZero():
			fmt.Fprintf(b, " as of %s, before the pods pending and nodes launching", sum.PackingAsOf.Format("15:04:05"))
		case sum.Unsettled:
			b.WriteString(" while pods are pending or nodes launching")
		}
	}
	b.WriteByte('\n')
	fmt.Fprintf(b, "%s  %d %s", title("Nodes"), sum.Nodes, plural(sum.Nodes, "node", "nodes"))
	if sum.Unmanaged > 0 {
		fmt.Fprintf(b, " (%d not managed by Karpenter)", sum.Unmanaged)
	}
	fmt.Fprintf(b, "  ·  %d launching  ·  %d pending %s\n", sum.Launching, sum.PendingPods, plural(sum.PendingPods, "pod", "pods"))
	for i, name := range s.Resources {
		u := sum.Usage[i]
		fmt.Fprintf(b, "%s  %s  %s of %s", title(resourceTitle(name)), usageCell(u, opts.BarWidth, p),
			amount(name, u.Requested), amount(name, u.Allocatable))
		switch name {
		case corev1.ResourceCPU:
			b.WriteString(" cores requested\n")
		case corev1.ResourcePods:
			b.WriteString(" pods\n")
		default:
			b.WriteString(" requested\n")
		}
	}
}

// resourceTitle names a resource in the header: CPU, Memory, Pods, or the resource's own name.
func resourceTitle(name corev1.ResourceName) string {
	switch name {
	case corev1.ResourceCPU:
		return "CPU"
	case corev1.ResourceMemory:
		return "Memory"
	case corev1.ResourcePods:
		return "Pods"
	default:
		return string(name)
	}
}

// amount formats v of resource name: cores for CPU, IEC bytes for memory and storage, a plain
// number otherwise.
func amount(name corev1.ResourceName, v int64) string {
	switch {
	case name == corev1.ResourceCPU:
		return cores(v)
	case name == corev1.ResourceMemory, name == corev1.ResourceEphemeralStorage, name == corev1.ResourceStorage,
		strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
		return bytesIEC(v)
	default:
		return strconv.FormatInt(v, 10)
	}
}

// extraLabelTitles are the column titles of the extra labels keys: the name part of each key
// (the part after its prefix), upper-cased, or the whole key when another key has the same
// name part.
func extraLabelTitles(keys []string) []string {
	titles := make([]string, len(keys))
	count := make(map[string]int, len(keys))
	for i, k := range keys {
		titles[i] = strings.ToUpper(k[strings.LastIndexByte(k, '/')+1:])
		count[titles[i]]++
	}
	for i, k := range keys {
		if count[titles[i]] > 1 {
			titles[i] = strings.ToUpper(k)
		}
	}
	return titles
}

func rowCells(r *Row, s *Snapshot, opts RenderOptions, p painter) []cell {
	nodePool := cell{text: r.NodePool}
	if !r.Managed() {
		nodePool = cell{text: "(none)", color: ansiDim}
	}
	instanceType := orUnknown(r.InstanceType)
	if r.Claim && r.InstanceType == "" {
		instanceType = "?"
	}
	price := cell{text: unknown}
	if r.Priced {
		price.text = strconv.FormatFloat(r.Price, 'f', 4, 64)
	}
	cells := make([]cell, 0, 9+len(s.Resources)+len(s.ExtraLabels))
	cells = append(cells, cell{text: r.Name}, nodePool, cell{text: instanceType}, cell{text: orUnknown(r.CapacityType)},
		cell{text: orUnknown(r.Zone)}, price)
	pods := cell{text: unknown}
	for i := range s.Resources {
		if r.Claim {
			cells = append(cells, cell{text: unknown})
		} else {
			cells = append(cells, cell{text: usageCell(r.Usage[i], opts.BarWidth, p)})
		}
	}
	if !r.Claim {
		var buf [32]byte
		pods.text = string(strconv.AppendInt(append(strconv.AppendInt(buf[:0], int64(r.Pods), 10), '/'), r.MaxPods, 10))
	}
	age := unknown
	if !r.Created.IsZero() {
		age = duration.HumanDuration(s.Now.Sub(r.Created))
	}
	cells = append(cells, pods, cell{text: age}, cell{text: string(r.State), color: stateColor(r.State)})
	for _, key := range s.ExtraLabels {
		v, _ := s.LabelValue(r, key)
		cells = append(cells, cell{text: orUnknown(v)})
	}
	return cells
}

func stateColor(s State) string {
	switch s {
	case StateNotReady:
		return ansiRed
	case StateDeleting, StateCordoned:
		return ansiYellow
	case StateLaunching:
		return ansiCyan
	default:
		return ""
	}
}

// usageCell is a bar of u's fullness and its percentage, coloured by fullness.
func usageCell(u Usage, width int, p painter) string {
	f := u.Fraction()
	return p.paint(fullnessColor(f), bar(f, width)+" "+fmt.Sprintf("%3.0f%%", math.Floor(f*100+0.5)))
}

// bar draws fraction f (clamped to 0…1) as width cells, rounded to the nearest cell; a
// fraction above zero fills at least one cell, one below one leaves at least one empty.
func bar(f float64, width int) string {
	if width <= 0 {
		return ""
	}
	f = min(max(f, 0), 1)
	full := int(math.Floor(f*float64(width) + 0.5))
	if f > 0 && full == 0 {
		full = 1
	}
	if f < 1 && full == width {
		full = width - 1
	}
	return strings.Repeat(barFull, full) + strings.Repeat(barEmpty, width-full)
}

func fullnessColor(f float64) string {
	switch {
	case f >= RedAt:
		return ansiRed
	case f >= YellowAt:
		return ansiYellow
	default:
		return ansiGreen
	}
}

// painter wraps text in ANSI colours when colour is on.
type painter struct{ color bool }

func (p painter) paint(code, text string) string {
	if !p.color || code == "" {
		return text
	}
	return code + text + ansiReset
}

// cell is one table cell: its text and the colour the whole cell is painted in. Text may
// already hold colour codes, which do not count towards its width.
type cell struct{ text, color string }

type column struct {
	title string
	right bool
}

// table lays cells out in columns two spaces apart, as wide as their widest cell.
type table struct {
	p      painter
	cols   []column
	rows   [][]cell
	widths []int
}

func newTable(p painter, cols ...column) *table {
	t := &table{p: p, cols: cols, widths: make([]int, len(cols))}
	for i, c := range cols {
		t.widths[i] = width(c.title)
	}
	return t
}

func (t *table) add(cells []cell) {
	for i, c := range cells {
		t.widths[i] = max(t.widths[i], width(c.text))
	}
	t.rows = append(t.rows, cells)
}

// write writes the titles and the rows from first up to last.
func (t *table) write(b *strings.Builder, first, last int) {
	titles := make([]cell, len(t.cols))
	for i, c := range t.cols {
		titles[i] = cell{text: c.title, color: ansiBold}
	}
	t.line(b, titles)
	for _, r := range t.rows[first:last] {
		t.line(b, r)
	}
}

func (t *table) line(b *strings.Builder, cells []cell) {
	var l strings.Builder
	for i, c := range cells {
		if i > 0 {
			l.WriteString("  ")
		}
		pad := strings.Repeat(" ", t.widths[i]-width(c.text))
		text := t.p.paint(c.color, c.text)
		if t.cols[i].right {
			l.WriteString(pad + text)
		} else {
			l.WriteString(text + pad)
		}
	}
	b.WriteString(strings.TrimRight(l.String(), " "))
	b.WriteByte('\n')
}

// width is how many terminal cells s takes: its runes, less its ANSI escape sequences.
func width(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] == '\x1b' {
			j := strings.IndexByte(s[i:], 'm')
			if j < 0 {
				break
			}
			i += j + 1
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		n++
	}
	return n
}

func orUnknown(s string) string {
	if s == "" {
		return unknown
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func dollars(v float64, decimals int) string {
	return "$" + strconv.FormatFloat(v, 'f', decimals, 64)
}

// cores formats millicores as cores with at most two decimals: 16, 6.5, 0.25.
func cores(milli int64) string {
	return trimDecimals(strconv.FormatFloat(float64(milli)/1000, 'f', 2, 64))
}

// bytesIEC formats bytes in GiB with one decimal, or in MiB below a GiB: 64Gi, 12.3Gi, 512Mi.
func bytesIEC(b int64) string {
	const mi, gi = 1 << 20, 1 << 30
	if b < gi && b > -gi {
		return strconv.FormatFloat(float64(b)/mi, 'f', 0, 64) + "Mi"
	}
	return trimDecimals(strconv.FormatFloat(float64(b)/gi, 'f', 1, 64)) + "Gi"
}

func trimDecimals(s string) string {
	if !strings.Contains(s, ".") {
		return s
	}
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}
