package validation_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
	"github.com/openkarpenter/karpenter/pkg/validation"
)

var (
	env       *apiserver.Env
	validator *validation.Validator
	// built is how long New took, logged by TestNew.
	built time.Duration
)

func TestMain(m *testing.M) {
	start := time.Now()
	v, err := validation.New()
	built = time.Since(start)
	if err != nil {
		fmt.Fprintf(os.Stderr, "validation.New: %v\n", err)
		os.Exit(1)
	}
	validator = v
	os.Exit(apiserver.Main(m, &env))
}

// --- objects ---

func fromYAML(t testing.TB, src string) map[string]any {
	t.Helper()
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(src), &out); err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	return out
}

// mergePatch applies a JSON merge patch (null deletes) to dst, as pkg/apis' tests do.
func mergePatch(dst, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergePatch(dm, pm)
				continue
			}
		}
		dst[k] = v
	}
}

// patched returns base with the YAML patch merged over it.
func patched(t testing.TB, base, patch string) *unstructured.Unstructured {
	t.Helper()
	obj := fromYAML(t, base)
	mergePatch(obj, fromYAML(t, patch))
	return &unstructured.Unstructured{Object: obj}
}

// manifests reads every YAML document of the valid testdata of pkg/apis.
func manifests(t testing.TB) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob("../apis/testdata/valid/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no valid manifests (%v)", err)
	}
	var out []*unstructured.Unstructured
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			chunk, err := reader.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			obj := fromYAML(t, string(chunk))
			if len(obj) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			u.SetAnnotations(mergeMaps(u.GetAnnotations(), map[string]string{"test/source": filepath.Base(file)}))
			out = append(out, u)
		}
	}
	return out
}

