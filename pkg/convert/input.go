package convert

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Source is one input document: a Kubernetes-style object (or one item of a List) read from a
// YAML stream, converted to JSON, with where it came from.
type Source struct {
	// File is the name of the file it was read from ("-" for standard input).
	File string
	// Document is the 1-based position of the document in the file.
	Document int
	// Item is the 1-based position in the document's List, or 0 when the document is no List.
	Item int
	// APIVersion, Kind and Name are the object's, as read (empty when missing).
	APIVersion, Kind, Name string
	// JSON is the object itself.
	JSON []byte
}

// String names the document for messages, such as `cluster.yaml: document 2`.
func (s Source) String() string {
	where := fmt.Sprintf("%s: document %d", s.File, s.Document)
	if s.Item > 0 {
		where += fmt.Sprintf(", item %d", s.Item)
	}
	return where
}

// Object names the object for messages, such as `InstanceGroup "nodes"`.
func (s Source) Object() string {
	if s.Name == "" {
		return fmt.Sprintf("%s (%s)", s.Kind, s)
	}
	return fmt.Sprintf("%s %q", s.Kind, s.Name)
}

// Group returns the API group of the document's apiVersion ("" for the core group).
func (s Source) Group() string {
	group, _, found := strings.Cut(s.APIVersion, "/")
	if !found {
		return ""
	}
	return group
}

// header is the part of every object the reader looks at.
type header struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// ReadSources splits a YAML (or JSON) stream into documents. Empty documents are skipped; a
// document whose kind is List or ends in "List" (as `kubectl get -o yaml` and `kops get -o
// yaml` print) is replaced by its items. file names the stream in messages.
func ReadSources(file string, r io.Reader) ([]Source, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	var sources []Source
	for document := 1; ; document++ {
		chunk, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		if len(bytes.TrimSpace(chunk)) == 0 {
			document--
			continue
		}
		data, err := yaml.YAMLToJSON(chunk)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, document, err)
		}
		if string(bytes.TrimSpace(data)) == "null" {
			document--
			continue
		}
		var h header
		if err := json.Unmarshal(data, &h); err != nil {
			return nil, fmt.Errorf("%s: document %d is not an object: %w", file, document, err)
		}
		if h.Kind == "List" || (strings.HasSuffix(h.Kind, "List") && h.Items != nil) {
			for i, item := range h.Items {
				var ih header
				if err := json.Unmarshal(item, &ih); err != nil {
					return nil, fmt.Errorf("%s: document %d, item %d is not an object: %w", file, document, i+1, err)
				}
				sources = append(sources, Source{
					File: file, Document: document, Item: i + 1,
					APIVersion: ih.APIVersion, Kind: ih.Kind, Name: ih.Metadata.Name, JSON: item,
				})
			}
			continue
		}
		sources = append(sources, Source{
			File: file, Document: document,
			APIVersion: h.APIVersion, Kind: h.Kind, Name: h.Metadata.Name, JSON: data,
		})
	}
	return sources, nil
}

// ReadSourcesFrom reads every named file with ReadSources ("-" reads standard input, given as
// stdin) and returns their documents in order.
func ReadSourcesFrom(files []string, open func(name string) (io.ReadCloser, error)) ([]Source, error) {
	var all []Source
	for _, file := range files {
		f, err := open(file)
		if err != nil {
			return nil, err
		}
		sources, err := ReadSources(file, f)
		closeErr := f.Close()
		if err != nil {
			return nil, err
		}
		if closeErr != nil {
			return nil, fmt.Errorf("closing %s: %w", file, closeErr)
		}
		all = append(all, sources...)
	}
	return all, nil
}
