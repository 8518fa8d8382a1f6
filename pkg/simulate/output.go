package simulate

import (
	"encoding/json"
	"io"
	"strings"
)

// Output is what `karpenter simulate` writes: a run's Report, a Comparison of two runs, or a
// ClusterReport. WriteText, WriteJSON and WriteHTML write any of them.
type Output interface {
	// text writes the output as a terminal summary.
	text(b *strings.Builder)
	// pageTemplate names the template of the page set that draws the output, and the data it
	// reads.
	pageTemplate() (name string, data any)
}

// WriteText writes o as a terminal summary.
func WriteText(w io.Writer, o Output) error {
	var b strings.Builder
	o.text(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes o as indented JSON.
func WriteJSON(w io.Writer, o Output) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(o)
}

// WriteHTML writes o as one self-contained HTML page: no scripts, no network.
func WriteHTML(w io.Writer, o Output) error {
	name, data := o.pageTemplate()
	return page.ExecuteTemplate(w, name, data)
}
