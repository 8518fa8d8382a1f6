package apis_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
)

var env *apiserver.Env

func TestMain(m *testing.M) { os.Exit(apiserver.Main(m, &env)) }

// document is one YAML document of a testdata file.
type document struct {
	file string
	raw  map[string]any
}

func (d document) String() string {
	return fmt.Sprintf("%s: %s %s", d.file, d.raw["kind"], d.raw["metadata"].(map[string]any)["name"])
}

func readDocuments(t *testing.T, pattern string) []document {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) == 0 {
		t.Fatalf("no files match %s (%v)", pattern, err)
	}
	var docs []document
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
			raw := map[string]any{}
			if err := yaml.Unmarshal(chunk, &raw); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if len(raw) > 0 {
				docs = append(docs, document{file: filepath.Base(file), raw: raw})
			}
		}
	}
	return docs
}

// typed decodes a document strictly into the project's Go type for its kind, failing on any
// field the type does not know.
func typed(t *testing.T, doc document) client.Object {
	t.Helper()
	u := &unstructured.Unstructured{Object: doc.raw}
	obj, err := env.Scheme.New(u.GroupVersionKind())
	if err != nil {
		t.Fatalf("%s: no Go type: %v", doc, err)
	}
	data, err := json.Marshal(doc.raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: the Go types do not read it: %v", doc, err)
	}
	return obj.(client.Object)
}