func mergeMaps(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func describe(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s (%s)", u.GetKind(), u.GetName(), u.GetAnnotations()["test/source"])
}

// normalized returns v as it reads back from JSON, so that values from YAML (float64) and from
// the server (int64) compare.
func normalized(t testing.TB, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func asJSON(v any) string {
	data, _ := json.MarshalIndent(v, "", "  ")
	return string(data)
}

// --- the two verdicts ---

// serverCreate creates u on the API server in dry-run mode (nothing is stored) and returns what
// the server would have stored.
func serverCreate(u *unstructured.Unstructured, opts ...client.CreateOption) (*unstructured.Unstructured, error) {
	out := u.DeepCopy()
	err := env.Client.Create(context.Background(), out, append([]client.CreateOption{client.DryRunAll}, opts...)...)
	return out, err
}

// causes lists an Invalid error's causes as sorted "type field: message" lines.
func causes(t testing.TB, err error) []string {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.Status().Details == nil {
		t.Fatalf("want an Invalid error with causes, got %v", err)
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		out = append(out, fmt.Sprintf("%s %s: %s", c.Type, c.Field, c.Message))
	}
	sort.Strings(out)
	return out
}

// offlineError is the error the server builds from a list of field errors.
func offlineError(u *unstructured.Unstructured, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(schema.GroupKind{Group: u.GroupVersionKind().Group, Kind: u.GetKind()}, u.GetName(), errs)
}

// requireAgree fails unless the server and the offline validator both accept, or both refuse
// with the same causes (field, type and message).
func requireAgree(t *testing.T, serverErr error, offline field.ErrorList, u *unstructured.Unstructured) {
	t.Helper()
	switch {
	case serverErr == nil && len(offline) == 0:
		return
	case serverErr == nil:
		t.Fatalf("the server accepts it, offline refuses it: %v", offline.ToAggregate())
	case len(offline) == 0:
		t.Fatalf("offline accepts it, the server refuses it: %v", serverErr)
	}
	want, got := causes(t, serverErr), causes(t, offlineError(u, offline))
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("causes differ\nserver:\n  %s\noffline:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
	}
}

// --- tests ---

func TestNew(t *testing.T) {
	t.Logf("New built %d kinds in %v", len(validator.Kinds()), built)
	want := []schema.GroupVersionKind{
		{Group: "karpenter.k8s.aws", Version: "v1alpha1", Kind: "AWSNodeTemplate"},
		{Group: "autoscaling.x-k8s.io", Version: "v1beta1", Kind: "CapacityBuffer"},
		{Group: "karpenter.k8s.aws", Version: "v1", Kind: "EC2NodeClass"},
		{Group: "karpenter.sh", Version: "v1", Kind: "NodeClaim"},
		{Group: "karpenter.sh", Version: "v1alpha1", Kind: "NodeOverlay"},
		{Group: "karpenter.sh", Version: "v1", Kind: "NodePool"},
		{Group: "karpenter.sh", Version: "v1alpha5", Kind: "Provisioner"},
	}
	got := validator.Kinds()
	sort.Slice(got, func(i, j int) bool { return got[i].Kind < got[j].Kind })
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Kinds() = %v, want %v", got, want)
	}
}

// TestValidManifests: every valid manifest of pkg/apis validates offline, as on the server, has
// no unknown field, and gets the same defaults offline as from the server.
func TestValidManifests(t *testing.T) {
	for _, u := range manifests(t) {
		t.Run(describe(u), func(t *testing.T) {
			if errs := validator.Validate(u); len(errs) > 0 {
				t.Fatalf("refused offline: %v", errs.ToAggregate())
			}
			stored, err := serverCreate(u)
			if err != nil {
				t.Fatalf("refused by the server: %v", err)
			}
			if unknown, err := validator.UnknownFields(u); err != nil || len(unknown) > 0 {
				t.Fatalf("unknown fields %v (%v)", unknown, err)
			}
			defaulted := u.DeepCopy()
			validator.Default(defaulted)
			if want, got := normalized(t, stored.Object["spec"]), normalized(t, defaulted.Object["spec"]); !reflect.DeepEqual(want, got) {
				t.Fatalf("defaults differ\nserver:  %s\noffline: %s", asJSON(want), asJSON(got))
			}
		})
	}
}

// TestAPIsInvalids: the base objects of pkg/apis' tests are valid, and each of its invalid
// objects is refused offline naming its field and message, with the server's very causes.
func TestAPIsInvalids(t *testing.T) {
	cases := loadAPIsCases(t)
	for kind, base := range cases.bases {
		u := patched(t, base, "{}")
		_, err := serverCreate(u)
		requireAgree(t, err, validator.Validate(u), u)
		if err != nil {
			t.Fatalf("base %s refused: %v", kind, err)
		}
	}
	for _, tc := range cases.invalids {
		t.Run(tc.name, func(t *testing.T) {
			u := patched(t, cases.bases[tc.kind], tc.patch)
			offline := validator.Validate(u)
			if len(offline) == 0 {
				t.Fatalf("accepted offline: %s", tc.patch)
			}
			msg := offline.ToAggregate().Error()
			if !strings.Contains(msg, tc.field+":") || !strings.Contains(msg, tc.message) {
				t.Errorf("offline error does not name %s with %q: %s", tc.field, tc.message, msg)
			}
			_, err := serverCreate(u)
			requireAgree(t, err, offline, u)
		})
	}
}

// TestMoreCases: ObjectMeta, several errors at once (CEL skipped after a blocking error),
// types, nulls, unknown fields, status on create, the scale subresource and the legacy kinds.
func TestMoreCases(t *testing.T) {
	bases := loadAPIsCases(t).bases
	provisioner := `{apiVersion: karpenter.sh/v1alpha5, kind: Provisioner, metadata: {name: legacy}, spec: {providerRef: {name: default}}}`
	template := `{apiVersion: karpenter.k8s.aws/v1alpha1, kind: AWSNodeTemplate, metadata: {name: legacy}, spec: {subnetSelector: {a: b}, securityGroupSelector: {a: b}}}`
	manyRequirements := func() string {
		var reqs []string
		for i := 0; i < 100; i++ {
			reqs = append(reqs, fmt.Sprintf(`{key: example.com/key-%d, operator: In, values: [a, b, c, d, e, f, g, h]}`, i))
		}
		return `{spec: {template: {spec: {requirements: [` + strings.Join(reqs, ", ") + `]}}}}`
	}
	cases := []struct {
		name, base, patch string
		valid             bool
	}{
		{"no name", bases["NodePool"], `{metadata: {name: null}}`, false},
		{"name not a DNS subdomain", bases["NodePool"], `{metadata: {name: Bad_Name}}`, false},
		{"name too long", bases["NodePool"], `{metadata: {name: ` + strings.Repeat("a", 254) + `}}`, false},
		{"generateName", bases["NodePool"], `{metadata: {name: null, generateName: pool-}}`, true},
		{"namespace on a cluster-scoped object", bases["EC2NodeClass"], `{metadata: {namespace: default}}`, true},
		{"bad metadata label", bases["NodeClaim"], `{metadata: {labels: {"bad key!": a}}}`, false},
		{"bad finalizer", bases["NodePool"], `{metadata: {finalizers: ["bad finalizer!"]}}`, false},
		{"several errors, CEL skipped", bases["NodePool"], `{spec: {weight: 0, template: {spec: {requirements: [{key: a, operator: Like, values: [b]}]}}}}`, false},
		{"several errors with CEL", bases["NodePool"], `{spec: {weight: 0, template: {metadata: {labels: {karpenter.sh/team: a}}}, disruption: {budgets: [{nodes: "0", schedule: "@daily"}]}}}`, false},
		{"wrong type", bases["NodePool"], `{spec: {weight: high}}`, false},
		{"replicas a string", bases["NodePool"], `{spec: {replicas: two}}`, false},
		{"static NodePool", bases["NodePool"], `{spec: {replicas: 3, limits: {nodes: "5"}}}`, true},
		{"nulls dropped or defaulted", bases["NodePool"], `{spec: {weight: null, disruption: null, template: {spec: {expireAfter: null}}}}`, true},
		{"unknown fields pruned", bases["NodePool"], `{spec: {foo: 1, template: {spec: {nodeClassRef: {extra: x}}}}}`, true},
		{"status ignored on create", bases["NodeClaim"], `{status: {nodeName: 5, conditions: [{type: 1}]}}`, true},
		{"100 requirements", bases["NodePool"], manyRequirements(), true},
		{"101 requirements", bases["NodePool"], strings.Replace(manyRequirements(), "]}}}}", ", {key: x, operator: Exists}]}}}}", 1), false},
		{"EC2NodeClass hop limit", bases["EC2NodeClass"], `{spec: {metadataOptions: {httpPutResponseHopLimit: 65}}}`, false},
		{"Provisioner", provisioner, `{}`, true},
		{"Provisioner invalid", provisioner, `{spec: {weight: 0, ttlSecondsAfterEmpty: -1, requirements: [{key: a, operator: Like}]}}`, false},
		{"AWSNodeTemplate", template, `{}`, true},
		{"AWSNodeTemplate invalid", template, `{spec: {metadataOptions: {httpTokens: maybe, httpPutResponseHopLimit: 0}}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := patched(t, tc.base, tc.patch)
			offline := validator.Validate(u)
			if valid := len(offline) == 0; valid != tc.valid {
				t.Errorf("offline valid = %v, want %v: %v", valid, tc.valid, offline.ToAggregate())
			}
			_, err := serverCreate(u)
			requireAgree(t, err, offline, u)
			if err != nil {
				t.Logf("both refuse it: %v", err)
			}
		})
	}
}

// TestNumbersFromGo: objects built in Go with int, int32 and []string validate like their JSON.
func TestNumbersFromGo(t *testing.T) {
	base := loadAPIsCases(t).bases["NodePool"]
	static := patched(t, base, "{}")
	spec := static.Object["spec"].(map[string]any)
	spec["replicas"] = int32(2)
	spec["limits"] = map[string]string{"nodes": "4"}
	spec["template"].(map[string]any)["spec"].(map[string]any)["requirements"] = []any{
		map[string]any{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": []string{"4"}},
	}
	if errs := validator.Validate(static); len(errs) > 0 {
		t.Fatalf("static NodePool refused: %v", errs.ToAggregate())
	}
	u := patched(t, base, "{}")
	spec = u.Object["spec"].(map[string]any)
	spec["weight"] = 10
	if errs := validator.Validate(u); len(errs) > 0 {
		t.Fatalf("int weight refused: %v", errs.ToAggregate())
	}
	spec["weight"] = 1.5
	if errs := validator.Validate(u); len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.weight: Invalid value: \"number\": spec.weight in body must be of type integer") {
		t.Fatalf("a fractional weight: %v", errs.ToAggregate())
	}
}

// TestUpdates: the forbidden transitions of pkg/apis' tests and a few allowed ones, offline and
// on the server, from the object the server stored.
func TestUpdates(t *testing.T) {
	ctx := context.Background()
	cases := loadAPIsCases(t)
	type update struct{ name, kind, create, update, message string }
	var all []update
	for _, tc := range cases.updates {
		all = append(all, update(tc))
	}
	all = append(all,
		update{"weight changed", "NodePool", `{}`, `{spec: {weight: 50}}`, ""},
		update{"static replicas changed", "NodePool", `{spec: {replicas: 3}}`, `{spec: {replicas: 5}}`, ""},
		update{"nodeClassRef name changed", "NodePool", `{}`, `{spec: {template: {spec: {nodeClassRef: {name: other}}}}}`, ""},
		update{"labels added", "NodeClaim", `{}`, `{metadata: {labels: {team: a}}}`, ""},
		update{"status not updatable here", "EC2NodeClass", `{}`, `{status: {amis: 5}}`, ""},
		update{"invalid update of an allowed field", "NodePool", `{}`, `{spec: {weight: 101}}`, "should be less than or equal to 100"},
		update{"invalid label added", "NodePool", `{}`, `{metadata: {labels: {"bad key!": a}}}`, "name part must consist of alphanumeric characters"},
		update{"namespace set", "NodeClaim", `{}`, `{metadata: {namespace: default}}`, ""},
	)
	for i, tc := range all {
		t.Run(tc.name, func(t *testing.T) {
			u := patched(t, cases.bases[tc.kind], tc.create)
			u.SetName(fmt.Sprintf("validation-update-%d", i))
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
			old := u.DeepCopy()
			updated := u.DeepCopy()
			mergePatch(updated.Object, fromYAML(t, tc.update))
			offline := validator.ValidateUpdate(updated, old)
			if tc.message == "" && len(offline) > 0 {
				t.Errorf("refused offline: %v", offline.ToAggregate())
			}
			if tc.message != "" && (len(offline) == 0 || !strings.Contains(offline.ToAggregate().Error(), tc.message)) {
				t.Errorf("offline error does not say %q: %v", tc.message, offline.ToAggregate())
			}
			err := env.Client.Update(ctx, updated.DeepCopy(), client.DryRunAll)
			requireAgree(t, err, offline, updated)
		})
	}
}

// TestRatcheting: on update, errors in fields left as they were are not reported, as on a server
// whose CRD became stricter after the object was stored.
func TestRatcheting(t *testing.T) {
	old := patched(t, loadAPIsCases(t).bases["NodePool"], `{spec: {weight: 101}}`)
	if errs := validator.Validate(old); len(errs) == 0 {
		t.Fatal("weight 101 accepted on create")
	}
	labelled := old.DeepCopy()
	labelled.SetLabels(map[string]string{"team": "a"})
	if errs := validator.ValidateUpdate(labelled, old); len(errs) > 0 {
		t.Fatalf("an unchanged invalid weight is reported: %v", errs.ToAggregate())
	}
	changed := old.DeepCopy()
	changed.Object["spec"].(map[string]any)["weight"] = int64(102)
	if errs := validator.ValidateUpdate(changed, old); len(errs) == 0 {
		t.Fatal("a changed invalid weight is accepted")
	}
}

// TestDefaults: a minimal NodePool and EC2NodeClass get the server's defaults, unstructured and
// typed.
func TestDefaults(t *testing.T) {
	ctx := context.Background()
	nodePool := patched(t, `{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: defaults},
	  spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}}}}`, "{}")
	nodeClass := patched(t, `{apiVersion: karpenter.k8s.aws/v1, kind: EC2NodeClass, metadata: {name: defaults},
	  spec: {role: KarpenterNodeRole, amiSelectorTerms: [{alias: al2023@latest}], subnetSelectorTerms: [{id: subnet-1}], securityGroupSelectorTerms: [{id: sg-1}]}}`, "{}")
	for _, u := range []*unstructured.Unstructured{nodePool, nodeClass} {
		stored, err := serverCreate(u)
		if err != nil {
			t.Fatal(err)
		}
		defaulted := u.DeepCopy()
		validator.Default(defaulted)
		if want, got := normalized(t, stored.Object["spec"]), normalized(t, defaulted.Object["spec"]); !reflect.DeepEqual(want, got) {
			t.Errorf("%s defaults differ\nserver:  %s\noffline: %s", u.GetKind(), asJSON(want), asJSON(got))
		}
	}

	disruption := map[string]any{"consolidateAfter": "0s", "consolidationPolicy": "WhenEmptyOrUnderutilized", "budgets": []any{map[string]any{"nodes": "10%"}}}
	defaulted := nodePool.DeepCopy()
	validator.Default(defaulted)
	if got := defaulted.Object["spec"].(map[string]any)["disruption"]; !reflect.DeepEqual(got, disruption) {
		t.Errorf("disruption = %v, want %v", got, disruption)
	}
	if got, _, _ := unstructured.NestedString(defaulted.Object, "spec", "template", "spec", "expireAfter"); got != "720h" {
		t.Errorf("expireAfter = %q, want 720h", got)
	}
	metadataOptions := map[string]any{"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled", "httpPutResponseHopLimit": int64(1), "httpTokens": "required"}
	defaulted = nodeClass.DeepCopy()
	validator.Default(defaulted)
	if got := normalized(t, defaulted.Object["spec"].(map[string]any)["metadataOptions"]); !reflect.DeepEqual(got, normalized(t, metadataOptions)) {
		t.Errorf("metadataOptions = %v, want %v", got, metadataOptions)
	}

	// Typed: DefaultObject fills the Go fields as a create through the typed client does.
	typed := &karpv1.NodePool{}
	typed.Name = "defaults-typed"
	typed.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	fromServer := typed.DeepCopy()
	if err := env.Client.Create(ctx, fromServer, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if err := validator.DefaultObject(typed); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(typed.Spec, fromServer.Spec) {
		t.Errorf("typed defaults differ\nserver:  %s\noffline: %s", asJSON(fromServer.Spec), asJSON(typed.Spec))
	}
	if !typed.GetObjectKind().GroupVersionKind().Empty() {
		t.Errorf("DefaultObject set the TypeMeta: %v", typed.GetObjectKind().GroupVersionKind())
	}
}

// TestUnknownFields: the fields the server reports with fieldValidation=Strict.
func TestUnknownFields(t *testing.T) {
	u := patched(t, loadAPIsCases(t).bases["NodePool"], `{metadata: {bogus: 1}, spec: {foo: 1,
	  template: {metadata: {colour: red}, spec: {nodeClassRef: {extra: x}, requirements: [{key: a, operator: In, values: [b], bogus: true}]}}}}`)
	unknown, err := validator.UnknownFields(u)
	if err != nil {
		t.Fatal(err)
	}
	_, serverErr := serverCreate(u, client.FieldValidation("Strict"))
	if serverErr == nil {
		t.Fatal("the server accepts unknown fields with fieldValidation=Strict")
	}
	var fromServer []string
	for _, m := range regexp.MustCompile(`unknown field "([^"]+)"`).FindAllStringSubmatch(serverErr.Error(), -1) {
		fromServer = append(fromServer, m[1])
	}
	sort.Strings(fromServer)
	if !reflect.DeepEqual(unknown, fromServer) {
		t.Fatalf("UnknownFields = %v, the server reports %v (%v)", unknown, fromServer, serverErr)
	}
	// By default the server drops them and accepts the object; so does Validate.
	_, serverErr = serverCreate(u)
	requireAgree(t, serverErr, validator.Validate(u), u)
}

