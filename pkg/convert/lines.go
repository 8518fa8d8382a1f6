package convert

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	yamlv3 "go.yaml.in/yaml/v3"

	"github.com/openkarpenter/karpenter/pkg/yamlpath"
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
	if s.Item > 0 {
		items := yamlpath.MappingValue(node, "items")
		if items == nil || items.Kind != yamlv3.SequenceNode || len(items.Content) < s.Item {
			return 0
		}
		node = yamlpath.Resolve(items.Content[s.Item-1])
	}
	found, line := yamlpath.Find(node, path)
	if found == nil {
		return 0
	}
	return line + s.text.line - 1
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
