package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Document is one piece of a converter's output: a Kubernetes object, or another YAML file such
// as Helm values or a CloudFormation template.
type Document struct {
	// File is the file the document goes to when the output is a directory. Documents with the
	// same File share it, in order, separated by "---".
	File string
	// Comment is written as YAML comment lines before the document.
	Comment string
	// Content is the document. A runtime.Object is written without its status and without
	// server-set empty metadata; anything else is marshalled as it is.
	Content any
	// From is the input document a Kubernetes object was made from, named when the object is
	// invalid; nil when it was made from no one document.
	From *Source
	// Origins tie parts of a Kubernetes object to the input fields they were made from, to
	// report a refused value where the user wrote it (see Origin and Result.Validate).
	Origins []Origin
}

// Result is what a converter produced: the documents in output order and the warnings (fields
// with no equivalent, guesses made offline, steps left to the user) to show beside them.
type Result struct {
	// Documents are the output, in order.
	Documents []Document
	// Warnings are messages for the user, one a line, in the order they arose.
	Warnings []string
}

// Warnf adds a warning.
func (r *Result) Warnf(format string, args ...any) {
	r.Warnings = append(r.Warnings, fmt.Sprintf(format, args...))
}

// Add appends documents.
func (r *Result) Add(docs ...Document) { r.Documents = append(r.Documents, docs...) }

// Objects returns the Kubernetes objects among the documents, in order.
func (r *Result) Objects() []runtime.Object {
	var objects []runtime.Object
	for _, doc := range r.Documents {
		if obj, ok := doc.Content.(runtime.Object); ok {
			objects = append(objects, obj)
		}
	}
	return objects
}

// Render returns the document as YAML, comment first.
func Render(doc Document) ([]byte, error) {
	var content any = doc.Content
	if obj, ok := doc.Content.(runtime.Object); ok {
		cleaned, err := objectMap(obj)
		if err != nil {
			return nil, err
		}
		content = cleaned
	}
	data, err := yaml.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", doc.File, err)
	}
	if doc.Comment == "" {
		return data, nil
	}
	var b bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(doc.Comment, "\n"), "\n") {
		if line == "" {
			b.WriteString("#\n")
			continue
		}
		b.WriteString("# " + line + "\n")
	}
	b.Write(data)
	return b.Bytes(), nil
}

// objectMap returns obj as a JSON map without status and without a null creationTimestamp.
func objectMap(obj runtime.Object) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	m := map[string]any{}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		if meta["creationTimestamp"] == nil {
			delete(meta, "creationTimestamp")
		}
	}
	pruneEmptyMetadata(m)
	return m, nil
}

// pruneEmptyMetadata removes empty "metadata" objects (such as a NodePool template's without
// labels or annotations), which Go structs cannot omit.
func pruneEmptyMetadata(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			if inner, ok := child.(map[string]any); ok && k == "metadata" && len(inner) == 0 {
				delete(v, k)
				continue
			}
			pruneEmptyMetadata(child)
		}
	case []any:
		for _, child := range v {
			pruneEmptyMetadata(child)
		}
	}
}

// RenderStream returns the documents as one YAML stream, separated by "---".
func RenderStream(docs []Document) ([]byte, error) {
	var b bytes.Buffer
	for i, doc := range docs {
		data, err := Render(doc)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(data)
	}
	return b.Bytes(), nil
}

// WriteStream writes the documents to w as one YAML stream.
func WriteStream(w io.Writer, docs []Document) error {
	data, err := RenderStream(docs)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	return err
}

// Files groups the documents by File, in order of first appearance, and renders each group.
func Files(docs []Document) (names []string, contents map[string][]byte, err error) {
	groups := map[string][]Document{}
	for _, doc := range docs {
		if doc.File == "" || filepath.Base(doc.File) != doc.File {
			return nil, nil, fmt.Errorf("document file name %q is not a plain file name", doc.File)
		}
		if _, seen := groups[doc.File]; !seen {
			names = append(names, doc.File)
		}
		groups[doc.File] = append(groups[doc.File], doc)
	}
	contents = map[string][]byte{}
	for _, name := range names {
		if contents[name], err = RenderStream(groups[name]); err != nil {
			return nil, nil, err
		}
	}
	return names, contents, nil
}

// WriteDir writes the documents as files in dir, creating it if needed. Everything is written
// to a temporary directory beside dir first and then moved in, so that a failure leaves no
// partial output: when dir does not exist it appears whole; when it exists, files of the same
// names are replaced and other files are left alone.
func WriteDir(dir string, docs []Document) (err error) {
	names, contents, err := Files(docs)
	if err != nil {
		return err
	}
	dir = filepath.Clean(dir)
	info, statErr := os.Stat(dir)
	exists := statErr == nil
	switch {
	case exists && !info.IsDir():
		return fmt.Errorf("output %s exists and is not a directory", dir)
	case statErr != nil && !errors.Is(statErr, os.ErrNotExist):
		return fmt.Errorf("output %s: %w", dir, statErr)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("creating a temporary directory beside %s: %w", dir, err)
	}
	defer func() {
		if removeErr := os.RemoveAll(tmp); removeErr != nil && err == nil {
			err = fmt.Errorf("removing %s: %w", tmp, removeErr)
		}
	}()
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(tmp, name), contents[name], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", name, err)
		}
	}
	if !exists {
		if err := os.Chmod(tmp, 0o755); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", tmp, err)
		}
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("moving the output into %s: %w", dir, err)
		}
		return nil
	}
	for _, name := range names {
		if err := os.Rename(filepath.Join(tmp, name), filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("moving %s into %s: %w", name, dir, err)
		}
	}
	return nil
}