func toMap(t *testing.T, obj any) map[string]any {
	t.Helper()
	data, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// missing lists the fields of want that got lacks or holds a different value in. Quantities and
// durations compare by value ("1000" equals "1k", "8h" equals "8h0m0s").
func missing(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var out []string
		for k, v := range w {
			if _, ok := g[k]; !ok {
				out = append(out, fmt.Sprintf("%s.%s: lost (was %v)", path, k, v))
				continue
			}
			out = append(out, missing(path+"."+k, v, g[k])...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
		}
		var out []string
		for i := range w {
			out = append(out, missing(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		if sameScalar(want, got) {
			return nil
		}
		return []string{fmt.Sprintf("%s: want %v, got %v", path, want, got)}
	}
}

func sameScalar(want, got any) bool {
	if reflect.DeepEqual(want, got) || fmt.Sprint(want) == fmt.Sprint(got) {
		return true
	}
	ws, gs := fmt.Sprint(want), fmt.Sprint(got)
	if wq, err := resource.ParseQuantity(ws); err == nil {
		if gq, err := resource.ParseQuantity(gs); err == nil && wq.Cmp(gq) == 0 {
			return true
		}
	}
	if wd, err := time.ParseDuration(ws); err == nil {
		if gd, err := time.ParseDuration(gs); err == nil && wd == gd {
			return true
		}
	}
	return false
}

// TestManifestsRoundTrip: every seed and docs manifest is read by the Go types without unknown
// fields, accepted by the API server, and comes back with every field it had.
func TestManifestsRoundTrip(t *testing.T) {
	ctx := context.Background()
	docs := readDocuments(t, "testdata/valid/*.yaml")
	for _, doc := range docs {
		t.Run(doc.String(), func(t *testing.T) {
			obj := typed(t, doc)
			obj.SetName("roundtrip-" + obj.GetName())
			doc.raw["metadata"].(map[string]any)["name"] = obj.GetName()
			if lost := missing("", doc.raw, toMap(t, obj)); len(lost) > 0 {
				t.Fatalf("the Go types lose fields:\n%s", strings.Join(lost, "\n"))
			}
			if err := env.Client.Create(ctx, obj); err != nil {
				t.Fatalf("API server rejected it: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
			back := obj.DeepCopyObject().(client.Object)
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), back); err != nil {
				t.Fatal(err)
			}
			// The typed client clears apiVersion and kind on reads; the rest must all be there.
			gotMap := toMap(t, back)
			gotMap["apiVersion"], gotMap["kind"] = doc.raw["apiVersion"], doc.raw["kind"]
			if lost := missing("", doc.raw, gotMap); len(lost) > 0 {
				t.Fatalf("fields lost through the API server:\n%s", strings.Join(lost, "\n"))
			}
		})
	}
}

// TestKubectlApply installs the CRDs and applies the manifests with kubectl, as a user would,
// then lists them to exercise the printer columns.
func TestKubectlApply(t *testing.T) {
	kubeconfig, err := env.KubeconfigFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(env.KubectlPath, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	kubectl("apply", "-f", "../../config/crd/")
	out := kubectl("apply", "-f", "testdata/valid/")
	for _, want := range []string{"nodepool.karpenter.sh/general-purpose", "ec2nodeclass.karpenter.k8s.aws/default", "provisioner.karpenter.sh/default", "nodepool.karpenter.sh/nodes"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply did not mention %s:\n%s", want, out)
		}
	}
	listing := kubectl("get", "nodepools,nodeclaims,ec2nodeclasses")
	for _, column := range []string{"NODECLASS", "NODES", "READY", "TYPE", "CAPACITY", "ZONE", "NODE"} {
		if !strings.Contains(listing, column) {
			t.Errorf("kubectl get lacks column %s:\n%s", column, listing)
		}
	}
	kubectl("delete", "-f", "testdata/valid/")
}

// TestDefaults: what a minimal manifest gets from the schema, as in Karpenter.
func TestDefaults(t *testing.T) {
	ctx := context.Background()
	nodePool := &karpv1.NodePool{}
	nodePool.Name = "defaults"
	nodePool.Spec.Template.Spec.NodeClassRef = &karpv1.NodeClassReference{Group: awsv1.Group, Kind: "EC2NodeClass", Name: "default"}
	if err := env.Client.Create(ctx, nodePool); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, nodePool) })
	d := nodePool.Spec.Disruption
	if d.ConsolidationPolicy != karpv1.ConsolidationPolicyWhenEmptyOrUnderutilized || d.ConsolidateAfter.String() != "0s" ||
		len(d.Budgets) != 1 || d.Budgets[0].Nodes != "10%" {
		t.Errorf("disruption defaults = %+v", d)
	}
	if got := nodePool.Spec.Template.Spec.ExpireAfter.String(); got != "720h0m0s" {
		t.Errorf("expireAfter default = %s, want 720h", got)
	}

	nodeClass := &awsv1.EC2NodeClass{}
	nodeClass.Name = "defaults"
	nodeClass.Spec = awsv1.EC2NodeClassSpec{
		Role:                       "KarpenterNodeRole",
		AMISelectorTerms:           []awsv1.AMISelectorTerm{{Alias: "al2023@latest"}},
		SubnetSelectorTerms:        []awsv1.SubnetSelectorTerm{{ID: "subnet-1"}},
		SecurityGroupSelectorTerms: []awsv1.SecurityGroupSelectorTerm{{ID: "sg-1"}},
	}
	if err := env.Client.Create(ctx, nodeClass); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(ctx, nodeClass) })
	m := nodeClass.Spec.MetadataOptions
	if m == nil || *m.HTTPTokens != "required" || *m.HTTPPutResponseHopLimit != 1 || *m.HTTPEndpoint != "enabled" {
		t.Errorf("metadataOptions default = %+v, want IMDSv2 required with hop limit 1", m)
	}
}

// invalid is an object the API server must reject, with the field and message it must name.
type invalid struct {
	name    string
	kind    string // NodePool, EC2NodeClass or NodeClaim
	patch   string // YAML merged over a valid base object of that kind
	field   string
	message string
}

const (
	baseNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: invalid}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: kubernetes.io/os, operator: In, values: [linux]}
`
	baseEC2NodeClass = `
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: invalid}
spec:
  role: KarpenterNodeRole
  amiSelectorTerms: [{alias: al2023@latest}]
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
  securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: c}}]
`
	baseNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: invalid}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
    - {key: kubernetes.io/os, operator: In, values: [linux]}
`
	baseNodeOverlay = `
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: invalid}
spec:
  requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m7i.large]}
  priceAdjustment: "-10%"
`
	baseCapacityBuffer = `
apiVersion: autoscaling.x-k8s.io/v1beta1
kind: CapacityBuffer
metadata: {name: invalid, namespace: default}
spec:
  podTemplateRef: {name: spare}
  replicas: 2
`
)

