package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// MaxInputBytes is the largest input file convert reads, 16 MiB: far more than any real set of
// kOps, eksctl or Karpenter objects (the API server takes 3 MiB per request), and little enough
// that a wrong file given by mistake is refused at once rather than read into memory.
const MaxInputBytes = 16 << 20

// MaxObjectBytes is the largest object (a document, or one item of a List) read, 1.5 MiB as
// JSON: the most etcd stores in one value, so the API server could not hold a larger one. A
// document whose text is more than twice that is refused before it is parsed.
const MaxObjectBytes = 3 << 19

// Source is one input document: a Kubernetes-style object (or one item of a List) read from a
// YAML stream, converted to JSON, with where it came from.
type Source struct {
	// File is the name of the file it was read from ("standard input" for "-").
	File string
	// Document is the 1-based position of the document in the file.
	Document int
	// Item is the 1-based position in the document's List, or 0 when the document is no List.
	Item int
	// Line is the line of the file the document starts on (1-based; 0 when unknown).
	Line int
	// APIVersion, Kind and Name are the object's, as read (empty when missing).
	APIVersion, Kind, Name string
	// JSON is the object itself.
	JSON []byte
	// text is the document's YAML, to find the line of a field in; nil when unknown.
	text *documentText
}

// String names the document for messages, such as `cluster.yaml: document 2`.
func (s Source) String() string {
	where := fmt.Sprintf("%s: document %d", s.File, s.Document)
	if s.Item > 0 {
		where += fmt.Sprintf(", item %d", s.Item)
	}
	return where
}

// At names the place of a field of the document for messages: `cluster.yaml:14`, the line of
// the field (such as spec.requirements[0].operator) or, for a field the document lacks, of the
// nearest parent it has; as String does when no line is known.
func (s Source) At(path string) string {
	if line := s.nearestLine(path); line > 0 {
		return fmt.Sprintf("%s:%d", s.File, line)
	}
	return s.String()
}

// nearestLine is the line of a field, or of its nearest parent the document has, or of the
// document; 0 when unknown.
func (s Source) nearestLine(path string) int {
	for {
		if line := s.FieldLine(path); line > 0 {
			return line
		}
		if path == "" {
			return s.Line
		}
		path = parentPath(path)
	}
}

// parentPath is a field path without its last step ("" for a top-level field).
func parentPath(path string) string {
	cut := strings.LastIndexAny(path, ".[")
	if cut < 0 {
		return ""
	}
	return path[:cut]
}

// Object names the object for messages, such as `InstanceGroup "nodes"`, or by its place
// when it has no name, such as `InstanceGroup (document 2)`.
func (s Source) Object() string {
	place := fmt.Sprintf("document %d", s.Document)
	if s.Item > 0 {
		place += fmt.Sprintf(", item %d", s.Item)
	}
	switch {
	case s.Kind == "":
		return fmt.Sprintf("an object without kind (%s)", place)
	case s.Name == "":
		return fmt.Sprintf("%s (%s)", s.Kind, place)
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

// ReadSources splits a YAML (or JSON) stream of at most MaxInputBytes into documents, as
// ParseSources does; file names it in messages.
func ReadSources(file string, r io.Reader) ([]Source, error) {
	data, err := ReadLimited(file, r)
	if err != nil {
		return nil, err
	}
	return ParseSources(file, data, 1)
}

// ReadLimited reads all of r, the contents of file, but no more than MaxInputBytes: a larger
// stream is refused after reading MaxInputBytes+1 bytes of it, however large it is.
func ReadLimited(file string, r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, readError(err))
	}
	if len(data) > MaxInputBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB, the most one input file may hold: is it the right file? Split it if so", file, MaxInputBytes>>20)
	}
	return data, nil
}

// ReadFiles reads every named file with ReadSources ("-" reads stdin) and returns their
// documents in order. Every file that cannot be read (missing, unreadable, a directory, empty,
// binary, too large) or holds a bad document is reported, file name first, all together as
// Errors.
func ReadFiles(files []string, stdin io.Reader) ([]Source, error) {
	var all []Source
	var errs Errors
	for _, file := range files {
		sources, err := readFile(file, stdin)
		if err != nil {
			errs = append(errs, AsErrors(err)...)
			continue
		}
		all = append(all, sources...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return all, nil
}

// readFile reads one named file, or stdin for "-".
func readFile(file string, stdin io.Reader) ([]Source, error) {
	if file == "-" {
		return ReadSources("standard input", stdin)
	}
	if file == "" {
		return nil, errors.New(`an empty file name: name a YAML or JSON file, or - for standard input`)
	}
	info, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, readError(err))
	}
	if info.IsDir() {
		return nil, fmt.Errorf("%s: is a directory: convert reads files, not directories; name the files (such as %s)", file, strings.TrimRight(file, "/")+"/*.yaml")
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, readError(err))
	}
	defer func() { _ = f.Close() }()
	return ReadSources(file, f)
}

// readError is err without the file name an *fs.PathError repeats ("open x.yaml: no such file
// or directory" becomes "no such file or directory"), for messages that name the file first.
func readError(err error) error {
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		return pathErr.Err
	}
	return err
}

