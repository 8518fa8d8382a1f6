package simulate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// schemaPath is the documented schema of simulate's JSON output.
const schemaPath = "../../docs/simulate-output.schema.json"

// TestJSONMatchesSchema runs every example and checks its JSON report, and the comparison of
// getting-started.yaml with compare/on-demand-only.yaml, against
// docs/simulate-output.schema.json.
func TestJSONMatchesSchema(t *testing.T) {
	schema := loadSchema(t)
	examples, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(examples) < 5 {
		t.Fatalf("examples: %v %v", examples, err)
	}
	reports := map[string]*Report{}
	for _, path := range examples {
		t.Run(filepath.Base(path), func(t *testing.T) {
			rep := *sharedReport(t, path)
			rep.Version = "test"
			reports[filepath.Base(path)] = &rep
			var buf bytes.Buffer
			if err := WriteJSON(&buf, &rep); err != nil {
				t.Fatal(err)
			}
			if errs := schema.validate(decodeJSON(t, buf.Bytes())); len(errs) > 0 {
				t.Errorf("%s: the report does not match the schema:\n%s", path, strings.Join(errs[:min(len(errs), 20)], "\n"))
			}
		})
	}
	base := reports["getting-started.yaml"]
	if base == nil {
		t.Fatal("no report of examples/getting-started.yaml")
	}
	w, err := LoadWorkload("../../examples/getting-started.yaml")
	if err != nil {
		t.Fatal(err)
	}
	other, err := w.WithManifests("../../examples/compare/on-demand-only.yaml")
	if err != nil {
		t.Fatal(err)
	}
	otherRep, err := Run(context.Background(), other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, Compare("examples/getting-started.yaml", "examples/compare/on-demand-only.yaml", base, otherRep)); err != nil {
		t.Fatal(err)
	}
	if errs := schema.validate(decodeJSON(t, buf.Bytes())); len(errs) > 0 {
		t.Errorf("the comparison does not match the schema:\n%s", strings.Join(errs[:min(len(errs), 20)], "\n"))
	}
}

// TestSchemaValidatorRejects holds the validator to its job: output that breaks the schema
// in each way it checks is refused, and a schema keyword it does not check is refused too.
func TestSchemaValidatorRejects(t *testing.T) {
	schema := loadSchema(t)
	rep := run(t, small)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, rep); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	if errs := schema.validate(decodeJSON(t, good)); len(errs) > 0 {
		t.Fatalf("the small report does not match: %v", errs)
	}
	for name, mutate := range map[string]func(m map[string]any){
		"missing required":       func(m map[string]any) { delete(m, "nodeHistory") },
		"unknown property":       func(m map[string]any) { m["surprise"] = 1 },
		"wrong type":             func(m map[string]any) { m["seed"] = "three" },
		"negative count":         func(m map[string]any) { m["nodes"].(map[string]any)["launched"] = json.Number("-1") },
		"not an integer":         func(m map[string]any) { m["nodes"].(map[string]any)["launched"] = json.Number("1.5") },
		"reason not Karpenter's": func(m map[string]any) { m["disruptions"] = map[string]any{"consolidation": json.Number("1")} },
		"bad enum in an array": func(m map[string]any) {
			m["events"].([]any)[0].(map[string]any)["kind"] = "other"
		},
		"bad removal reason in history": func(m map[string]any) {
			m["nodeHistory"].([]any)[0].(map[string]any)["removalReason"] = "SpotInterruption"
		},
	} {
		m := decodeJSON(t, good).(map[string]any)
		mutate(m)
		if errs := schema.validate(m); len(errs) == 0 {
			t.Errorf("%s: accepted", name)
		}
	}
	bad := &jsonSchema{root: map[string]any{"type": "object", "patternProperties": map[string]any{}}}
	if errs := bad.validate(map[string]any{}); len(errs) == 0 || !strings.Contains(errs[0], "patternProperties") {
		t.Errorf("an unchecked keyword was not refused: %v", errs)
	}
}