var invalids = []invalid{
	{"restricted karpenter.sh label", "NodePool", `{spec: {template: {metadata: {labels: {karpenter.sh/team: a}}}}}`, "spec.template.metadata.labels", `label domain "karpenter.sh" is restricted`},
	{"nodepool label", "NodePool", `{spec: {template: {metadata: {labels: {karpenter.sh/nodepool: a}}}}}`, "spec.template.metadata.labels", `label "karpenter.sh/nodepool" is restricted`},
	{"hostname label", "NodePool", `{spec: {template: {metadata: {labels: {kubernetes.io/hostname: a}}}}}`, "spec.template.metadata.labels", `label "kubernetes.io/hostname" is restricted`},
	{"restricted karpenter.k8s.aws label", "NodePool", `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/custom: a}}}}}`, "spec.template.metadata.labels", `label domain "karpenter.k8s.aws" is restricted`},
	{"label value too long", "NodePool", `{spec: {template: {metadata: {labels: {team: ` + strings.Repeat("a", 64) + `}}}}}`, "spec.template.metadata.labels.team", "may not be more than 63"},
	{"bad label value", "NodePool", `{spec: {template: {metadata: {labels: {team: "-a b"}}}}}`, "spec.template.metadata.labels.team", "should match"},
	{"bad label key", "NodePool", `{spec: {template: {metadata: {labels: {"bad key!": a}}}}}`, "spec.template.metadata.labels", "label keys must be qualified names"},
	{"unknown operator", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: Like, values: [b]}]}}}}`, "spec.template.spec.requirements[0].operator", `Unsupported value: "Like": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"`},
	{"In without values", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: In}]}}}}`, "spec.template.spec.requirements", "requirements with operator 'In' must have a value defined"},
	{"Gt not an integer", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [many]}]}}}}`, "spec.template.spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"Gt negative", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["-1"]}]}}}}`, "spec.template.spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"Gte negative", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["-1"]}]}}}}`, "spec.template.spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"Gte not an integer", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: [a]}]}}}}`, "spec.template.spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"Gte two values", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["1", "2"]}]}}}}`, "spec.template.spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"Lte without values", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte}]}}}}`, "spec.template.spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"Lte beyond int64", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["99999999999999999999"]}]}}}}`, "spec.template.spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"Exists with values", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: Exists, values: [b]}]}}}}`, "spec.template.spec.requirements", "must not have values"},
	{"minValues above values", "NodePool", `{spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large], minValues: 2}]}}}}`, "spec.template.spec.requirements", "requirements with 'minValues' must have at least that many values"},
	{"nodepool requirement", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [x]}]}}}}`, "spec.template.spec.requirements[0].key", `label "karpenter.sh/nodepool" is restricted`},
	{"kubernetes.io requirement", "NodePool", `{spec: {template: {spec: {requirements: [{key: kubernetes.io/role, operator: In, values: [x]}]}}}}`, "spec.template.spec.requirements[0].key", `label domain "kubernetes.io" is restricted`},
	{"hostname requirement", "NodePool", `{spec: {template: {spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [x]}]}}}}`, "spec.template.spec.requirements[0].key", `label "kubernetes.io/hostname" is restricted`},
	{"bad taint effect", "NodePool", `{spec: {template: {spec: {taints: [{key: a, effect: Sometimes}]}}}}`, "spec.template.spec.taints[0].effect", `Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"`},
	{"bad taint key", "NodePool", `{spec: {template: {spec: {taints: [{key: "bad key", effect: NoSchedule}]}}}}`, "spec.template.spec.taints[0].key", "should match"},
	{"empty taint key", "NodePool", `{spec: {template: {spec: {taints: [{key: "", effect: NoSchedule}]}}}}`, "spec.template.spec.taints[0].key", "should be at least 1 chars long"},
	{"bad taint value", "NodePool", `{spec: {template: {spec: {taints: [{key: a, value: "b c", effect: NoSchedule}]}}}}`, "spec.template.spec.taints[0].value", "should match"},
	{"bad startup taint effect", "NodePool", `{spec: {template: {spec: {startupTaints: [{key: a, effect: Sometimes}]}}}}`, "spec.template.spec.startupTaints[0].effect", `Unsupported value: "Sometimes"`},
	{"bad startup taint key", "NodePool", `{spec: {template: {spec: {startupTaints: [{key: Example.com/a, effect: NoSchedule}]}}}}`, "spec.template.spec.startupTaints[0].key", "should match"},
	{"budget reason twice", "NodePool", `{spec: {disruption: {budgets: [{nodes: "1", reasons: [Empty, Empty]}]}}}`, "spec.disruption.budgets[0].reasons[1]", `Duplicate value: "Empty"`},
	{"requirement value with a space", "NodePool", `{spec: {template: {spec: {requirements: [{key: team, operator: In, values: ["a b"]}]}}}}`, "spec.template.spec.requirements[0].values[0]", "should match"},
	{"no nodeClassRef", "NodePool", `{spec: {template: {spec: {nodeClassRef: null}}}}`, "spec.template.spec.nodeClassRef", "Required value"},
	{"empty nodeClassRef name", "NodePool", `{spec: {template: {spec: {nodeClassRef: {name: ""}}}}}`, "spec.template.spec.nodeClassRef.name", "name may not be empty"},
	{"bad expireAfter", "NodePool", `{spec: {template: {spec: {expireAfter: forever}}}}`, "spec.template.spec.expireAfter", "should match"},
	{"bad consolidationPolicy", "NodePool", `{spec: {disruption: {consolidationPolicy: Sometimes}}}`, "spec.disruption.consolidationPolicy", `Unsupported value: "Sometimes"`},
	{"bad consolidateAfter", "NodePool", `{spec: {disruption: {consolidateAfter: 10d}}}`, "spec.disruption.consolidateAfter", "should match"},
	{"budget over 100%", "NodePool", `{spec: {disruption: {budgets: [{nodes: "110%"}]}}}`, "spec.disruption.budgets[0].nodes", "should match"},
	{"budget schedule without duration", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0", schedule: "@daily"}]}}}`, "spec.disruption.budgets", "'schedule' must be set with 'duration'"},
	{"budget unknown reason", "NodePool", `{spec: {disruption: {budgets: [{nodes: "1", reasons: [Bored]}]}}}`, "spec.disruption.budgets[0].reasons[0]", `Unsupported value: "Bored"`},
	{"weight 0", "NodePool", `{spec: {weight: 0}}`, "spec.weight", "should be greater than or equal to 1"},
	{"weight 101", "NodePool", `{spec: {weight: 101}}`, "spec.weight", "should be less than or equal to 100"},
	{"negative replicas", "NodePool", `{spec: {replicas: -1}}`, "spec.replicas", "should be greater than or equal to 0"},
	{"static with cpu limit", "NodePool", `{spec: {replicas: 2, limits: {cpu: "10"}}}`, "spec", "only 'limits.nodes' is supported on static NodePools"},
	{"static with weight", "NodePool", `{spec: {replicas: 2, weight: 10}}`, "spec", "'weight' is not supported on static NodePools"},
	{"role and instanceProfile", "EC2NodeClass", `{spec: {instanceProfile: p}}`, "spec", "must specify exactly one of ['role', 'instanceProfile']"},
	{"neither role nor instanceProfile", "EC2NodeClass", `{spec: {role: null}}`, "spec", "must specify exactly one of ['role', 'instanceProfile']"},
	{"alias with another term", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: al2023@latest}, {id: ami-123}]}}`, "spec.amiSelectorTerms", "'alias' is mutually exclusive, cannot be set with a combination of other amiSelectorTerms"},
	{"alias unknown family", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: ubuntu@latest}]}}`, "spec.amiSelectorTerms[0].alias", "family is not supported"},
	{"alias bad format", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: al2023}]}}`, "spec.amiSelectorTerms[0].alias", "'alias' is improperly formatted"},
	{"id with tags", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-123, tags: {a: b}}]}}`, "spec.amiSelectorTerms", "'id' is mutually exclusive"},
	{"no amiFamily without alias", "EC2NodeClass", `{spec: {amiSelectorTerms: [{id: ami-123}]}}`, "spec", "must specify amiFamily if amiSelectorTerms does not contain an alias; set spec.amiFamily"},
	{"amiFamily not the alias's", "EC2NodeClass", `{spec: {amiFamily: AL2, amiSelectorTerms: [{alias: al2023@latest}]}}`, "spec", "if set, amiFamily must be 'AL2023' or 'Custom' when using an AL2023 alias"},
	{"amiFamily not the Bottlerocket alias's", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{alias: bottlerocket@latest}]}}`, "spec", "if set, amiFamily must be 'Bottlerocket' or 'Custom' when using a Bottlerocket alias"},
	{"volume initialization rate without snapshot", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeInitializationRate: 200}}]}}`, "spec.blockDeviceMappings[0].ebs", "snapshotID must be set when volumeInitializationRate is set"},
	{"integer volume size", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100}}]}}`, "spec.blockDeviceMappings[0].ebs.volumeSize", "must be of type string"},
	{"no amiSelectorTerms", "EC2NodeClass", `{spec: {amiSelectorTerms: null}}`, "spec.amiSelectorTerms", "Required value"},
	{"empty subnetSelectorTerms", "EC2NodeClass", `{spec: {subnetSelectorTerms: []}}`, "spec.subnetSelectorTerms", "subnetSelectorTerms cannot be empty"},
	{"empty subnet term", "EC2NodeClass", `{spec: {subnetSelectorTerms: [{}]}}`, "spec.subnetSelectorTerms", "expected at least one, got none, ['tags', 'id']"},
	{"restricted tag", "EC2NodeClass", `{spec: {tags: {kubernetes.io/cluster/c: owned}}}`, "spec.tags", "tag contains a restricted tag matching kubernetes.io/cluster/"},
	{"nodepool tag", "EC2NodeClass", `{spec: {tags: {karpenter.sh/nodepool: x}}}`, "spec.tags", "tag contains a restricted tag matching karpenter.sh/nodepool"},
	{"two root volumes", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}, {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 20Gi}}]}}`, "spec.blockDeviceMappings", "must have only one blockDeviceMappings with rootVolume"},
	{"volume without size or snapshot", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]}}`, "spec.blockDeviceMappings[0].ebs", "snapshotID or volumeSize must be defined"},
	{"bad httpTokens", "EC2NodeClass", `{spec: {metadataOptions: {httpTokens: sometimes}}}`, "spec.metadataOptions.httpTokens", `Unsupported value: "sometimes"`},
	{"bad amiFamily", "EC2NodeClass", `{spec: {amiFamily: Ubuntu}}`, "spec.amiFamily", `Unsupported value: "Ubuntu"`},
	{"negative ipPrefixCount", "EC2NodeClass", `{spec: {ipPrefixCount: -1}}`, "spec.ipPrefixCount", "should be greater than or equal to 0"},
	{"networkInterfaces without primary", "EC2NodeClass", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa-only}]}}`, "spec.networkInterfaces", "networkInterfaces must include a primary interface with interfaceType='interface'"},
	{"networkInterfaces duplicate pair", "EC2NodeClass", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}]}}`, "spec.networkInterfaces", "networkInterfaces must not have duplicate networkCardIndex and deviceIndex pairs, and can have at most one efa device per network card"},
	{"two efa-only on one card", "EC2NodeClass", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}, {networkCardIndex: 1, deviceIndex: 0, interfaceType: efa-only}, {networkCardIndex: 1, deviceIndex: 1, interfaceType: efa-only}]}}`, "spec.networkInterfaces", "can have at most one efa device per network card"},
	{"bad interfaceType", "EC2NodeClass", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: efa}]}}`, "spec.networkInterfaces[0].interfaceType", `Unsupported value: "efa"`},
	{"negative deviceIndex", "EC2NodeClass", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: -1, interfaceType: interface}]}}`, "spec.networkInterfaces[0].deviceIndex", "should be greater than or equal to 0"},
	{"networkInterface without interfaceType", "EC2NodeClass", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0}]}}`, "spec.networkInterfaces[0].interfaceType", "Required value"},
	{"empty connectionTracking", "EC2NodeClass", `{spec: {connectionTracking: {}}}`, "spec.connectionTracking", "at least one of tcpEstablishedTimeout, udpStreamTimeout, or udpTimeout must be set"},
	{"tcpEstablishedTimeout below 60", "EC2NodeClass", `{spec: {connectionTracking: {tcpEstablishedTimeout: 59}}}`, "spec.connectionTracking.tcpEstablishedTimeout", "should be greater than or equal to 60"},
	{"tcpEstablishedTimeout above 432000", "EC2NodeClass", `{spec: {connectionTracking: {tcpEstablishedTimeout: 432001}}}`, "spec.connectionTracking.tcpEstablishedTimeout", "should be less than or equal to 432000"},
	{"udpStreamTimeout above 180", "EC2NodeClass", `{spec: {connectionTracking: {udpStreamTimeout: 181}}}`, "spec.connectionTracking.udpStreamTimeout", "should be less than or equal to 180"},
	{"udpTimeout below 30", "EC2NodeClass", `{spec: {connectionTracking: {udpTimeout: 29}}}`, "spec.connectionTracking.udpTimeout", "should be greater than or equal to 30"},
	{"udpTimeout above 60", "EC2NodeClass", `{spec: {connectionTracking: {udpTimeout: 61}}}`, "spec.connectionTracking.udpTimeout", "should be less than or equal to 60"},
	{"bad nestedVirtualization", "EC2NodeClass", `{spec: {cpuOptions: {nestedVirtualization: sometimes}}}`, "spec.cpuOptions.nestedVirtualization", `Unsupported value: "sometimes"`},
	{"empty placementGroupSelector", "EC2NodeClass", `{spec: {placementGroupSelector: {}}}`, "spec.placementGroupSelector", "expected at least one, got none, ['name', 'id']"},
	{"placementGroupSelector name and id", "EC2NodeClass", `{spec: {placementGroupSelector: {name: a, id: pg-0123456789abcdef0}}}`, "spec.placementGroupSelector", "'name' and 'id' are mutually exclusive"},
	{"bad placement group id", "EC2NodeClass", `{spec: {placementGroupSelector: {id: placement-1}}}`, "spec.placementGroupSelector.id", "should match '^pg-[0-9a-z]+$'"},
	{"empty placement group name", "EC2NodeClass", `{spec: {placementGroupSelector: {name: ""}}}`, "spec.placementGroupSelector.name", "should be at least 1 chars long"},
	{"enclaveOptions without enabled", "EC2NodeClass", `{spec: {enclaveOptions: {}}}`, "spec.enclaveOptions.enabled", "Required value"},
	{"enclaveOptions enabled not a boolean", "EC2NodeClass", `{spec: {enclaveOptions: {enabled: "yes"}}}`, "spec.enclaveOptions.enabled", "must be of type boolean"},
	{"kubelet not an object", "EC2NodeClass", `{spec: {kubelet: [maxPods]}}`, "spec.kubelet", "must be of type object"},
	{"nodeclaim without nodeClassRef", "NodeClaim", `{spec: {nodeClassRef: null}}`, "spec.nodeClassRef", "Required value"},
	{"nodeclaim Lte negative", "NodeClaim", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["-1"]}]}}`, "spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"nodeclaim Gte two values", "NodeClaim", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["1", "2"]}]}}`, "spec.requirements", "requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"},
	{"nodeclaim minValues 0", "NodeClaim", `{spec: {requirements: [{key: a, operator: In, values: [b], minValues: 0}]}}`, "spec.requirements[0].minValues", "should be greater than or equal to 1"},
}