// TestValidateObject: typed objects through ValidateObject and through the typed client agree,
// with the server's very error.
func TestValidateObject(t *testing.T) {
	cases := loadAPIsCases(t)
	var objs []*unstructured.Unstructured
	objs = append(objs, manifests(t)...)
	for _, tc := range cases.invalids {
		u := patched(t, cases.bases[tc.kind], tc.patch)
		u.SetAnnotations(map[string]string{"test/source": tc.name})
		objs = append(objs, u)
	}
	for _, u := range objs {
		t.Run(describe(u), func(t *testing.T) {
			newTyped := func() client.Object {
				obj, err := env.Scheme.New(u.GroupVersionKind())
				if err != nil {
					t.Fatal(err)
				}
				return obj.(client.Object)
			}
			typed := newTyped()
			data, _ := json.Marshal(u.Object)
			if err := json.Unmarshal(data, typed); err != nil {
				t.Skipf("the Go types do not read it: %v", err)
			}
			typed.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{}) // as typed code builds them
			offline := validator.ValidateObject(typed)
			sent := newTyped()
			_ = json.Unmarshal(data, sent)
			serverErr := env.Client.Create(context.Background(), sent, client.DryRunAll)
			switch {
			case offline == nil && serverErr == nil:
			case offline == nil || serverErr == nil:
				t.Fatalf("offline: %v\nserver: %v", offline, serverErr)
			case len(causes(t, serverErr)) == 1:
				if offline.Error() != serverErr.Error() {
					t.Fatalf("errors differ\nserver:  %v\noffline: %v", serverErr, offline)
				}
			default:
				if want, got := causes(t, serverErr), causes(t, offline); !reflect.DeepEqual(want, got) {
					t.Fatalf("causes differ\nserver:\n  %s\noffline:\n  %s", strings.Join(want, "\n  "), strings.Join(got, "\n  "))
				}
			}
		})
	}
}

