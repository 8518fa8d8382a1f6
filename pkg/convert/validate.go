package convert

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/cloudprovider"
	"github.com/openkarpenter/karpenter/pkg/featuregate"
	"github.com/openkarpenter/karpenter/pkg/validation"
)

// Origin ties a part of an output object to the input field it was made from, so that a value
// the CRDs refuse is reported where the user wrote it.
type Origin struct {
	// Output is a field path of the output object, such as spec.template.spec.requirements[2]; it
	// covers the fields below it too.
	Output string
	// Source is the input document, and Input the field path in it that Output was made from,
	// such as spec.requirements[1]. A field below Output maps to the same field below Input.
	// A zero Source means Input names an option (such as --role) rather than a field.
	Source Source
	Input  string
	// Parsed means Input is one value (such as a kOps taint "key=value:Effect") that the whole
	// of Output was parsed or built from: a field below Output maps to Input itself.
	Parsed bool
}

// Trace records that the field output of the document's object was made from the field input
// of src, field by field below them (see Origin).
func (d *Document) Trace(output string, src Source, input string) {
	d.Origins = append(d.Origins, Origin{Output: output, Source: src, Input: input})
}

// TraceParsed records that the field output of the document's object was parsed or built from
// the one value at input of src (see Origin.Parsed).
func (d *Document) TraceParsed(output string, src Source, input string) {
	d.Origins = append(d.Origins, Origin{Output: output, Source: src, Input: input, Parsed: true})
}

// crdValidator is built once: it compiles the CRDs' schemas and CEL rules.
var crdValidator = sync.OnceValues(validation.New)

// Validate checks every Kubernetes object among the documents as the command writes it: read
// back from its YAML, each must pass its CRD's schema and CEL rules as the API server checks a
// create (pkg/validation), with no field the CRD does not define, an EC2NodeClass's kubelet
// configuration must be one the controller takes (cloudprovider.ValidateKubelet), and no two
// objects may have the same kind and name. Every problem is returned, as Errors; each names the input field the
// refused value was made from (with its file and line) when the converter traced it (see
// Origin), else the input object, and says what the CRD accepts.
func (r *Result) Validate() error {
	v, err := crdValidator()
	if err != nil {
		return fmt.Errorf("loading the project's CRDs: %w", err)
	}
	var problems []problem
	written := map[string]*Document{}
	for i := range r.Documents {
		doc := &r.Documents[i]
		if _, ok := doc.Content.(runtime.Object); !ok {
			continue
		}
		u, err := doc.Unstructured()
		if err != nil {
			problems = append(problems, problem{err: err})
			continue
		}
		key := u.GetAPIVersion() + " " + u.GetKind() + " " + u.GetName()
		if first, ok := written[key]; ok {
			problems = append(problems, doc.problem(u, "metadata.name", fmt.Sprintf("Duplicate value: %q: %s also writes a %s of that name; rename one", u.GetName(), first.describeFrom(), u.GetKind())))
			continue
		}
		written[key] = doc
		unknown, err := v.UnknownFields(u)
		if err != nil {
			problems = append(problems, problem{err: fmt.Errorf("%s %q: %w", u.GetKind(), u.GetName(), err)})
			continue
		}
		for _, path := range unknown {
			problems = append(problems, doc.problem(u, path, "field not declared in schema"))
		}
		err = v.ValidateObjectForUser(u)
		var status apierrors.APIStatus
		switch {
		case err == nil:
		case errors.As(err, &status) && status.Status().Details != nil && len(status.Status().Details.Causes) > 0:
			for _, cause := range status.Status().Details.Causes {
				problems = append(problems, doc.problem(u, cause.Field, cause.Message))
			}
		default:
			problems = append(problems, problem{err: fmt.Errorf("%s %q: %w", u.GetKind(), u.GetName(), err)})
		}
		problems = append(problems, doc.kubeletProblems(u)...)
	}
	return sortedErrors(problems)
}