func baseFor(t *testing.T, kind string) map[string]any {
	t.Helper()
	src := map[string]string{"NodePool": baseNodePool, "EC2NodeClass": baseEC2NodeClass, "NodeClaim": baseNodeClaim, "NodeOverlay": baseNodeOverlay, "CapacityBuffer": baseCapacityBuffer}[kind]
	out := map[string]any{}
	if err := yaml.Unmarshal([]byte(src), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// merge applies a JSON merge patch (null deletes) to dst.
func merge(dst, patch map[string]any) {
	for k, v := range patch {
		if v == nil {
			delete(dst, k)
			continue
		}
		if pm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				merge(dm, pm)
				continue
			}
		}
		dst[k] = v
	}
}

// TestInvalidRejected: each invalid object is refused, and the error names the field and says
// what is wrong. The base objects themselves are accepted.
func TestInvalidRejected(t *testing.T) {
	ctx := context.Background()
	for _, kind := range []string{"NodePool", "EC2NodeClass", "NodeClaim"} {
		u := &unstructured.Unstructured{Object: baseFor(t, kind)}
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatalf("base %s rejected: %v", kind, err)
		}
		if err := env.Client.Delete(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range invalids {
		t.Run(tc.name, func(t *testing.T) {
			obj := baseFor(t, tc.kind)
			patch := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.patch), &patch); err != nil {
				t.Fatal(err)
			}
			merge(obj, patch)
			u := &unstructured.Unstructured{Object: obj}
			err := env.Client.Create(ctx, u)
			if err == nil {
				_ = env.Client.Delete(ctx, u)
				t.Fatalf("accepted %s", tc.patch)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.field+":") {
				t.Errorf("error does not name field %s: %v", tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error does not say %q: %v", tc.message, err)
			}
		})
	}
}

