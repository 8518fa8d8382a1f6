package view

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

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
	// Height, when positive, is the most lines the frame may take: rows that do not fit are
	// left out and counted on the last line.
	Height int
}

// MinBarWidth is the narrowest a bar gets when RenderOptions.Width makes it shrink.
const MinBarWidth = 5

// Render writes s as text: a header with the cluster's cost, counts and total usage, then one
// line per row. It makes one call to w.Write.
func Render(w io.Writer, s Snapshot, opts RenderOptions) error {
	if opts.BarWidth <= 0 {
		opts.BarWidth = DefaultBarWidth
	}
	frame, widest := renderFrame(s, opts)
	if opts.Width > 0 && widest > opts.Width {
		// Two bars a line: each gives up half of the excess, rounded up.
		if bar := max(opts.BarWidth-(widest-opts.Width+1)/2, MinBarWidth); bar < opts.BarWidth {
			opts.BarWidth = bar
			frame, widest = renderFrame(s, opts)
		}
		if widest > opts.Width {
			frame = cutLines(frame, opts.Width, opts.Color)
		}
	}
	_, err := io.WriteString(w, frame)
	return err
}

// renderFrame returns the frame and the width of its widest line.
func renderFrame(s Snapshot, opts RenderOptions) (string, int) {
	p := painter{color: opts.Color}
	var b strings.Builder
	renderHeader(&b, s.Summary, opts, p)
	b.WriteByte('\n')

	rows := s.Rows
	hidden := 0
	if opts.Height > 0 {
		// Below the header: a blank line and the column titles, then the rows; when they do not
		// all fit, the last line counts those left out.
		if fit := max(opts.Height-headerLines-2, 0); fit < len(rows) {
			fit = max(fit-1, 0)
			hidden = len(rows) - fit
			rows = rows[:fit]
		}
	}
	t := newTable(p,
		column{title: "NAME"}, column{title: "NODEPOOL"}, column{title: "TYPE"}, column{title: "CAPACITY"},
		column{title: "ZONE"}, column{title: "$/HOUR", right: true}, column{title: "CPU"}, column{title: "MEMORY"},
		column{title: "PODS", right: true}, column{title: "AGE", right: true}, column{title: "STATE"})
	for i := range rows {
		t.add(rowCells(&rows[i], s, opts, p))
	}
	t.write(&b)
	if hidden > 0 {
		fmt.Fprintf(&b, "… %d more %s (a taller terminal shows them)\n", hidden, plural(hidden, "row", "rows"))
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

// headerLines is how many lines renderHeader writes.
const headerLines = 4

func renderHeader(b *strings.Builder, sum Summary, opts RenderOptions, p painter) {
	fmt.Fprintf(b, "%s  %s/hour  %s/month", p.paint(ansiBold, "Cost   "), dollars(sum.PricePerHour, 3), dollars(sum.PricePerMonth(), 2))
	if sum.Unpriced > 0 {
		fmt.Fprintf(b, "  (%d %s without a price)", sum.Unpriced, plural(sum.Unpriced, "row", "rows"))
	}
	b.WriteByte('\n')
	fmt.Fprintf(b, "%s  %d %s", p.paint(ansiBold, "Nodes  "), sum.Nodes, plural(sum.Nodes, "node", "nodes"))
	if sum.Unmanaged > 0 {
		fmt.Fprintf(b, " (%d not managed by Karpenter)", sum.Unmanaged)
	}
	fmt.Fprintf(b, "  ·  %d launching  ·  %d pending %s\n", sum.Launching, sum.PendingPods, plural(sum.PendingPods, "pod", "pods"))
	fmt.Fprintf(b, "%s  %s  %s of %s cores requested\n", p.paint(ansiBold, "CPU    "), usageCell(sum.CPU, opts.BarWidth, p),
		cores(sum.CPU.Requested), cores(sum.CPU.Allocatable))
	fmt.Fprintf(b, "%s  %s  %s of %s requested\n", p.paint(ansiBold, "Memory "), usageCell(sum.Memory, opts.BarWidth, p),
		bytesIEC(sum.Memory.Requested), bytesIEC(sum.Memory.Allocatable))
}

func rowCells(r *Row, s Snapshot, opts RenderOptions, p painter) []cell {
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
	cpu, memory, pods := cell{text: unknown}, cell{text: unknown}, cell{text: unknown}
	if !r.Claim {
		cpu.text = usageCell(r.CPU, opts.BarWidth, p)
		memory.text = usageCell(r.Memory, opts.BarWidth, p)
		pods.text = strconv.Itoa(r.Pods)
	}
	age := unknown
	if !r.Created.IsZero() {
		age = duration.HumanDuration(s.Now.Sub(r.Created))
	}
	return []cell{
		{text: r.Name}, nodePool, {text: instanceType}, {text: orUnknown(r.CapacityType)}, {text: orUnknown(r.Zone)},
		price, cpu, memory, pods, {text: age}, {text: string(r.State), color: stateColor(r.State)},
	}
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

func (t *table) write(b *strings.Builder) {
	titles := make([]cell, len(t.cols))
	for i, c := range t.cols {
		titles[i] = cell{text: c.title, color: ansiBold}
	}
	t.line(b, titles)
	for _, r := range t.rows {
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
