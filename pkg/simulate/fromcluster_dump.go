package simulate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/openkarpenter/karpenter/pkg/convert"
)

// MaxDumpBytes bounds a dump of a cluster: some 20,000 pods as `kubectl get -o yaml` prints
// them. Each of its objects is still bounded as any input's (convert.MaxObjectBytes).
const MaxDumpBytes = 128 << 20

// readDump reads a dump of at most MaxDumpBytes.
func readDump(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, MaxDumpBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if len(data) > MaxDumpBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most a dump may hold: dump fewer namespaces, or simulate the live cluster", file, MaxDumpBytes>>20)
	}
	return data, nil
}

// readDumpDocuments reads the objects of a dump. The one List document kubectl prints holds a
// whole cluster, far more than the bound on one document of other inputs: its items are read
// one by one instead (each with its own bound), at their lines of the file. Anything else is
// read as a stream of documents.
func readDumpDocuments(file string, data []byte) ([]document, []error) {
	items, ok := yamlListItems(data)
	if !ok {
		items, ok = jsonListItems(data)
	}
	if !ok {
		return readDocuments(file, string(data), 1)
	}
	var docs []document
	var errs []error
	for _, it := range items {
		d, e := readDocuments(file, it.text, it.line)
		docs, errs = append(docs, d...), append(errs, e...)
	}
	if len(errs) > 0 && len(data) <= 2*convert.MaxObjectBytes {
		// Items split apart lose what they share (YAML anchors and aliases): a List small
		// enough to be read whole is, when that reads it.
		if whole, wholeErrs := readDocuments(file, string(data), 1); len(wholeErrs) == 0 {
			return whole, nil
		}
	}
	return docs, errs
}

// listItem is the text of one item of a List and the line of the file it starts on.
type listItem struct {
	text string
	line int
}

// yamlListItems splits a YAML document `kind: List` with an `items:` sequence, as kubectl
// prints it, into its items' texts (each a document of its own, its dash blanked). It reports false
// for anything else: several documents, flow style, no items key.
func yamlListItems(data []byte) ([]listItem, bool) {
	lines := strings.Split(string(data), "\n")
	var items []listItem
	var cur *strings.Builder
	curLine := 0
	inItems, done, isList := false, false, false
	indent, indentSet := "", false
	flush := func() {
		if cur != nil {
			items = append(items, listItem{text: cur.String(), line: curLine})
			cur = nil
		}
	}
	for i, l := range lines {
		trimmed := strings.TrimRight(l, " \t\r")
		switch {
		case strings.HasPrefix(l, "---") && i > 0 && (inItems || done || isList):
			return nil, false // a second document
		case strings.HasPrefix(l, "---"):
			continue
		case inItems && !indentSet && strings.HasPrefix(strings.TrimLeft(l, " "), "- "):
			indent, indentSet = l[:len(l)-len(strings.TrimLeft(l, " "))], true
			fallthrough
		case inItems && indentSet && strings.HasPrefix(l, indent+"- "):
			flush()
			cur, curLine = &strings.Builder{}, i+1
			cur.WriteString(strings.Repeat(" ", len(indent)+2) + l[len(indent)+2:] + "\n")
		case inItems && cur != nil && (strings.TrimSpace(l) == "" || strings.HasPrefix(l, indent+"  ")):
			cur.WriteString(l + "\n")
		case strings.HasPrefix(trimmed, "#") || trimmed == "":
			continue
		case l[0] == ' ' || l[0] == '\t':
			if inItems {
				return nil, false
			}
		default:
			if inItems {
				flush()
				inItems, done = false, true
			}
			key, value, _ := strings.Cut(trimmed, ":")
			switch strings.TrimSpace(key) {
			case "items":
				if strings.TrimSpace(value) != "" || done {
					return nil, false
				}
				inItems = true
			case "kind":
				isList = strings.TrimSpace(value) == "List"
			}
		}
	}
	flush()
	if !isList || (!inItems && !done) || len(items) == 0 {
		return nil, false
	}
	return items, true
}

// jsonListItems splits a JSON List (kubectl get -o json) into its items, each at its line.
func jsonListItems(data []byte) ([]listItem, bool) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false
	}
	var head struct {
		Kind string `json:"kind"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var items []listItem
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := tok.(string)
		if key != "items" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, false
			}
			if key == "kind" {
				_ = json.Unmarshal(skip, &head.Kind)
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return nil, false
		}
		for dec.More() {
			start := dec.InputOffset()
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, false
			}
			// The item starts at its first byte past the separator before it.
			at := int(start)
			for at < len(data) && (data[at] == ',' || data[at] == ' ' || data[at] == '\n' || data[at] == '\r' || data[at] == '\t') {
				at++
			}
			items = append(items, listItem{text: string(raw), line: 1 + bytes.Count(data[:at], []byte("\n"))})
		}
		if _, err := dec.Token(); err != nil {
			return nil, false
		}
	}
	if head.Kind != "List" || len(items) == 0 {
		return nil, false
	}
	return items, true
}
