// Package yamlpath finds where a field is written in a YAML document: the node and line that a
// Kubernetes field path (spec.requirements[0].operator, metadata.labels[app]) names in a
// go.yaml.in/yaml/v3 node tree. The commands that read YAML (convert, simulate) use it so that
// an error about a decoded object points at the line of the input that holds the field.
package yamlpath

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// Segment is one step of a field path: a name (.name) or a bracketed key or index ([key]).
type Segment struct {
	// Name is the field's name, the map key or the index.
	Name string
	// Bracketed is true for a [key] or [index] step.
	Bracketed bool
}

// Split cuts a field path into its steps; false when a bracket is not closed.
func Split(path string) ([]Segment, bool) {
	var segments []Segment
	for len(path) > 0 {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return nil, false
			}
			segments = append(segments, Segment{Name: path[1:end], Bracketed: true})
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segments = append(segments, Segment{Name: path[:end]})
			path = path[end:]
		}
	}
	return segments, true
}

// Find returns the node that path names under node (a document node stands for its content)
// and its line (a map entry's key line), or nil and 0 when the path is not written there. A
// name applied to a list (as in the paths of JSON type errors, which leave out indices) finds
// the one item that has it, if only one does.
func Find(node *yaml.Node, path string) (*yaml.Node, int) {
	segments, ok := Split(path)
	if !ok || node == nil {
		return nil, 0
	}
	node = content(node)
	return walk(node, node.Line, segments)
}

// Line returns the line of the deepest part of path written under node: the field's own line
// when it is written, else the line of its nearest written parent, node's line when none is
// (0 for a nil node).
func Line(node *yaml.Node, path string) int {
	segments, ok := Split(path)
	if !ok || node == nil {
		return 0
	}
	node = content(node)
	for k := len(segments); k > 0; k-- {
		if n, line := walk(node, node.Line, segments[:k]); n != nil {
			return line
		}
	}
	return node.Line
}

// content is the node a document node holds, or node itself.
func content(node *yaml.Node) *yaml.Node {
	if node.Kind == yaml.DocumentNode && len(node.Content) > 0 {
		return node.Content[0]
	}
	return node
}

// walk follows the steps from node and returns the node reached and its line (a map entry's
// key line), or nil.
func walk(node *yaml.Node, line int, segments []Segment) (*yaml.Node, int) {
	for i, seg := range segments {
		node = Resolve(node)
		switch node.Kind {
		case yaml.MappingNode:
			key, value := mappingEntry(node, seg.Name)
			if value == nil {
				return nil, 0
			}
			node, line = value, key.Line
		case yaml.SequenceNode:
			if index, err := strconv.Atoi(seg.Name); err == nil && seg.Bracketed {
				if index < 0 || index >= len(node.Content) {
					return nil, 0
				}
				node, line = node.Content[index], node.Content[index].Line
				continue
			}
			// A name on a list: the one item that leads somewhere. An item that is itself a
			// list is passed over: the name would be tried on it again without a step taken,
			// which an alias of the list inside it (a: &a [*a]) repeats without end.
			var found *yaml.Node
			foundLine := 0
			for _, item := range node.Content {
				if Resolve(item).Kind == yaml.SequenceNode {
					continue
				}
				if n, l := walk(item, item.Line, segments[i:]); n != nil {
					if found != nil {
						return nil, 0
					}
					found, foundLine = n, l
				}
			}
			return found, foundLine
		default:
			return nil, 0
		}
	}
	return node, line
}

// Resolve follows an alias to the node it names.
func Resolve(node *yaml.Node) *yaml.Node {
	for node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	return node
}

// MappingValue returns the value of a mapping's entry key, or nil when node is not a mapping
// or has no such entry.
func MappingValue(node *yaml.Node, key string) *yaml.Node {
	node = Resolve(node)
	if node.Kind != yaml.MappingNode {
		return nil
	}
	_, value := mappingEntry(node, key)
	return value
}

// mappingEntry returns the key and value nodes of a mapping's entry, or nils.
func mappingEntry(node *yaml.Node, key string) (*yaml.Node, *yaml.Node) {
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i], node.Content[i+1]
		}
	}
	return nil, nil
}