// TestInvalidUpdates: transitions the schema forbids.
func TestInvalidUpdates(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, kind, create, update, message string
	}{
		{"dynamic to static", "NodePool", `{}`, `{spec: {replicas: 3}}`, "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset)"},
		{"static to dynamic", "NodePool", `{spec: {replicas: 3}}`, `{spec: {replicas: null}}`, "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset)"},
		{"nodeClassRef kind", "NodePool", `{}`, `{spec: {template: {spec: {nodeClassRef: {kind: OtherNodeClass}}}}}`, "nodeClassRef.kind is immutable"},
		{"nodeclaim spec", "NodeClaim", `{}`, `{spec: {taints: [{key: a, effect: NoSchedule}]}}`, "spec is immutable"},
		{"role changed", "EC2NodeClass", `{}`, `{spec: {role: OtherRole}}`, "immutable field changed"},
		{"role to instanceProfile", "EC2NodeClass", `{}`, `{spec: {role: null, instanceProfile: p}}`, "from 'role' to 'instanceProfile' is not supported"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := baseFor(t, tc.kind)
			patch := map[string]any{}
			if err := yaml.Unmarshal([]byte(tc.create), &patch); err != nil {
				t.Fatal(err)
			}
			merge(obj, patch)
			obj["metadata"].(map[string]any)["name"] = fmt.Sprintf("update-%d", i)
			u := &unstructured.Unstructured{Object: obj}
			if err := env.Client.Create(ctx, u); err != nil {
				t.Fatalf("create: %v", err)
			}
			t.Cleanup(func() { _ = env.Client.Delete(ctx, u) })
			if err := yaml.Unmarshal([]byte(tc.update), &patch); err != nil {
				t.Fatal(err)
			}
			patch = map[string]any{}
			_ = yaml.Unmarshal([]byte(tc.update), &patch)
			merge(u.Object, patch)
			err := env.Client.Update(ctx, u)
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("want an error saying %q, got %v", tc.message, err)
			}
		})
	}
}

// TestCRDsComplete: the committed CRDs are the six kinds, each with a status subresource.
func TestCRDsComplete(t *testing.T) {
	var names []string
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("apiextensions.k8s.io/v1")
	list.SetKind("CustomResourceDefinitionList")
	if err := env.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	for _, item := range list.Items {
		names = append(names, item.GetName())
	}
	sort.Strings(names)
	want := []string{"awsnodetemplates.karpenter.k8s.aws", "capacitybuffers.autoscaling.x-k8s.io", "ec2nodeclasses.karpenter.k8s.aws", "nodeclaims.karpenter.sh", "nodeoverlays.karpenter.sh", "nodepools.karpenter.sh", "provisioners.karpenter.sh"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("CRDs = %v, want %v", names, want)
	}
}
