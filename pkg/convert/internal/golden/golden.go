// Package golden runs the converters' golden tests. Each folder under a package's testdata/
// is one case: input.yaml (the converter's input), optionally options.yaml (the converter's
// Options as YAML) and other inputs, and the expected outcome: output.yaml (the YAML stream the
// command prints), errors.txt and warnings.txt (one message a line; absent when there are
// none). `go test ./pkg/convert/... -update` rewrites the expected files from what the
// converters now produce. Every Kubernetes object of an output must also pass the project's
// CRD validation (pkg/validation) as printed, with no unknown fields: an oracle independent
// of the converters' own check, convert.Result.Validate.
//
// Every test package under pkg/convert imports this one, so that the -update flag exists in
// each of them.
package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/validation"
)

var update = flag.Bool("update", false, "rewrite the golden files (output.yaml, errors.txt, warnings.txt) of pkg/convert tests")

// Updating reports whether the test run rewrites golden files.
func Updating() bool { return *update }

// Case is one folder of testdata.
type Case struct {
	// Name is the folder's name.
	Name string
	// Dir is the folder's path.
	Dir string
}

// Cases returns the cases under root (folders holding an input.yaml), sorted by name.
func Cases(t testing.TB, root string) []Case {
	t.Helper()
	inputs, err := filepath.Glob(filepath.Join(root, "*", "input.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) == 0 {
		t.Fatalf("no golden cases under %s", root)
	}
	sort.Strings(inputs)
	cases := make([]Case, 0, len(inputs))
	for _, input := range inputs {
		dir := filepath.Dir(input)
		cases = append(cases, Case{Name: filepath.Base(dir), Dir: dir})
	}
	return cases
}

// Path returns the path of a file of the case.
func (c Case) Path(name string) string { return filepath.Join(c.Dir, name) }

// Has reports whether the case has the file.
func (c Case) Has(name string) bool {
	_, err := os.Stat(c.Path(name))
	return err == nil
}

// ExpectsErrors reports whether the case's expected outcome is a list of errors.
func (c Case) ExpectsErrors() bool { return c.Has("errors.txt") }

// Sources reads the case's input.yaml.
func (c Case) Sources(t testing.TB) []convert.Source {
	t.Helper()
	return c.SourcesOf(t, "input.yaml")
}

// SourcesOf reads a YAML file of the case.
func (c Case) SourcesOf(t testing.TB, name string) []convert.Source {
	t.Helper()
	f, err := os.Open(c.Path(name))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sources, err := convert.ReadSources(name, f)
	if err != nil {
		t.Fatal(err)
	}
	return sources
}

// Options decodes the case's options.yaml, if any, strictly into opts.
func (c Case) Options(t testing.TB, opts any) {
	t.Helper()
	data, err := os.ReadFile(c.Path("options.yaml"))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, opts); err != nil {
		t.Fatalf("%s: %v", c.Path("options.yaml"), err)
	}
}

// Outcome is what a converter produced for a case.
type Outcome struct {
	// Output is the YAML stream, empty on error.
	Output []byte
	// Warnings are the warnings, one a line.
	Warnings []string
	// Errors are the errors, one a line.
	Errors []string
}

// OutcomeOf renders a converter's result or error, and checks that the objects of a result
// pass the CRD validation (see Validate).
func OutcomeOf(t testing.TB, result *convert.Result, err error) Outcome {
	t.Helper()
	if err != nil {
		if result != nil && len(result.Documents) > 0 {
			t.Errorf("a converter returned documents with an error")
		}
		return Outcome{Errors: convert.AsErrors(err).Lines()}
	}
	Validate(t, result)
	output, err := convert.RenderStream(result.Documents)
	if err != nil {
		t.Fatal(err)
	}
	return Outcome{Output: output, Warnings: result.Warnings}
}

// crdValidator is built once per test binary: it compiles the CRDs' schemas and CEL rules.
var crdValidator = sync.OnceValues(validation.New)