// kubeletProblems are the reasons the controller would refuse the kubelet configuration of an
// EC2NodeClass u (cloudprovider.ValidateKubelet): the API server takes any, as Karpenter v1.15's
// does, so the schema does not catch them, and the EC2NodeClass would never be Ready.
func (d *Document) kubeletProblems(u *unstructured.Unstructured) []problem {
	if u.GetKind() != "EC2NodeClass" {
		return nil
	}
	nc := &awsv1.EC2NodeClass{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, nc); err != nil {
		return nil // the schema's check above reports what does not decode
	}
	// The converted objects are checked as a controller at the AWS gates' defaults takes them
	// (NodeClassCEL off: the converters write no CEL expressions).
	reason, err := cloudprovider.ValidateKubelet(nc, featuregate.AWS.Defaults().Enabled(featuregate.NodeClassCEL))
	if err == nil {
		return nil
	}
	causes := []error{err}
	var each interface{ Unwrap() []error }
	if errors.As(err, &each) {
		causes = each.Unwrap()
	}
	var out []problem
	for _, cause := range causes {
		field, detail := "spec.kubelet", cause.Error()
		var ke *awsv1.KubeletError
		if errors.As(cause, &ke) {
			field, detail = ke.Field, ke.Detail
		}
		out = append(out, d.problem(u, field, fmt.Sprintf("%s (%s, by the EC2NodeClass controller)", detail, reason)))
	}
	return out
}

// problem is one refused value, with where in the input it is (file and line, when known)
// and what it is (the input field and message), to sort and de-duplicate by.
type problem struct {
	err  error
	file string
	line int
	what string
}

// sortedErrors orders the problems by file and line (those placed nowhere last) and drops
// repeats: one input value made into several objects is reported once.
func sortedErrors(problems []problem) error {
	sort.SliceStable(problems, func(i, j int) bool {
		a, b := problems[i], problems[j]
		if (a.file == "") != (b.file == "") {
			return a.file != ""
		}
		if a.file != b.file {
			return a.file < b.file
		}
		return a.line < b.line
	})
	var errs Errors
	seen := map[string]bool{}
	for _, p := range problems {
		if p.what != "" {
			if seen[p.what] {
				continue
			}
			seen[p.what] = true
		}
		errs = append(errs, p.err)
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// Unstructured renders the document as the command writes it and reads it back.
func (d *Document) Unstructured() (*unstructured.Unstructured, error) {
	data, err := Render(*d)
	if err != nil {
		return nil, err
	}
	raw, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("reading back %s: %w", d.File, err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("reading back %s: %w", d.File, err)
	}
	return u, nil
}

// problem reports a refused field of the document's object u at the input field it was made
// from: the traced origin that covers the most of the path, else the document's input object.
func (d *Document) problem(u *unstructured.Unstructured, path, message string) problem {
	// The schema's messages repeat the path ("spec.weight in body should be ..."): it is the
	// output's, which the message names otherwise.
	message = strings.ReplaceAll(message, path+" in body ", "")
	output := fmt.Sprintf("%s %q", u.GetKind(), u.GetName())
	var best *Origin
	for i := range d.Origins {
		o := &d.Origins[i]
		if covers(o.Output, path) && (best == nil || len(o.Output) > len(best.Output)) {
			best = o
		}
	}
	switch {
	case best != nil && best.Source.File == "":
		return problem{
			err:  fmt.Errorf("%s: %s (the %s written from it would be refused at %s)", best.Input, message, output, path),
			what: best.Input + ": " + message,
		}
	case best != nil:
		src, input := best.Source, best.Input
		if !best.Parsed {
			input = strings.TrimPrefix(input+strings.TrimPrefix(path, best.Output), ".")
		}
		return problem{
			err: fmt.Errorf("%s: %s: %s: %s (the %s written from it would be refused at %s)",
				src.At(input), src.Object(), input, message, output, path),
			file: src.File, line: src.nearestLine(input),
			what: fmt.Sprintf("%s %d %d %s: %s", src.File, src.Document, src.Item, input, message),
		}
	case d.From != nil:
		return problem{
			err:  fmt.Errorf("%s: %s: the %s written from it would be refused: %s: %s", d.From.At(""), d.From.Object(), output, path, message),
			file: d.From.File, line: d.From.nearestLine(""),
		}
	}
	return problem{err: fmt.Errorf("%s would be refused: %s: %s", output, path, message)}
}

// describeFrom names the input the document was made from, for messages.
func (d *Document) describeFrom() string {
	if d.From == nil {
		return "another output"
	}
	return fmt.Sprintf("%s (%s)", d.From.Object(), d.From)
}

// covers reports whether the field path prefix is path or one of its parents.
func covers(prefix, path string) bool {
	if prefix == "" {
		return true
	}
	if !strings.HasPrefix(path, prefix) {
		return false
	}
	rest := path[len(prefix):]
	return rest == "" || rest[0] == '.' || rest[0] == '['
}