// TestUnsupportedKinds: objects of kinds no CRD defines are refused, naming the kind.
func TestUnsupportedKinds(t *testing.T) {
	err := validator.ValidateObject(&corev1.Pod{})
	if !errors.Is(err, validation.ErrUnsupportedKind) || !strings.Contains(err.Error(), "Pod (v1)") {
		t.Errorf("Pod: %v", err)
	}
	if err := validator.ValidateObject(nil); !errors.Is(err, validation.ErrUnsupportedKind) {
		t.Errorf("nil: %v", err)
	}
	old := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "karpenter.sh/v1beta1", "kind": "NodePool", "metadata": map[string]any{"name": "a"}}}
	err = validator.ValidateObject(old)
	if !errors.Is(err, validation.ErrUnsupportedKind) || !strings.Contains(err.Error(), "NodePool (karpenter.sh/v1beta1)") {
		t.Errorf("v1beta1 NodePool: %v", err)
	}
	if errs := validator.Validate(old); len(errs) != 1 || errs[0].Error() != `apiVersion: Unsupported value: "karpenter.sh/v1beta1": supported values: "karpenter.sh/v1"` {
		t.Errorf("v1beta1 NodePool: %v", errs)
	}
	other := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"}}
	if errs := validator.Validate(other); len(errs) != 1 || !strings.Contains(errs[0].Error(), "Deployment (apps/v1)") {
		t.Errorf("Deployment: %v", errs)
	}
	if _, err := validator.UnknownFields(other); !errors.Is(err, validation.ErrUnsupportedKind) || err.Error() != "kind not defined by the project's CRDs: Deployment (apps/v1)" {
		t.Errorf("UnknownFields(Deployment): %v", err)
	}
	if err := validator.DefaultObject(&corev1.ConfigMap{}); !errors.Is(err, validation.ErrUnsupportedKind) {
		t.Errorf("DefaultObject(ConfigMap): %v", err)
	}
	// Default leaves other kinds alone.
	before := other.DeepCopy()
	validator.Default(other)
	if !reflect.DeepEqual(before, other) {
		t.Errorf("Default changed a Deployment: %v", other)
	}
}