// Validate checks a result as the command prints it, independently of the converters' own
// check (convert.Result.Validate): the YAML stream must read back, and every Kubernetes object
// in it must have no field its CRD does not define and pass the CRD's validation (schema and
// CEL rules) as the API server would on create.
func Validate(t testing.TB, result *convert.Result) {
	t.Helper()
	v, err := crdValidator()
	if err != nil {
		t.Fatal(err)
	}
	stream, err := convert.RenderStream(result.Documents)
	if err != nil {
		t.Fatalf("rendering the output: %v", err)
	}
	if len(stream) == 0 {
		return
	}
	printed, err := convert.ReadSources("output", bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("the output does not read back: %v\n%s", err, stream)
	}
	for _, src := range printed {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal(src.JSON, &u.Object); err != nil {
			t.Fatal(err)
		}
		unknown, err := v.UnknownFields(u)
		if errors.Is(err, validation.ErrUnsupportedKind) {
			continue // Helm values, a CloudFormation template
		}
		if err != nil {
			t.Errorf("%s: %v", src.Object(), err)
			continue
		}
		if len(unknown) > 0 {
			t.Errorf("%s has fields its CRD does not define: %s", src.Object(), strings.Join(unknown, ", "))
		}
		if err := v.ValidateObject(u); err != nil {
			t.Errorf("%s is refused by its CRD: %v\n%s", src.Object(), err, stream)
		}
	}
}

// Check compares the outcome with the case's golden files, or rewrites them with -update.
func Check(t *testing.T, c Case, got Outcome) {
	t.Helper()
	compare(t, c, "output.yaml", got.Output)
	compare(t, c, "errors.txt", lines(got.Errors))
	compare(t, c, "warnings.txt", lines(got.Warnings))
}

func lines(list []string) []byte {
	if len(list) == 0 {
		return nil
	}
	return []byte(strings.Join(list, "\n") + "\n")
}

// compare checks one golden file; an empty want means the file must not exist.
func compare(t *testing.T, c Case, name string, got []byte) {
	t.Helper()
	path := c.Path(name)
	if *update {
		if len(got) == 0 {
			if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("%s differs (rerun with -update to accept)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// PoolAndClass returns the last NodePool and EC2NodeClass among a result's objects, failing
// the test when either is missing.
func PoolAndClass(t testing.TB, result *convert.Result) (*karpv1.NodePool, *awsv1.EC2NodeClass) {
	t.Helper()
	var pool *karpv1.NodePool
	var class *awsv1.EC2NodeClass
	for _, obj := range result.Objects() {
		switch o := obj.(type) {
		case *karpv1.NodePool:
			pool = o
		case *awsv1.EC2NodeClass:
			class = o
		}
	}
	if pool == nil || class == nil {
		t.Fatalf("want a NodePool and an EC2NodeClass, got %v", result.Objects())
	}
	return pool, class
}

// Unstructured renders a document as the command prints it and reads it back as an
// unstructured object; it returns the object and the rendering.
func Unstructured(t testing.TB, doc convert.Document) (*unstructured.Unstructured, []byte) {
	t.Helper()
	u, err := doc.Unstructured()
	if err != nil {
		t.Fatal(err)
	}
	data, err := convert.Render(doc)
	if err != nil {
		t.Fatal(err)
	}
	return u, data
}

// FuzzFile is the name fuzz tests give their input, which every error must name.
const FuzzFile = "fuzz.yaml"

// CheckFuzzed runs one fuzzed input through the reader and a converter and checks what may
// not happen whatever the input: a panic (the test fails with it), an error that does not name
// the input file (only "no … in the input" is about the input as a whole), documents returned
// with an error, or an accepted output that does not pass Validate.
func CheckFuzzed(t *testing.T, data []byte, convertFn func([]convert.Source) (*convert.Result, error)) {
	t.Helper()
	sources, err := convert.ReadSources(FuzzFile, bytes.NewReader(data))
	if err != nil {
		checkNamesTheFile(t, err)
		return
	}
	result, err := convertFn(sources)
	if err != nil {
		if result != nil && len(result.Documents) > 0 {
			t.Errorf("documents returned with an error")
		}
		checkNamesTheFile(t, err)
		return
	}
	Validate(t, result)
}

// checkNamesTheFile fails for every problem of err that names neither the fuzzed file nor
// the input as a whole.
func checkNamesTheFile(t *testing.T, err error) {
	t.Helper()
	for _, line := range convert.AsErrors(err).Lines() {
		if !strings.HasPrefix(line, FuzzFile+":") && !strings.HasPrefix(line, "no ") {
			t.Errorf("an error that does not start with the file name: %s", line)
		}
	}
}
