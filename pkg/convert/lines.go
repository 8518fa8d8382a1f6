package convert

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"
)

// documentText is the YAML of one input document, parsed (once, when a message first needs a
// line) into nodes that know their lines.
type documentText struct {
	yaml []byte
	// line is the line of the file yaml starts on.
	line int
	once sync.Once
	node *yamlv3.Node
}

// root returns the document's top node, or nil when it does not parse.
func (t *documentText) root() *yamlv3.Node {
	t.once.Do(func() {
		var doc yamlv3.Node
		if yamlv3.Unmarshal(t.yaml, &doc) != nil || doc.Kind != yamlv3.DocumentNode || len(doc.Content) == 0 {
			return
		}
		t.node = doc.Content[0]
	})
	return t.node
}

// FieldLine returns the line of the file holding a field of the document, given as a field
// path such as spec.requirements[0].operator or metadata.labels[app] (empty for the object
// itself), or 0 when the path is not found. A name applied to a list (as in the paths of JSON
// type errors, which leave out indices) finds the one item that has it, if only one does.
func (s Source) FieldLine(path string) int {
	if s.text == nil {
		return 0
	}
	node := s.text.root()
	if node == nil {
		return 0
	}
	line := node.Line
	if s.Item > 0 {
		items := mappingValue(node, "items")
		if items == nil || items.Kind != yamlv3.SequenceNode || len(items.Content) < s.Item {
			return 0
		}
		node = resolve(items.Content[s.Item-1])
		line = node.Line
	}
	segments, ok := splitPath(path)
	if !ok {
		return 0
	}
	node, line = walk(node, line, segments)
	if node == nil {
		return 0
	}
	return line + s.text.line - 1
}

// segment is one step of a field path: a name (.name) or a bracketed key or index ([key]).
type segment struct {
	name      string
	bracketed bool
}

// splitPath cuts a field path into its steps.
func splitPath(path string) ([]segment, bool) {
	var segments []segment
	for len(path) > 0 {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return nil, false
			}
			segments = append(segments, segment{name: path[1:end], bracketed: true})
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			segments = append(segments, segment{name: path[:end]})
			path = path[end:]
		}
	}
	return segments, true
}

// walk follows the steps from node and returns the node reached and its line (a map entry's
// key line), or nil.
func walk(node *yamlv3.Node, line int, segments []segment) (*yamlv3.Node, int) {
	for i, seg := range segments {
		node = resolve(node)
		switch node.Kind {
		case yamlv3.MappingNode:
			key, value := mappingEntry(node, seg.name)
			if value == nil {
				return nil, 0
			}
			node, line = value, key.Line
		case yamlv3.SequenceNode:
			if index, err := strconv.Atoi(seg.name); err == nil && seg.bracketed {
				if index < 0 || index >= len(node.Content) {
					return nil, 0
				}
				node, line = node.Content[index], node.Content[index].Line
				continue
			}
			// A name on a list: the one item that leads somewhere.
			var found *yamlv3.Node
			foundLine := 0
			for _, item := range node.Content {
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

// resolve follows an alias to the node it names.
func resolve(node *yamlv3.Node) *yamlv3.Node {
	for node.Kind == yamlv3.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	return node
}

// mappingEntry returns the key and value nodes of a mapping's entry, or nils.
func mappingEntry(node *yamlv3.Node, key string) (*yamlv3.Node, *yamlv3.Node) {
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i], node.Content[i+1]
		}
	}
	return nil, nil
}

// mappingValue returns the value of a mapping's entry, or nil.
func mappingValue(node *yamlv3.Node, key string) *yamlv3.Node {
	node = resolve(node)
	if node.Kind != yamlv3.MappingNode {
		return nil
	}
	_, value := mappingEntry(node, key)
	return value
}

// plainName matches the map keys a field path writes as .name rather than [key].
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// nonFinite returns the path and line of the first YAML float that is not a finite number
// (.nan, .inf, -.inf), which JSON cannot hold; 0 when there is none.
func (t *documentText) nonFinite() (string, int) {
	root := t.root()
	if root == nil {
		return "", 0
	}
	var find func(node *yamlv3.Node, path string) (string, int)
	find = func(node *yamlv3.Node, path string) (string, int) {
		switch node.Kind {
		case yamlv3.ScalarNode:
			if node.ShortTag() == "!!float" {
				switch strings.ToLower(strings.TrimPrefix(node.Value, "+")) {
				case ".nan", ".inf", "-.inf":
					return path, node.Line + t.line - 1
				}
			}
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				key := node.Content[i].Value
				child := path + "[" + key + "]"
				if plainName.MatchString(key) {
					child = strings.TrimPrefix(path+"."+key, ".")
				}
				if p, l := find(node.Content[i+1], child); l > 0 {
					return p, l
				}
			}
		case yamlv3.SequenceNode:
			for i, item := range node.Content {
				if p, l := find(item, fmt.Sprintf("%s[%d]", path, i)); l > 0 {
					return p, l
				}
			}
		}
		return "", 0
	}
	return find(root, "")
}