// ParseSources splits data, a YAML (or JSON) stream, into documents. Empty documents are
// skipped; a document whose kind is List or ends in "List" (as `kubectl get -o yaml` and `kops
// get -o yaml` print) is replaced by its items. file names the stream in messages, and
// firstLine is the line of file that data starts on (1 for a whole file; for YAML embedded in
// another file as a literal block, the block's first line), so that every line named is the
// file's. Data that is empty, binary or holds no document is an error; so is every document that
// is not YAML, not an object, larger than MaxObjectBytes, or holds a number JSON cannot (.nan,
// .inf), each named with its line, all returned together as Errors.
func ParseSources(file string, data []byte, firstLine int) ([]Source, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: the file is empty: want YAML or JSON objects", file)
	}
	if bytes.HasPrefix(data, []byte{0xff, 0xfe}) || bytes.HasPrefix(data, []byte{0xfe, 0xff}) {
		return nil, fmt.Errorf("%s: UTF-16 text (as Windows PowerShell's > writes): save it as UTF-8", file)
	}
	if at := binaryAt(data); at >= 0 {
		return nil, fmt.Errorf("%s: binary data (byte %d is not UTF-8 text): want YAML or JSON objects", file, at)
	}
	chunks, err := splitDocuments(file, data, firstLine)
	if err != nil {
		return nil, err
	}
	var sources []Source
	var errs Errors
	document := 0
	for _, c := range chunks {
		if len(bytes.TrimSpace(c.text)) == 0 {
			continue
		}
		text := &documentText{yaml: c.text, line: c.line}
		if len(c.text) > 2*MaxObjectBytes {
			errs = append(errs, fmt.Errorf("%s:%d: document %d is %s of text, more than twice the %s the API server (etcd) stores in one object: split it", file, c.line, document+1, mebibytes(len(c.text)), mebibytes(MaxObjectBytes)))
			document++
			continue
		}
		data, err := yaml.YAMLToJSONStrict(c.text)
		if err != nil {
			errs = append(errs, yamlError(file, document+1, text, err))
			document++
			continue
		}
		if string(bytes.TrimSpace(data)) == "null" {
			continue
		}
		document++
		src := Source{File: file, Document: document, Line: c.line, JSON: data, text: text}
		var h header
		if err := json.Unmarshal(data, &h); err != nil {
			errs = append(errs, notAnObject(src, data, err))
			continue
		}
		if h.Kind == "List" || (strings.HasSuffix(h.Kind, "List") && h.Items != nil) {
			for i, item := range h.Items {
				itemSrc := Source{File: file, Document: document, Item: i + 1, Line: c.line, JSON: item, text: text}
				if line := itemSrc.FieldLine(""); line > 0 {
					itemSrc.Line = line
				}
				if err := tooLarge(itemSrc); err != nil {
					errs = append(errs, err)
					continue
				}
				var ih header
				if err := json.Unmarshal(item, &ih); err != nil {
					errs = append(errs, notAnObject(itemSrc, item, err))
					continue
				}
				itemSrc.APIVersion, itemSrc.Kind, itemSrc.Name = ih.APIVersion, ih.Kind, ih.Metadata.Name
				sources = append(sources, itemSrc)
			}
			continue
		}
		if err := tooLarge(src); err != nil {
			errs = append(errs, err)
			continue
		}
		src.APIVersion, src.Kind, src.Name = h.APIVersion, h.Kind, h.Metadata.Name
		sources = append(sources, src)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(sources) == 0 {
		return nil, fmt.Errorf("%s: no document, only comments or empty documents: want YAML or JSON objects", file)
	}
	return sources, nil
}

// tooLarge refuses an object (a document or a List item) larger than MaxObjectBytes.
func tooLarge(src Source) error {
	if len(src.JSON) <= MaxObjectBytes {
		return nil
	}
	what := fmt.Sprintf("document %d", src.Document)
	if src.Item > 0 {
		what += fmt.Sprintf(", item %d", src.Item)
	}
	return fmt.Errorf("%s: %s is %s as JSON, more than the %s the API server (etcd) stores in one object: split it", src.At(""), what, mebibytes(len(src.JSON)), mebibytes(MaxObjectBytes))
}

// mebibytes writes a size such as 1.5 MiB.
func mebibytes(n int) string {
	return strconv.FormatFloat(math.Round(float64(n)/(1<<20)*10)/10, 'f', -1, 64) + " MiB"
}

// binaryAt returns the offset of the first byte that makes data binary rather than text (a
// NUL, or bytes that are not UTF-8), or -1.
func binaryAt(data []byte) int {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return i
	}
	if utf8.Valid(data) {
		return -1
	}
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// chunk is the text of one document of a stream and the line it starts on.
type chunk struct {
	text []byte
	line int
}