// TestJSONByteIdentical: the same workload and seed give the same bytes, history included
// (examples/disruption.yaml: drift, an interruption, emptiness and do-not-disrupt).
func TestJSONByteIdentical(t *testing.T) {
	var outs [2]bytes.Buffer
	for i := range outs {
		if err := WriteJSON(&outs[i], runFile(t, "../../examples/disruption.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(outs[0].Bytes(), outs[1].Bytes()) {
		t.Fatal("two runs of examples/disruption.yaml gave different JSON")
	}
	rep := decodeJSON(t, outs[0].Bytes()).(map[string]any)
	for _, key := range []string{"nodeHistory", "podHistory", "events", "nodePools"} {
		if len(rep[key].([]any)) == 0 {
			t.Errorf("%s is empty", key)
		}
	}
}

// TestHistory checks the history of examples/web.yaml against the rest of the report: every
// node launched is there with its facts, removed nodes have Karpenter's reasons, pods have
// their nodes, and the per-NodePool results add up.
func TestHistory(t *testing.T) {
	rep := sharedReport(t, "../../examples/web.yaml")
	if len(rep.NodeHistory) != rep.Nodes.Launched {
		t.Fatalf("%d nodes in the history, %d launched", len(rep.NodeHistory), rep.Nodes.Launched)
	}
	names := map[string]bool{}
	removed := map[string]int{}
	for _, n := range rep.NodeHistory {
		names[n.Name] = true
		if n.Name == "" || n.NodePool != "default" || n.InstanceType == "" || n.Zone == "" || n.PricePerHour <= 0 ||
			n.Labels["node.kubernetes.io/instance-type"] != n.InstanceType || n.Labels["karpenter.sh/nodepool"] != "default" {
			t.Errorf("node %+v lacks its facts", n)
		}
		if n.ReadyAt == nil || *n.ReadyAt < n.LaunchedAt {
			t.Errorf("node %s: ready %v, launched %d", n.Name, n.ReadyAt, n.LaunchedAt)
		}
		if n.RemovedAt != nil {
			removed[n.RemovalReason]++
			if !slices.Contains(RemovalReasons, n.RemovalReason) || *n.RemovedAt < n.LaunchedAt {
				t.Errorf("node %s removed at %d for %q", n.Name, *n.RemovedAt, n.RemovalReason)
			}
		}
	}
	// web.yaml interrupts 3 spot instances and scales down: both reasons appear.
	if removed["Interrupted"] == 0 || removed["Underutilized"]+removed["Empty"] == 0 {
		t.Errorf("removals %v, want interruptions and consolidation", removed)
	}
	if fmt.Sprint(removed) != fmt.Sprint(rep.Disruptions) {
		t.Errorf("removals in the history %v, in the report %v", removed, rep.Disruptions)
	}
	if len(rep.PodHistory) != rep.Pods.Created {
		t.Fatalf("%d pods in the history, %d created", len(rep.PodHistory), rep.Pods.Created)
	}
	bound, evicted := 0, 0
	for _, p := range rep.PodHistory {
		if p.BoundAt != nil {
			bound++
			if !names[p.Node] || *p.BoundAt < p.CreatedAt || p.PendingSeconds != *p.BoundAt-p.CreatedAt {
				t.Errorf("pod %+v", p)
			}
		}
		if p.End == PodEvicted {
			evicted++
		}
		if (p.EndedAt == nil) != (p.End == "") {
			t.Errorf("pod %s ended at %v: %q", p.Name, p.EndedAt, p.End)
		}
	}
	if bound != rep.Pods.Scheduled || evicted == 0 {
		t.Errorf("%d pods bound (%d scheduled), %d evicted", bound, rep.Pods.Scheduled, evicted)
	}
	histogram := 0
	for _, b := range rep.Pods.PendingHistogram {
		histogram += b.Pods
	}
	if histogram != rep.Pods.Scheduled {
		t.Errorf("the pending histogram holds %d pods, %d were scheduled", histogram, rep.Pods.Scheduled)
	}
	if len(rep.NodePools) != 1 {
		t.Fatalf("nodePools %+v", rep.NodePools)
	}
	np := rep.NodePools[0]
	if !np.Inputs.Found || np.Inputs.Limits["cpu"] != "1k" && np.Inputs.Limits["cpu"] != "1000" || len(np.Inputs.Requirements) != 4 {
		t.Errorf("inputs %+v", np.Inputs)
	}
	if r := np.Results; r.Launched != rep.Nodes.Launched || r.LaunchedSpot+r.LaunchedOnDemand != r.Launched || r.Final != rep.Nodes.Final || r.Peak != rep.Nodes.Peak {
		t.Errorf("results %+v, report nodes %+v", r, rep.Nodes)
	}
	spot := 0
	for _, s := range rep.Series {
		spot = max(spot, s.SpotNodes)
		if s.SpotNodes+s.OnDemandNodes != s.Nodes {
			t.Fatalf("sample %+v: spot and on-demand do not add up", s)
		}
	}
	if spot == 0 {
		t.Error("no spot node in the series")
	}
}

// TestFailedLaunches: when the cloud has no capacity left for the cheapest offering (a limit
// the scheduler cannot see), the launch is refused, the report lists it with the offering
// tried, and the retry launches the next one.
func TestFailedLaunches(t *testing.T) {
	w, err := ParseWorkload("shortage.yaml", []byte(`name: shortage
duration: 30m
seed: 1
cloud: {zones: [us-east-1a]}
manifests: |
  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: narrow}
  spec:
    template:
      spec:
        requirements:
          - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}
          - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
`+nodeClassManifest+`timeline:
  - at: 0s
    deploy: {name: web, replicas: 1, pod: {cpu: "1", memory: 1Gi}}
`))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := newEngine(ctx, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	e.cloud.SetCapacity("m5.large", "us-east-1a", "on-demand", 0)
	rep, err := e.run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.FailedLaunches) == 0 {
		t.Fatalf("no failed launch; events %+v", rep.Events)
	}
	f := rep.FailedLaunches[0]
	if f.NodePool != "narrow" || f.NodeClaim == "" || len(f.Offerings) == 0 {
		t.Errorf("failed launch %+v", f)
	}
	for _, o := range f.Offerings {
		if o != (Offering{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand"}) {
			t.Errorf("offering %+v tried, want m5.large's only", o)
		}
	}
	if rep.NodePools[0].Results.FailedLaunches != len(rep.FailedLaunches) {
		t.Errorf("nodepool results %+v, %d failed launches", rep.NodePools[0].Results, len(rep.FailedLaunches))
	}
	if rep.Pods.Scheduled != 1 || rep.Nodes.ByType[0].InstanceType != "m5.xlarge" {
		t.Errorf("pods %+v on %+v, want the pod on an m5.xlarge", rep.Pods, rep.Nodes.ByType)
	}
	var text bytes.Buffer
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"By NodePool", "narrow", "refused for want of capacity"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
}

// exampleReports are the examples' reports, each run once for the tests that read it.
var exampleReports = struct {
	sync.Mutex
	reports map[string]*Report
}{reports: map[string]*Report{}}

// sharedReport returns the report of an example, run once for every test that asks: read it,
// never modify it.
func sharedReport(t *testing.T, path string) *Report {
	t.Helper()
	exampleReports.Lock()
	defer exampleReports.Unlock()
	if rep, ok := exampleReports.reports[path]; ok {
		return rep
	}
	rep := runFile(t, path)
	exampleReports.reports[path] = rep
	return rep
}

func runFile(t *testing.T, path string) *Report {
	t.Helper()
	w, err := LoadWorkload(path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func decodeJSON(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func loadSchema(t *testing.T) *jsonSchema {
	t.Helper()
	data, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(data, &root); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	return &jsonSchema{root: root}
}

// jsonSchema validates a document against a JSON Schema that uses only the keywords it
// checks; any other keyword is an error, so the schema cannot promise what is not checked.
type jsonSchema struct{ root map[string]any }

// annotations are keywords that constrain nothing.
var annotations = []string{"$schema", "$id", "title", "description", "$defs"}

func (s *jsonSchema) validate(doc any) []string {
	var errs []string
	s.check(s.root, doc, "$", &errs)
	return errs
}

func (s *jsonSchema) check(schema map[string]any, v any, path string, errs *[]string) {
	fail := func(format string, args ...any) { *errs = append(*errs, path+": "+fmt.Sprintf(format, args...)) }
	keys := make([]string, 0, len(schema))
	for k := range schema {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch k {
		case "type", "properties", "required", "additionalProperties", "items", "enum", "minimum", "$ref", "oneOf", "propertyNames":
		default:
			if !slices.Contains(annotations, k) {
				fail("schema keyword %q is not checked by this validator", k)
				return
			}
		}
	}
	if ref, ok := schema["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/$defs/")
		def, ok := s.root["$defs"].(map[string]any)[name].(map[string]any)
		if !found || !ok {
			fail("unresolved $ref %q", ref)
			return
		}
		s.check(def, v, path, errs)
	}
	if alts, ok := schema["oneOf"].([]any); ok {
		matched := 0
		for _, alt := range alts {
			var sub []string
			s.check(alt.(map[string]any), v, path, &sub)
			if len(sub) == 0 {
				matched++
			}
		}
		if matched != 1 {
			fail("matches %d of oneOf's %d schemas, not one", matched, len(alts))
		}
		if matched == 0 {
			// Say why it matches none: the errors of the alternative it comes closest to.
			var closest []string
			for _, alt := range alts {
				var sub []string
				s.check(alt.(map[string]any), v, path, &sub)
				if closest == nil || len(sub) < len(closest) {
					closest = sub
				}
			}
			*errs = append(*errs, closest...)
		}
	}
	if typ, ok := schema["type"].(string); ok && !hasType(v, typ) {
		fail("is %T, want %s", v, typ)
		return
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		fail("%v is not one of %v", v, enum)
	}
	if minimum, ok := schema["minimum"].(float64); ok {
		if n, isNum := v.(json.Number); isNum {
			if f, err := n.Float64(); err != nil || f < minimum {
				fail("%v is below %v", v, minimum)
			}
		}
	}
	switch val := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asStrings(schema["required"]) {
			if _, ok := val[r]; !ok {
				fail("lacks required %q", r)
			}
		}
		names, _ := schema["propertyNames"].(map[string]any)
		for _, k := range sortedKeys(val) {
			if names != nil {
				s.check(names, k, path+"."+k+" (name)", errs)
			}
			if p, ok := props[k].(map[string]any); ok {
				s.check(p, val[k], path+"."+k, errs)
				continue
			}
			switch extra := schema["additionalProperties"].(type) {
			case bool:
				if !extra {
					fail("has property %q the schema does not allow", k)
				}
			case map[string]any:
				s.check(extra, val[k], path+"."+k, errs)
			}
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, item := range val {
				s.check(items, item, fmt.Sprintf("%s[%d]", path, i), errs)
			}
		}
	}
}

func hasType(v any, typ string) bool {
	switch typ {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	case "null":
		return v == nil
	}
	return false
}

func asStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