// TestNotModified: Validate, ValidateUpdate, UnknownFields and ValidateObject leave their
// arguments alone.
func TestNotModified(t *testing.T) {
	u := patched(t, loadAPIsCases(t).bases["NodePool"], `{spec: {foo: 1, weight: 0}, status: {nodes: 1}}`)
	before := u.DeepCopy()
	validator.Validate(u)
	validator.ValidateUpdate(u, before.DeepCopy())
	_, _ = validator.UnknownFields(u)
	_ = validator.ValidateObject(u)
	if !reflect.DeepEqual(before, u) {
		t.Fatalf("modified:\n%s\nwas:\n%s", asJSON(u.Object), asJSON(before.Object))
	}
}

// TestConcurrent: one Validator serves many goroutines (run with -race).
func TestConcurrent(t *testing.T) {
	objs := manifests(t)
	invalid := patched(t, loadAPIsCases(t).bases["NodePool"], `{spec: {weight: 0}}`)
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			for i := 0; i < 20; i++ {
				for _, u := range objs {
					if errs := validator.Validate(u); len(errs) > 0 {
						done <- errs.ToAggregate()
						return
					}
				}
				if errs := validator.Validate(invalid); len(errs) != 1 {
					done <- fmt.Errorf("weight 0: %v", errs)
					return
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// --- benchmarks ---

func benchObject(b *testing.B, kind string) *unstructured.Unstructured {
	b.Helper()
	for _, u := range manifests(b) {
		if u.GetKind() == kind && strings.HasPrefix(u.GetAnnotations()["test/source"], "docs-") {
			return u
		}
	}
	b.Fatalf("no docs %s manifest", kind)
	return nil
}

// BenchmarkValidateNodePool validates the documentation's full NodePool (every field set).
func BenchmarkValidateNodePool(b *testing.B) {
	u := benchObject(b, "NodePool")
	b.ReportAllocs()
	for b.Loop() {
		if errs := validator.Validate(u); len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
	}
}

// BenchmarkValidateEC2NodeClass validates the documentation's full EC2NodeClass.
func BenchmarkValidateEC2NodeClass(b *testing.B) {
	u := benchObject(b, "EC2NodeClass")
	b.ReportAllocs()
	for b.Loop() {
		if errs := validator.Validate(u); len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
	}
}

// BenchmarkValidateObjectNodePool is BenchmarkValidateNodePool from a typed NodePool.
func BenchmarkValidateObjectNodePool(b *testing.B) {
	u := benchObject(b, "NodePool")
	typed := &karpv1.NodePool{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := validator.ValidateObject(typed); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkValidateUpdateNodePool validates a change of weight of the full NodePool.
func BenchmarkValidateUpdateNodePool(b *testing.B) {
	old := benchObject(b, "NodePool")
	updated := old.DeepCopy()
	updated.Object["spec"].(map[string]any)["weight"] = int64(42)
	b.ReportAllocs()
	for b.Loop() {
		if errs := validator.ValidateUpdate(updated, old); len(errs) > 0 {
			b.Fatal(errs.ToAggregate())
		}
	}
}

// BenchmarkNew builds the Validator: every schema converted and every CEL rule compiled.
func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := validation.New(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestValidateObjectForUser: the server's note that CEL rules were skipped, which names no
// field, is left out of what users are shown; the field errors stay, alone or listed.
func TestValidateObjectForUser(t *testing.T) {
	bases := loadAPIsCases(t).bases
	for _, tc := range []struct{ patch, want string }{
		{`{spec: {disruption: {consolidationPolicy: WhenUnderutilized}}}`,
			`NodePool.karpenter.sh "default" is invalid: spec.disruption.consolidationPolicy: Unsupported value: "WhenUnderutilized": supported values: "WhenEmpty", "WhenEmptyOrUnderutilized", "Balanced"`},
		{`{spec: {weight: 0, template: {spec: {requirements: [{key: a, operator: Like, values: [b]}]}}}}`,
			`NodePool.karpenter.sh "default" is invalid: [spec.template.spec.requirements[0].operator: Unsupported value: "Like": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte", spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1]`},
	} {
		u := patched(t, bases["NodePool"], tc.patch)
		u.SetName("default")
		if err := validator.ValidateObject(u); err == nil || !strings.Contains(err.Error(), "some validation rules were not checked") {
			t.Fatalf("ValidateObject, as the server: %v", err)
		}
		err := validator.ValidateObjectForUser(u)
		if err == nil || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
		if !apierrors.IsInvalid(err) {
			t.Errorf("not an Invalid error: %#v", err)
		}
	}
	if err := validator.ValidateObjectForUser(patched(t, bases["NodePool"], `{}`)); err != nil {
		t.Errorf("valid NodePool: %v", err)
	}
}