// splitDocuments cuts a stream that starts on line firstLine of file at its "---" lines, as
// Kubernetes' YAML reader does (a separator may be followed by a comment, nothing else),
// keeping each document's first line.
func splitDocuments(file string, data []byte, firstLine int) ([]chunk, error) {
	var chunks []chunk
	offset, start, startLine := 0, 0, firstLine
	for n, line := range bytes.SplitAfter(data, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("---")) {
			if rest := bytes.TrimSpace(line[3:]); len(rest) > 0 && rest[0] != '#' {
				return nil, fmt.Errorf("%s:%d: %q after the document separator ---: put the document on the next line", file, firstLine+n, rest)
			}
			chunks = append(chunks, chunk{text: data[start:offset], line: startLine})
			start, startLine = offset+len(line), firstLine+n+1
		}
		offset += len(line)
	}
	return append(chunks, chunk{text: data[start:], line: startLine}), nil
}

// yamlLine matches the line numbers in the YAML parser's messages.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlError turns the YAML parser's error about a document into one naming the file and the
// line in the file (the parser counts from the document's start), with a hint for the limits
// it enforces.
func yamlError(file string, document int, text *documentText, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error converting YAML to JSON: ")
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	line := 0
	msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, _ := strconv.Atoi(strings.TrimPrefix(m, "line "))
		n += text.line - 1
		if line == 0 {
			line = n
		}
		return fmt.Sprintf("line %d", n)
	})
	switch {
	case strings.Contains(msg, "excessive aliasing"):
		msg += " (its aliases, *name, expand to far more than the text: write the values out)"
	case strings.Contains(msg, "exceeded max depth"):
		msg += " (nesting of lists and objects)"
	case strings.HasPrefix(msg, "json: unsupported value: "):
		value := strings.TrimPrefix(msg, "json: unsupported value: ")
		msg = fmt.Sprintf("%s is not a number Kubernetes objects can hold (YAML's .nan and .inf have no JSON form)", value)
		if path, l := text.nonFinite(); l > 0 {
			return fmt.Errorf("%s:%d: %s: %s", file, l, path, msg)
		}
	default:
		msg = "invalid YAML: " + msg
	}
	if line > 0 {
		msg = strings.Replace(msg, fmt.Sprintf("line %d: ", line), "", 1)
		return fmt.Errorf("%s:%d: %s", file, line, msg)
	}
	return fmt.Errorf("%s: document %d: %s", file, document, msg)
}

// notAnObject explains why a document (or List item) is not a Kubernetes-style object.
func notAnObject(src Source, data []byte, err error) error {
	what := "not an object"
	switch first := bytes.TrimSpace(data); {
	case len(first) == 0:
	case first[0] == '[':
		what = "a list, not an object"
	case first[0] == '"':
		what = "a string, not an object"
	case first[0] == 't' || first[0] == 'f':
		what = "a boolean, not an object"
	case first[0] == '-' || (first[0] >= '0' && first[0] <= '9'):
		what = "a number, not an object"
	case first[0] == '{':
		return src.DecodeError(err, &header{}, data)
	}
	return fmt.Errorf("%s: %s: want an object with apiVersion and kind", src.At(""), what)
}

// FieldError returns a problem with a field of the document as an error naming the file and
// line, the object, and the field, such as
// `legacy.yaml:12: Provisioner "default": spec.weight: Invalid value: 0: must be from 1 to 100`.
func (s Source) FieldError(err *field.Error) error {
	return fmt.Errorf("%s: %s: %w", s.At(err.Field), s.Object(), err)
}

// UnknownFieldError reports a field of the document that its type does not have, at the
// field's line, with the field it likely misspells, such as
// `m.yaml:53: Deployment "inflate": spec.replica: unknown field; did you mean replicas?`.
func (s Source) UnknownFieldError(f UnknownField) error {
	msg := "unknown field"
	if f.DidYouMean != "" {
		msg += "; did you mean " + f.DidYouMean + "?"
	}
	return fmt.Errorf("%s: %s: %s: %s", s.At(f.Path), s.Object(), f.Path, msg)
}

// StatusErrors returns err, the API server's refusal of the document's object (or the same
// from pkg/validation), as one error per cause, each at the line of its field, such as
// `web.yaml:13: NodePool "default": spec.template.spec.requirements[0].operator: Unsupported
// value: "Maybe": ...`; an error with no causes is returned as one, at the document's line.
func (s Source) StatusErrors(err error) Errors {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return Errors{fmt.Errorf("%s: %s: %w", s.At(""), s.Object(), err)}
	}
	var errs Errors
	for _, cause := range status.Status().Details.Causes {
		// The schema's messages repeat the path ("spec.weight in body should be ...").
		msg := strings.ReplaceAll(cause.Message, cause.Field+" in body ", "")
		if cause.Field == "" {
			errs = append(errs, fmt.Errorf("%s: %s: %s", s.At(""), s.Object(), msg))
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %s: %s: %s", s.At(cause.Field), s.Object(), cause.Field, msg))
	}
	return errs
}

// FieldErrors is FieldError for each problem of a list.
func (s Source) FieldErrors(list field.ErrorList) Errors {
	errs := make(Errors, 0, len(list))
	for _, fe := range list {
		errs = append(errs, s.FieldError(fe))
	}
	return errs
}
