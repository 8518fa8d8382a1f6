package apis_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	"github.com/openkarpenter/karpenter/pkg/test/apiserver"
)

// compatCase is one object sent to two API servers, one serving Karpenter's published CRDs
// (testdata/karpenter) and one ours: the base object of its kind (baseFor) with patch merged
// over it (null deletes a field).
type compatCase struct {
	name  string
	kind  string // NodePool, NodeClaim, EC2NodeClass, NodeOverlay or CapacityBuffer
	patch string
}

// difference is a case on which Karpenter's CRDs and ours disagree on purpose, with why.
// docs/crd-validation.md lists each.
type difference struct {
	compatCase
	why string
}

// compatUpdate is an object created on both servers, then changed by patch.
type compatUpdate struct {
	name, kind, create, patch string
	// why is empty when both servers refuse the change; else Karpenter allows it, ours refuses
	// it on purpose, and why says so.
	why string
}

// letters is a string of n letters.
func letters(n int) string { return strings.Repeat("a", n) }

// many is a YAML flow list of n copies of item, each with %d replaced by its index.
func many(n int, item string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = strings.ReplaceAll(item, "%d", fmt.Sprint(i))
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// manyKeys is a YAML flow map of n keys k0…k(n-1), each with value.
func manyKeys(n int, value string) string {
	return strings.Trim(many(n, "k%d: "+value), "[]")
}

// refusedByKarpenter: every object here is refused by Karpenter's CRDs, so ours must refuse it.
var refusedByKarpenter = []compatCase{
	// NodePool requirements.
	{"requirement unknown operator", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: Like, values: [b]}]}}}}`},
	{"requirement lower-case operator", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: in, values: [b]}]}}}}`},
	{"requirement In without values", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: In}]}}}}`},
	{"requirement In with no values", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: In, values: []}]}}}}`},
	{"requirement Gt not an integer", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [many]}]}}}}`},
	{"requirement Gt negative", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["-1"]}]}}}}`},
	{"requirement Gt two values", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["1", "2"]}]}}}}`},
	{"requirement Lt without values", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lt}]}}}}`},
	{"requirement Gte negative", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["-4"]}]}}}}`},
	{"requirement Lte not an integer", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["1.5"]}]}}}}`},
	{"requirement Lte two values", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["1", "2"]}]}}}}`},
	{"requirement minValues above its values", "NodePool", `{spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large], minValues: 2}]}}}}`},
	{"requirement minValues 0", "NodePool", `{spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 0}]}}}}`},
	{"requirement minValues 51", "NodePool", `{spec: {template: {spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 51}]}}}}`},
	{"requirement without key", "NodePool", `{spec: {template: {spec: {requirements: [{operator: In, values: [a]}]}}}}`},
	{"requirement without operator", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, values: [a]}]}}}}`},
	{"requirement key with an upper-case domain", "NodePool", `{spec: {template: {spec: {requirements: [{key: Example.com/team, operator: In, values: [a]}]}}}}`},
	{"requirement key with a space", "NodePool", `{spec: {template: {spec: {requirements: [{key: "bad key", operator: In, values: [a]}]}}}}`},
	{"requirement key ending in a dash", "NodePool", `{spec: {template: {spec: {requirements: [{key: team-, operator: In, values: [a]}]}}}}`},
	{"requirement key empty", "NodePool", `{spec: {template: {spec: {requirements: [{key: "", operator: Exists}]}}}}`},
	{"requirement key of 317 characters", "NodePool", `{spec: {template: {spec: {requirements: [{key: ` + letters(317) + `, operator: Exists}]}}}}`},
	{"requirement key in karpenter.sh", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.sh/team, operator: Exists}]}}}}`},
	{"requirement key in a karpenter.sh subdomain", "NodePool", `{spec: {template: {spec: {requirements: [{key: x.karpenter.sh/team, operator: Exists}]}}}}`},
	{"requirement key karpenter.sh/nodepool", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [a]}]}}}}`},
	{"requirement key in karpenter.k8s.aws", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/team, operator: Exists}]}}}}`},
	{"requirement key karpenter.k8s.aws/instance-tenancies", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-tenancies, operator: Exists}]}}}}`},
	{"requirement key kubernetes.io/hostname", "NodePool", `{spec: {template: {spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}}}}`},
	{"101 requirements", "NodePool", `{spec: {template: {spec: {requirements: ` + many(101, "{key: k%d, operator: Exists}") + `}}}}`},

	// NodePool template labels.
	{"label in karpenter.sh", "NodePool", `{spec: {template: {metadata: {labels: {karpenter.sh/team: a}}}}}`},
	{"label in a karpenter.sh subdomain", "NodePool", `{spec: {template: {metadata: {labels: {x.karpenter.sh/team: a}}}}}`},
	{"label karpenter.sh/nodepool", "NodePool", `{spec: {template: {metadata: {labels: {karpenter.sh/nodepool: a}}}}}`},
	{"label kubernetes.io/hostname", "NodePool", `{spec: {template: {metadata: {labels: {kubernetes.io/hostname: a}}}}}`},
	{"label in karpenter.k8s.aws", "NodePool", `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/team: a}}}}}`},
	{"label value of 64 characters", "NodePool", `{spec: {template: {metadata: {labels: {team: ` + letters(64) + `}}}}}`},
	{"label value with a space", "NodePool", `{spec: {template: {metadata: {labels: {team: "a b"}}}}}`},
	{"label value starting with a dash", "NodePool", `{spec: {template: {metadata: {labels: {team: "-a"}}}}}`},
	{"101 labels", "NodePool", `{spec: {template: {metadata: {labels: {` + manyKeys(101, "a") + `}}}}}`},

	// NodePool taints and startup taints.
	{"taint effect unknown", "NodePool", `{spec: {template: {spec: {taints: [{key: a, effect: Sometimes}]}}}}`},
	{"taint effect lower case", "NodePool", `{spec: {template: {spec: {taints: [{key: a, effect: noSchedule}]}}}}`},
	{"taint without effect", "NodePool", `{spec: {template: {spec: {taints: [{key: a}]}}}}`},
	{"taint without key", "NodePool", `{spec: {template: {spec: {taints: [{effect: NoSchedule}]}}}}`},
	{"taint key empty", "NodePool", `{spec: {template: {spec: {taints: [{key: "", effect: NoSchedule}]}}}}`},
	{"taint key with a space", "NodePool", `{spec: {template: {spec: {taints: [{key: "bad key", effect: NoSchedule}]}}}}`},
	{"taint key with an upper-case domain", "NodePool", `{spec: {template: {spec: {taints: [{key: Example.com/dedicated, effect: NoSchedule}]}}}}`},
	{"taint key with an empty domain", "NodePool", `{spec: {template: {spec: {taints: [{key: /dedicated, effect: NoSchedule}]}}}}`},
	{"taint value with a space", "NodePool", `{spec: {template: {spec: {taints: [{key: a, value: "b c", effect: NoSchedule}]}}}}`},
	{"taint value starting with a dash", "NodePool", `{spec: {template: {spec: {taints: [{key: a, value: "-b", effect: NoSchedule}]}}}}`},
	{"taint value empty", "NodePool", `{spec: {template: {spec: {taints: [{key: a, value: "", effect: NoSchedule}]}}}}`},
	{"startup taint effect unknown", "NodePool", `{spec: {template: {spec: {startupTaints: [{key: a, effect: Sometimes}]}}}}`},
	{"startup taint key empty", "NodePool", `{spec: {template: {spec: {startupTaints: [{key: "", effect: NoSchedule}]}}}}`},
	{"startup taint key with a space", "NodePool", `{spec: {template: {spec: {startupTaints: [{key: "bad key", effect: NoSchedule}]}}}}`},
	{"startup taint value with a slash first", "NodePool", `{spec: {template: {spec: {startupTaints: [{key: a, value: "/b", effect: NoSchedule}]}}}}`},

	// NodePool disruption.
	{"consolidationPolicy unknown", "NodePool", `{spec: {disruption: {consolidationPolicy: Sometimes}}}`},
	{"consolidateAfter in days", "NodePool", `{spec: {disruption: {consolidateAfter: 10d}}}`},
	{"consolidateAfter negative", "NodePool", `{spec: {disruption: {consolidateAfter: -1s}}}`},
	{"consolidateAfter lower-case never", "NodePool", `{spec: {disruption: {consolidateAfter: never}}}`},
	{"consolidateAfter fractional", "NodePool", `{spec: {disruption: {consolidateAfter: 1.5h}}}`},
	{"budget nodes over 100%", "NodePool", `{spec: {disruption: {budgets: [{nodes: "110%"}]}}}`},
	{"budget nodes negative", "NodePool", `{spec: {disruption: {budgets: [{nodes: "-1"}]}}}`},
	{"budget nodes a word", "NodePool", `{spec: {disruption: {budgets: [{nodes: ten}]}}}`},
	{"budget nodes fractional", "NodePool", `{spec: {disruption: {budgets: [{nodes: "1.5"}]}}}`},
	{"budget schedule without duration", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0", schedule: "@daily"}]}}}`},
	{"budget duration without schedule", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0", duration: 1h}]}}}`},
	{"budget schedule of one word", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0", schedule: daily, duration: 1h}]}}}`},
	{"budget schedule unknown macro", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0", schedule: "@weekdays", duration: 1h}]}}}`},
	{"budget duration in days", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0", schedule: "@daily", duration: 1d}]}}}`},
	{"budget duration in seconds", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0", schedule: "@daily", duration: 30s}]}}}`},
	{"budget duration with seconds", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0", schedule: "@daily", duration: 1h30m10s}]}}}`},
	{"budget reason Expired", "NodePool", `{spec: {disruption: {budgets: [{nodes: "1", reasons: [Expired]}]}}}`},
	{"budget reason unknown", "NodePool", `{spec: {disruption: {budgets: [{nodes: "1", reasons: [Bored]}]}}}`},
	{"budget reason twice", "NodePool", `{spec: {disruption: {budgets: [{nodes: "1", reasons: [Empty, Empty]}]}}}`},
	{"51 budgets", "NodePool", `{spec: {disruption: {budgets: ` + many(51, `{nodes: "%d"}`) + `}}}`},

	// NodePool expiry, grace period, limits, weight and replicas.
	{"expireAfter in days", "NodePool", `{spec: {template: {spec: {expireAfter: 30d}}}}`},
	{"expireAfter lower-case never", "NodePool", `{spec: {template: {spec: {expireAfter: never}}}}`},
	{"expireAfter empty", "NodePool", `{spec: {template: {spec: {expireAfter: ""}}}}`},
	{"terminationGracePeriod Never", "NodePool", `{spec: {template: {spec: {terminationGracePeriod: Never}}}}`},
	{"terminationGracePeriod in days", "NodePool", `{spec: {template: {spec: {terminationGracePeriod: 1d}}}}`},
	{"terminationGracePeriod negative", "NodePool", `{spec: {template: {spec: {terminationGracePeriod: -5m}}}}`},
	{"limit not a quantity", "NodePool", `{spec: {limits: {cpu: ten}}}`},
	{"limit with a unit Kubernetes lacks", "NodePool", `{spec: {limits: {memory: 1Gb}}}`},
	{"limit with two points", "NodePool", `{spec: {limits: {nodes: "1.2.3"}}}`},
	{"weight 0", "NodePool", `{spec: {weight: 0}}`},
	{"weight 101", "NodePool", `{spec: {weight: 101}}`},
	{"weight a word", "NodePool", `{spec: {weight: high}}`},
	{"replicas negative", "NodePool", `{spec: {replicas: -1}}`},
	{"static with a cpu limit", "NodePool", `{spec: {replicas: 2, limits: {cpu: "10"}}}`},
	{"static with nodes and cpu limits", "NodePool", `{spec: {replicas: 2, limits: {nodes: "3", cpu: "10"}}}`},
	{"static with weight", "NodePool", `{spec: {replicas: 2, weight: 10}}`},

	// NodePool nodeClassRef and required parts.
	{"nodeClassRef missing", "NodePool", `{spec: {template: {spec: {nodeClassRef: null}}}}`},
	{"nodeClassRef name empty", "NodePool", `{spec: {template: {spec: {nodeClassRef: {name: ""}}}}}`},
	{"nodeClassRef kind empty", "NodePool", `{spec: {template: {spec: {nodeClassRef: {kind: ""}}}}}`},
	{"nodeClassRef group empty", "NodePool", `{spec: {template: {spec: {nodeClassRef: {group: ""}}}}}`},
	{"nodeClassRef group with a version", "NodePool", `{spec: {template: {spec: {nodeClassRef: {group: karpenter.k8s.aws/v1}}}}}`},
	{"nodeClassRef without name", "NodePool", `{spec: {template: {spec: {nodeClassRef: {name: null}}}}}`},
	{"nodeClassRef without kind", "NodePool", `{spec: {template: {spec: {nodeClassRef: {kind: null}}}}}`},
	{"nodeClassRef without group", "NodePool", `{spec: {template: {spec: {nodeClassRef: {group: null}}}}}`},
	{"template without spec", "NodePool", `{spec: {template: {spec: null}}}`},
	{"spec without template", "NodePool", `{spec: {template: null}}`},
	{"NodePool without spec", "NodePool", `{spec: null}`},

	// NodeClaim.
	{"NodeClaim requirement unknown operator", "NodeClaim", `{spec: {requirements: [{key: a, operator: Like, values: [b]}]}}`},
	{"NodeClaim requirement In without values", "NodeClaim", `{spec: {requirements: [{key: a, operator: In}]}}`},
	{"NodeClaim requirement Gt negative", "NodeClaim", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["-1"]}]}}`},
	{"NodeClaim requirement Lte two values", "NodeClaim", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["1", "2"]}]}}`},
	{"NodeClaim requirement Gte not an integer", "NodeClaim", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: [a]}]}}`},
	{"NodeClaim requirement minValues above its values", "NodeClaim", `{spec: {requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [m5.large], minValues: 2}]}}`},
	{"NodeClaim requirement minValues 0", "NodeClaim", `{spec: {requirements: [{key: a, operator: In, values: [b], minValues: 0}]}}`},
	{"NodeClaim requirement key in karpenter.sh", "NodeClaim", `{spec: {requirements: [{key: karpenter.sh/team, operator: Exists}]}}`},
	{"NodeClaim requirement key kubernetes.io/hostname", "NodeClaim", `{spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}}`},
	{"NodeClaim requirement key with an upper-case domain", "NodeClaim", `{spec: {requirements: [{key: Example.com/team, operator: Exists}]}}`},
	{"NodeClaim 101 requirements", "NodeClaim", `{spec: {requirements: ` + many(101, "{key: k%d, operator: Exists}") + `}}`},
	{"NodeClaim requirements missing", "NodeClaim", `{spec: {requirements: null}}`},
	{"NodeClaim taint effect unknown", "NodeClaim", `{spec: {taints: [{key: a, effect: Sometimes}]}}`},
	{"NodeClaim taint key with a space", "NodeClaim", `{spec: {taints: [{key: "bad key", effect: NoSchedule}]}}`},
	{"NodeClaim taint value with a space", "NodeClaim", `{spec: {taints: [{key: a, value: "b c", effect: NoSchedule}]}}`},
	{"NodeClaim startup taint effect unknown", "NodeClaim", `{spec: {startupTaints: [{key: a, effect: Sometimes}]}}`},
	{"NodeClaim startup taint key empty", "NodeClaim", `{spec: {startupTaints: [{key: "", effect: NoSchedule}]}}`},
	{"NodeClaim startup taint value starting with a dash", "NodeClaim", `{spec: {startupTaints: [{key: a, value: "-b", effect: NoSchedule}]}}`},
	{"NodeClaim expireAfter in days", "NodeClaim", `{spec: {expireAfter: 30d}}`},
	{"NodeClaim terminationGracePeriod Never", "NodeClaim", `{spec: {terminationGracePeriod: Never}}`},
	{"NodeClaim nodeClassRef missing", "NodeClaim", `{spec: {nodeClassRef: null}}`},
	{"NodeClaim nodeClassRef group empty", "NodeClaim", `{spec: {nodeClassRef: {group: ""}}}`},
	{"NodeClaim nodeClassRef group with a version", "NodeClaim", `{spec: {nodeClassRef: {group: karpenter.k8s.aws/v1}}}`},
	{"NodeClaim requirement key in karpenter.k8s.aws", "NodeClaim", `{spec: {requirements: [{key: karpenter.k8s.aws/team, operator: Exists}]}}`},
	{"NodeClaim request not a quantity", "NodeClaim", `{spec: {resources: {requests: {cpu: lots}}}}`},

	// EC2NodeClass role and instance profile.
	{"role and instanceProfile", "EC2NodeClass", `{spec: {instanceProfile: p}}`},
	{"neither role nor instanceProfile", "EC2NodeClass", `{spec: {role: null}}`},
	{"role empty", "EC2NodeClass", `{spec: {role: ""}}`},
	{"instanceProfile empty", "EC2NodeClass", `{spec: {role: null, instanceProfile: ""}}`},

	// EC2NodeClass amiSelectorTerms and amiFamily.
	{"amiSelectorTerms missing", "EC2NodeClass", `{spec: {amiSelectorTerms: null}}`},
	{"amiSelectorTerms empty", "EC2NodeClass", `{spec: {amiSelectorTerms: []}}`},
	{"AMI term empty", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{}]}}`},
	{"AMI alias with id", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: al2023@latest, id: ami-123}]}}`},
	{"AMI alias with tags", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: al2023@latest, tags: {a: b}}]}}`},
	{"AMI alias with owner", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: al2023@latest, owner: amazon}]}}`},
	{"AMI alias with another term", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: al2023@latest}, {id: ami-123}]}}`},
	{"AMI id with tags", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-123, tags: {a: b}}]}}`},
	{"AMI id with name", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-123, name: my-image}]}}`},
	{"AMI id with owner", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-123, owner: self}]}}`},
	{"AMI id malformed", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: img-123}]}}`},
	{"AMI alias without version", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: al2023}]}}`},
	{"AMI alias unknown family", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: ubuntu@latest}]}}`},
	{"AMI Windows alias pinned", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: windows2022@v20240101}]}}`},
	{"AMI alias of 31 characters", "EC2NodeClass", `{spec: {amiSelectorTerms: [{alias: al2023@` + letters(24) + `}]}}`},
	{"AMI 31 terms", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: ` + many(31, "{id: ami-%d}") + `}}`},
	{"AMI tag key empty", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{tags: {"": a}}]}}`},
	{"AMI tag value empty", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{tags: {a: ""}}]}}`},
	{"AMI 21 tags", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{tags: {` + manyKeys(21, "a") + `}}]}}`},
	{"amiFamily missing without alias", "EC2NodeClass", `{spec: {amiSelectorTerms: [{id: ami-123}]}}`},
	{"amiFamily unknown", "EC2NodeClass", `{spec: {amiFamily: Ubuntu}}`},
	{"amiFamily AL2 with an al2023 alias", "EC2NodeClass", `{spec: {amiFamily: AL2, amiSelectorTerms: [{alias: al2023@latest}]}}`},
	{"amiFamily AL2023 with an al2 alias", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{alias: al2@latest}]}}`},
	{"amiFamily AL2023 with a bottlerocket alias", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{alias: bottlerocket@latest}]}}`},
	{"amiFamily Bottlerocket with a windows2019 alias", "EC2NodeClass", `{spec: {amiFamily: Bottlerocket, amiSelectorTerms: [{alias: windows2019@latest}]}}`},
	{"amiFamily AL2 with a windows2022 alias", "EC2NodeClass", `{spec: {amiFamily: AL2, amiSelectorTerms: [{alias: windows2022@latest}]}}`},
	{"amiFamily Windows2022 with a windows2025 alias", "EC2NodeClass", `{spec: {amiFamily: Windows2022, amiSelectorTerms: [{alias: windows2025@latest}]}}`},

	// EC2NodeClass subnets, security groups and capacity reservations.
	{"subnetSelectorTerms missing", "EC2NodeClass", `{spec: {subnetSelectorTerms: null}}`},
	{"subnetSelectorTerms empty", "EC2NodeClass", `{spec: {subnetSelectorTerms: []}}`},
	{"subnet term empty", "EC2NodeClass", `{spec: {subnetSelectorTerms: [{}]}}`},
	{"subnet id with tags", "EC2NodeClass", `{spec: {subnetSelectorTerms: [{id: subnet-1, tags: {a: b}}]}}`},
	{"subnet id malformed", "EC2NodeClass", `{spec: {subnetSelectorTerms: [{id: net-1}]}}`},
	{"subnet 31 terms", "EC2NodeClass", `{spec: {subnetSelectorTerms: ` + many(31, "{id: subnet-%d}") + `}}`},
	{"subnet tag value empty", "EC2NodeClass", `{spec: {subnetSelectorTerms: [{tags: {a: ""}}]}}`},
	{"subnet 21 tags", "EC2NodeClass", `{spec: {subnetSelectorTerms: [{tags: {` + manyKeys(21, "a") + `}}]}}`},
	{"securityGroupSelectorTerms missing", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: null}}`},
	{"securityGroupSelectorTerms empty", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: []}}`},
	{"security group term empty", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: [{}]}}`},
	{"security group id with tags", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: [{id: sg-1, tags: {a: b}}]}}`},
	{"security group name with tags", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: [{name: web, tags: {a: b}}]}}`},
	{"security group id with name", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: [{id: sg-1, name: web}]}}`},
	{"security group id malformed", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: [{id: group-1}]}}`},
	{"security group tag key empty", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: [{tags: {"": a}}]}}`},
	{"security group 31 terms", "EC2NodeClass", `{spec: {securityGroupSelectorTerms: ` + many(31, "{id: sg-%d}") + `}}`},
	{"capacity reservation term empty", "EC2NodeClass", `{spec: {capacityReservationSelectorTerms: [{}]}}`},
	{"capacity reservation id with tags", "EC2NodeClass", `{spec: {capacityReservationSelectorTerms: [{id: cr-1, tags: {a: b}}]}}`},
	{"capacity reservation id with instanceMatchCriteria", "EC2NodeClass", `{spec: {capacityReservationSelectorTerms: [{id: cr-1, instanceMatchCriteria: open}]}}`},
	{"capacity reservation id malformed", "EC2NodeClass", `{spec: {capacityReservationSelectorTerms: [{id: res-1}]}}`},
	{"capacity reservation owner malformed", "EC2NodeClass", `{spec: {capacityReservationSelectorTerms: [{tags: {a: b}, ownerID: "12345"}]}}`},
	{"capacity reservation instanceMatchCriteria unknown", "EC2NodeClass", `{spec: {capacityReservationSelectorTerms: [{instanceMatchCriteria: closed}]}}`},

	// EC2NodeClass enclaveOptions and kubelet (free-form, but an object).
	{"enclaveOptions without enabled", "EC2NodeClass", `{spec: {enclaveOptions: {}}}`},
	{"enclaveOptions enabled a string", "EC2NodeClass", `{spec: {enclaveOptions: {enabled: "true"}}}`},
	{"enclaveOptions unknown field", "EC2NodeClass", `{spec: {enclaveOptions: {enabled: true, debug: true}}}`},
	{"kubelet a list", "EC2NodeClass", `{spec: {kubelet: [maxPods]}}`},
	{"kubelet a string", "EC2NodeClass", `{spec: {kubelet: "maxPods: 10"}}`},

	// EC2NodeClass tags.
	{"tag kubernetes.io/cluster/", "EC2NodeClass", `{spec: {tags: {kubernetes.io/cluster/c: owned}}}`},
	{"tag eks:eks-cluster-name", "EC2NodeClass", `{spec: {tags: {"eks:eks-cluster-name": c}}}`},
	{"tag karpenter.sh/nodepool", "EC2NodeClass", `{spec: {tags: {karpenter.sh/nodepool: x}}}`},
	{"tag karpenter.sh/nodeclaim", "EC2NodeClass", `{spec: {tags: {karpenter.sh/nodeclaim: x}}}`},
	{"tag karpenter.k8s.aws/ec2nodeclass", "EC2NodeClass", `{spec: {tags: {karpenter.k8s.aws/ec2nodeclass: x}}}`},
	{"tag key empty", "EC2NodeClass", `{spec: {tags: {"": x}}}`},

	// EC2NodeClass metadata options, disks and instance store.
	{"httpTokens unknown", "EC2NodeClass", `{spec: {metadataOptions: {httpTokens: sometimes}}}`},
	{"httpEndpoint unknown", "EC2NodeClass", `{spec: {metadataOptions: {httpEndpoint: "on"}}}`},
	{"httpProtocolIPv6 unknown", "EC2NodeClass", `{spec: {metadataOptions: {httpProtocolIPv6: "yes"}}}`},
	{"hop limit 0", "EC2NodeClass", `{spec: {metadataOptions: {httpPutResponseHopLimit: 0}}}`},
	{"hop limit 65", "EC2NodeClass", `{spec: {metadataOptions: {httpPutResponseHopLimit: 65}}}`},
	{"two root volumes", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}, {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 20Gi}}]}}`},
	{"volume without size or snapshot", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]}}`},
	{"volume size without unit", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: "100"}}]}}`},
	{"volume size an integer", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100}}]}}`},
	{"volume size 65T", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 65T}}]}}`},
	{"volume size 0Gi", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 0Gi}}]}}`},
	{"volume size in Mi", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100Mi}}]}}`},
	{"volume type unknown", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeType: gp4}}]}}`},
	{"volume initialization rate 99", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {snapshotID: snap-1, volumeInitializationRate: 99}}]}}`},
	{"volume initialization rate 301", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {snapshotID: snap-1, volumeInitializationRate: 301}}]}}`},
	{"volume initialization rate without snapshot", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeInitializationRate: 200}}]}}`},
	{"volume initialization rate with an empty snapshot", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {snapshotID: "", volumeSize: 20Gi, volumeInitializationRate: 200}}]}}`},
	{"51 block device mappings", "EC2NodeClass", `{spec: {blockDeviceMappings: ` + many(51, "{deviceName: /dev/xvd%d, ebs: {volumeSize: 20Gi}}") + `}}`},
	{"instanceStorePolicy unknown", "EC2NodeClass", `{spec: {instanceStorePolicy: RAID1}}`},

	// NodeOverlay.
	{"overlay without spec", "NodeOverlay", `{spec: null}`},
	{"overlay price and priceAdjustment", "NodeOverlay", `{spec: {price: "1.5"}}`},
	{"overlay priceAdjustment without sign", "NodeOverlay", `{spec: {priceAdjustment: "10%"}}`},
	{"overlay priceAdjustment below -100%", "NodeOverlay", `{spec: {priceAdjustment: "-101%"}}`},
	{"overlay priceAdjustment not a number", "NodeOverlay", `{spec: {priceAdjustment: "-ten"}}`},
	{"overlay negative price", "NodeOverlay", `{spec: {priceAdjustment: null, price: "-1"}}`},
	{"overlay price percent", "NodeOverlay", `{spec: {priceAdjustment: null, price: "10%"}}`},
	{"overlay capacity cpu", "NodeOverlay", `{spec: {capacity: {cpu: "2"}}}`},
	{"overlay capacity pods", "NodeOverlay", `{spec: {capacity: {pods: "10", example.com/device: "1"}}}`},
	{"overlay weight 0", "NodeOverlay", `{spec: {weight: 0}}`},
	{"overlay weight 10001", "NodeOverlay", `{spec: {weight: 10001}}`},
	{"overlay In without values", "NodeOverlay", `{spec: {requirements: [{key: a, operator: In}]}}`},
	{"overlay NotIn without values", "NodeOverlay", `{spec: {requirements: [{key: a, operator: NotIn, values: []}]}}`},
	{"overlay Gt not an integer", "NodeOverlay", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [many]}]}}`},
	{"overlay Lte two values", "NodeOverlay", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Lte, values: ["1", "2"]}]}}`},
	{"overlay unknown operator", "NodeOverlay", `{spec: {requirements: [{key: a, operator: Like, values: [b]}]}}`},
	{"overlay key in karpenter.sh", "NodeOverlay", `{spec: {requirements: [{key: karpenter.sh/team, operator: Exists}]}}`},
	{"overlay key hostname", "NodeOverlay", `{spec: {requirements: [{key: kubernetes.io/hostname, operator: In, values: [a]}]}}`},
	{"overlay key in karpenter.k8s.aws", "NodeOverlay", `{spec: {requirements: [{key: karpenter.k8s.aws/team, operator: Exists}]}}`},
	{"overlay key instance-tenancy", "NodeOverlay", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [dedicated]}]}}`},
	{"overlay key capacity-reservation-id", "NodeOverlay", `{spec: {requirements: [{key: karpenter.k8s.aws/capacity-reservation-id, operator: Exists}]}}`},
	{"overlay bad key", "NodeOverlay", `{spec: {requirements: [{key: "bad key", operator: Exists}]}}`},
	{"overlay 101 requirements", "NodeOverlay", `{spec: {requirements: ` + many(101, "{key: k%d, operator: Exists}") + `}}`},
	// CapacityBuffer (autoscaling.x-k8s.io/v1beta1).
	{"CapacityBuffer podTemplateRef without replicas or limits", "CapacityBuffer", `{spec: {replicas: null}}`},
	{"CapacityBuffer podTemplateRef and scalableRef", "CapacityBuffer", `{spec: {scalableRef: {apiGroup: apps, kind: Deployment, name: web}}}`},
	{"CapacityBuffer negative replicas", "CapacityBuffer", `{spec: {replicas: -1}}`},
	{"CapacityBuffer negative percentage", "CapacityBuffer", `{spec: {podTemplateRef: null, scalableRef: {kind: Deployment, name: web}, replicas: null, percentage: -5}}`},
	{"CapacityBuffer podTemplateRef without name", "CapacityBuffer", `{spec: {podTemplateRef: {name: ""}}}`},
	{"CapacityBuffer scalableRef without kind", "CapacityBuffer", `{spec: {podTemplateRef: null, scalableRef: {name: web}}}`},
	{"CapacityBuffer limits not a quantity", "CapacityBuffer", `{spec: {limits: {cpu: lots}}}`},
	{"CapacityBuffer without spec", "CapacityBuffer", `{spec: null}`},
}

// acceptedByKarpenter: objects both Karpenter's CRDs and ours accept.
var acceptedByKarpenter = []compatCase{
	{"NodePool base", "NodePool", `{}`},
	{"NodePool full", "NodePool", `
spec:
  weight: 100
  limits: {cpu: "1000", memory: 1000Gi, nvidia.com/gpu: "8"}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 1h30m
    budgets:
      - {nodes: "10%"}
      - {nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h, reasons: [Underutilized, Empty, Drifted, Unhealthy]}
      - {nodes: "5", schedule: "@daily", duration: 1h30m}
      - {nodes: "100%", schedule: "@hourly", duration: 10m}
  template:
    metadata:
      labels: {team: a, example.com/team: b, karpenter.sh/capacity-type: spot, node-role.kubernetes.io/worker: "", empty: ""}
      annotations: {example.com/anything: "any value at all"}
    spec:
      expireAfter: Never
      terminationGracePeriod: 48h
      taints: [{key: example.com/dedicated, value: gpu, effect: NoSchedule}, {key: a, effect: NoExecute}, {key: b, value: example.com/x, effect: PreferNoSchedule}]
      startupTaints: [{key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}]
      requirements:
        - {key: kubernetes.io/os, operator: In, values: [linux]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand], minValues: 2}
        - {key: topology.kubernetes.io/zone, operator: NotIn, values: [us-east-1a]}
        - {key: node.kubernetes.io/instance-type, operator: Exists, minValues: 10}
        - {key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: ["0"]}
        - {key: karpenter.k8s.aws/instance-memory, operator: Lte, values: ["65536"]}
        - {key: karpenter.k8s.aws/instance-generation, operator: Gte, values: ["5"]}
        - {key: example.com/team, operator: DoesNotExist}
        - {key: team, operator: In, values: [` + letters(63) + `]}
`},
	{"NodePool Never consolidateAfter", "NodePool", `{spec: {disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: Never}}}`},
	{"NodePool Balanced consolidation", "NodePool", `{spec: {disruption: {consolidationPolicy: Balanced, consolidateAfter: 0s}}}`},
	{"NodePool static", "NodePool", `{spec: {replicas: 3, limits: {nodes: "5"}}}`},
	{"NodePool static without limits", "NodePool", `{spec: {replicas: 0}}`},
	{"NodePool weight 1", "NodePool", `{spec: {weight: 1}}`},
	{"NodePool no requirements", "NodePool", `{spec: {template: {spec: {requirements: []}}}}`},
	{"NodePool 100 requirements", "NodePool", `{spec: {template: {spec: {requirements: ` + many(100, "{key: k%d, operator: Exists}") + `}}}}`},
	{"NodePool 100 labels", "NodePool", `{spec: {template: {metadata: {labels: {` + manyKeys(100, "a") + `}}}}}`},
	{"NodePool 50 budgets", "NodePool", `{spec: {disruption: {budgets: ` + many(50, `{nodes: "%d"}`) + `}}}`},
	{"NodePool budget of 0 nodes", "NodePool", `{spec: {disruption: {budgets: [{nodes: "0"}]}}}`},
	{"NodePool expireAfter in seconds", "NodePool", `{spec: {template: {spec: {expireAfter: 1h30m10s}}}}`},
	{"NodePool requirement key of 316 characters", "NodePool", `{spec: {template: {spec: {requirements: [{key: ` + letters(316) + `, operator: Exists}]}}}}`},
	{"NodeClaim base", "NodeClaim", `{}`},
	{"NodeClaim full", "NodeClaim", `
spec:
  expireAfter: 720h
  terminationGracePeriod: 1h
  taints: [{key: example.com/dedicated, value: gpu, effect: NoSchedule}]
  startupTaints: [{key: example.com/init, effect: NoExecute}]
  resources: {requests: {cpu: 1500m, memory: 4Gi, pods: "3"}}
  requirements:
    - {key: karpenter.sh/nodepool, operator: In, values: [default]}
    - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
    - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge], minValues: 2}
    - {key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: ["65"]}
    - {key: team, operator: NotIn, values: [` + letters(64) + `]}
`},
	{"EC2NodeClass base", "EC2NodeClass", `{}`},
	{"EC2NodeClass full", "EC2NodeClass", `
spec:
  amiFamily: AL2023
  amiSelectorTerms: [{alias: al2023@v20240807}]
  subnetSelectorTerms: [{id: subnet-0123abc}, {tags: {karpenter.sh/discovery: c, tier: private}}]
  securityGroupSelectorTerms: [{id: sg-0123abc}, {name: web}, {tags: {karpenter.sh/discovery: c}}]
  capacityReservationSelectorTerms: [{id: cr-0123abc}, {tags: {team: a}, ownerID: "123456789012"}, {instanceMatchCriteria: open}, {tags: {team: b}, instanceMatchCriteria: targeted}]
  associatePublicIPAddress: false
  instanceStorePolicy: RAID0
  detailedMonitoring: true
  context: my-context
  userData: |
    echo hello
  tags: {team: a, kubernetes.io/role: x, karpenter.sh/custom: "y"}
  metadataOptions: {httpEndpoint: enabled, httpProtocolIPv6: enabled, httpPutResponseHopLimit: 64, httpTokens: optional}
  blockDeviceMappings:
    - {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 3000, throughput: 125, encrypted: true, deleteOnTermination: true, kmsKeyID: alias/k}}
    - {deviceName: /dev/xvdb, ebs: {snapshotID: snap-0123, volumeInitializationRate: 300}}
    - {deviceName: /dev/xvdc, ebs: {volumeSize: 64T, volumeType: io2}}
    - {deviceName: /dev/xvdd, ebs: {volumeSize: 58Ti, volumeType: st1}}
    - {deviceName: /dev/xvde, ebs: {volumeSize: 59000Gi, volumeType: sc1}}
    - {deviceName: /dev/xvdf, ebs: {volumeSize: 64000G, volumeType: standard}}
  kubelet:
    clusterDNS: [10.0.0.10]
    maxPods: 110
    podsPerCore: 0
    systemReserved: {cpu: 100m, memory: 100Mi, ephemeral-storage: 1Gi, pid: "1000"}
    kubeReserved: {cpu: "1.5", memory: "1e3", ephemeral-storage: +2Gi, pid: "500"}
    evictionHard: {memory.available: 5%, nodefs.available: 10.25%, nodefs.inodesFree: 100%, imagefs.available: 100.00%, imagefs.inodesFree: "", pid.available: 100Mi}
    evictionSoft: {memory.available: 500Mi, nodefs.available: 15%}
    evictionSoftGracePeriod: {memory.available: 1m, nodefs.available: 1m30s}
    evictionMaxPodGracePeriod: 60
    imageGCHighThresholdPercent: 85
    imageGCLowThresholdPercent: 80
    cpuCFSQuota: true
`},
	{"EC2NodeClass instance profile", "EC2NodeClass", `{spec: {role: null, instanceProfile: KarpenterNodeInstanceProfile}}`},
	{"EC2NodeClass Bottlerocket alias and family", "EC2NodeClass", `{spec: {amiFamily: Bottlerocket, amiSelectorTerms: [{alias: bottlerocket@v1.20.0}]}}`},
	{"EC2NodeClass al2 alias with Custom", "EC2NodeClass", `{spec: {amiFamily: Custom, amiSelectorTerms: [{alias: al2@latest}]}}`},
	{"EC2NodeClass windows2025 alias and family", "EC2NodeClass", `{spec: {amiFamily: Windows2025, amiSelectorTerms: [{alias: windows2025@latest}]}}`},
	{"EC2NodeClass AMI terms with a family", "EC2NodeClass", `{spec: {amiFamily: Custom, amiSelectorTerms: [{id: ami-0123}, {name: my-image-*, owner: self}, {tags: {team: a}}, {ssmParameter: /my/ami}]}}`},
	{"EC2NodeClass 30 subnet terms", "EC2NodeClass", `{spec: {subnetSelectorTerms: ` + many(30, "{id: subnet-%d}") + `}}`},
	{"EC2NodeClass 20 subnet tags", "EC2NodeClass", `{spec: {subnetSelectorTerms: [{tags: {` + manyKeys(20, "a") + `}}]}}`},
	{"EC2NodeClass subnet id with tags in one of two terms", "EC2NodeClass", `{spec: {subnetSelectorTerms: [{id: subnet-1, tags: {a: b}}, {id: subnet-2}]}}`},
	{"EC2NodeClass volume from a snapshot only", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {snapshotID: snap-1}}]}}`},
	// Karpenter v1.9–v1.14 fields: placementGroupSelector is accepted and then refused by the
	// controller (ValidationSucceeded False), the others work.
	{"EC2NodeClass connectionTracking", "EC2NodeClass", `{spec: {connectionTracking: {tcpEstablishedTimeout: 3600}}}`},
	{"EC2NodeClass networkInterfaces", "EC2NodeClass", `{spec: {networkInterfaces: [{networkCardIndex: 0, deviceIndex: 0, interfaceType: interface}]}}`},
	{"EC2NodeClass placementGroupSelector", "EC2NodeClass", `{spec: {placementGroupSelector: {name: pg}}}`},
	{"EC2NodeClass ipPrefixCount", "EC2NodeClass", `{spec: {ipPrefixCount: 1}}`},
	{"EC2NodeClass cpuOptions", "EC2NodeClass", `{spec: {cpuOptions: {nestedVirtualization: enabled}}}`},
	// Karpenter v1.15 (AWS provider v1.15.2): Nitro Enclaves, a free-form kubelet, and the
	// karpenter.k8s.aws labels it made well known (tenancy, reservations, placement groups).
	{"EC2NodeClass enclaveOptions", "EC2NodeClass", `{spec: {enclaveOptions: {enabled: true}}}`},
	{"EC2NodeClass enclaveOptions disabled", "EC2NodeClass", `{spec: {enclaveOptions: {enabled: false}}}`},
	{"EC2NodeClass kubelet fields Karpenter does not read", "EC2NodeClass", `{spec: {kubelet: {maxPods: 20, containerLogMaxSize: 50Mi, shutdownGracePeriod: 30s, featureGates: {A: true}, logging: {format: json}}}}`},
	{"EC2NodeClass kubelet empty", "EC2NodeClass", `{spec: {kubelet: {}}}`},
	// Karpenter v1.14's CRD refused three decimals; v1.15's controller takes any percentage.
	{"EC2NodeClass evictionHard three decimals", "EC2NodeClass", `{spec: {kubelet: {evictionHard: {nodefs.available: 5.555%}}}}`},
	{"NodePool label karpenter.k8s.aws/instance-cpu", "NodePool", `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/instance-cpu: "4"}}}}}`},
	{"NodePool requirement instance-tenancy", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [dedicated]}]}}}}`},
	{"NodePool label instance-tenancy", "NodePool", `{spec: {template: {metadata: {labels: {karpenter.k8s.aws/instance-tenancy: dedicated}}}}}`},
	{"NodePool requirement capacity-reservation-interruptible", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/capacity-reservation-interruptible, operator: DoesNotExist}]}}}}`},
	{"NodePool requirement placement group", "NodePool", `{spec: {template: {spec: {requirements: [{key: karpenter.k8s.aws/placement-group-id, operator: DoesNotExist}, {key: karpenter.k8s.aws/placement-group-partition, operator: DoesNotExist}]}}}}`},
	{"NodeClaim requirement instance-tenancy", "NodeClaim", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-tenancy, operator: In, values: [default, dedicated]}]}}`},
	{"NodeOverlay requirement instance-family", "NodeOverlay", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]}}`},
	{"NodeOverlay base", "NodeOverlay", `{}`},
	{"NodeOverlay absolute discount", "NodeOverlay", `{spec: {priceAdjustment: "-0.05"}}`},
	{"NodeOverlay absolute increase", "NodeOverlay", `{spec: {priceAdjustment: "+1.2"}}`},
	{"NodeOverlay percent increase", "NodeOverlay", `{spec: {priceAdjustment: "+10.5%"}}`},
	{"NodeOverlay -100%", "NodeOverlay", `{spec: {priceAdjustment: "-100%"}}`},
	{"NodeOverlay price", "NodeOverlay", `{spec: {priceAdjustment: null, price: "0.25"}}`},
	{"NodeOverlay capacity", "NodeOverlay", `{spec: {priceAdjustment: null, capacity: {hugepages-2Mi: 1Gi, example.com/device: "2"}}}`},
	{"NodeOverlay weight", "NodeOverlay", `{spec: {weight: 10000}}`},
	{"NodeOverlay nodepool and capacity type", "NodeOverlay", `{spec: {requirements: [{key: karpenter.sh/nodepool, operator: In, values: [default]}, {key: karpenter.sh/capacity-type, operator: NotIn, values: [spot]}]}}`},
	{"NodeOverlay Gte", "NodeOverlay", `{spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ["4"]}]}}`},
	{"NodeOverlay no requirements", "NodeOverlay", `{spec: {requirements: []}}`},
	{"NodeOverlay value of 64 characters", "NodeOverlay", `{spec: {requirements: [{key: team, operator: In, values: [` + letters(64) + `]}]}}`},
	{"CapacityBuffer base", "CapacityBuffer", `{}`},
	{"CapacityBuffer limits only", "CapacityBuffer", `{spec: {replicas: null, limits: {cpu: "10", memory: 20Gi}}}`},
	{"CapacityBuffer scalableRef percentage", "CapacityBuffer", `{spec: {podTemplateRef: null, replicas: null, scalableRef: {apiGroup: apps, kind: Deployment, name: web}, percentage: 20}}`},
	{"CapacityBuffer scalableRef alone", "CapacityBuffer", `{spec: {podTemplateRef: null, replicas: null, scalableRef: {kind: StatefulSet, name: db}}}`},
	{"CapacityBuffer neither ref", "CapacityBuffer", `{spec: {podTemplateRef: null}}`},
	{"CapacityBuffer zero replicas", "CapacityBuffer", `{spec: {replicas: 0}}`},
	{"CapacityBuffer other strategy", "CapacityBuffer", `{spec: {provisioningStrategy: example.com/other}}`},
}

// kubeletRefusedByController: EC2NodeClasses whose kubelet configuration both API servers
// accept (spec.kubelet is free-form, as in Karpenter v1.15) and Karpenter's controller refuses
// (ValidationSucceeded False). Ours must refuse each too: KubeletConfiguration.Validate, or a
// CEL expression (Expressions), which needs the NodeClassCEL gate Karpenter has off by default.
var kubeletRefusedByController = []compatCase{
	{"systemReserved unknown key", "EC2NodeClass", `{spec: {kubelet: {systemReserved: {gpu: "1"}}}}`},
	{"systemReserved negative", "EC2NodeClass", `{spec: {kubelet: {systemReserved: {cpu: "-1"}}}}`},
	{"systemReserved not a quantity", "EC2NodeClass", `{spec: {kubelet: {systemReserved: {memory: lots}}}}`},
	{"systemReserved unit Kubernetes lacks", "EC2NodeClass", `{spec: {kubelet: {systemReserved: {memory: 1Gb}}}}`},
	{"kubeReserved unknown key", "EC2NodeClass", `{spec: {kubelet: {kubeReserved: {pods: "1"}}}}`},
	{"kubeReserved negative", "EC2NodeClass", `{spec: {kubelet: {kubeReserved: {memory: -1Gi}}}}`},
	{"kubeReserved not a quantity", "EC2NodeClass", `{spec: {kubelet: {kubeReserved: {cpu: one}}}}`},
	{"kubeReserved with a space", "EC2NodeClass", `{spec: {kubelet: {kubeReserved: {cpu: "1 m"}}}}`},
	{"evictionHard unknown key", "EC2NodeClass", `{spec: {kubelet: {evictionHard: {memory.free: 1Gi}}}}`},
	{"evictionHard not a quantity", "EC2NodeClass", `{spec: {kubelet: {evictionHard: {memory.available: abc}}}}`},
	{"evictionHard over 100%", "EC2NodeClass", `{spec: {kubelet: {evictionHard: {nodefs.available: 101%}}}}`},
	{"evictionHard percent sign only", "EC2NodeClass", `{spec: {kubelet: {evictionHard: {nodefs.available: "%"}}}}`},
	{"evictionSoft unknown key", "EC2NodeClass", `{spec: {kubelet: {evictionSoft: {memory.free: 1Gi}, evictionSoftGracePeriod: {memory.free: 1m}}}}`},
	{"evictionSoft not a quantity", "EC2NodeClass", `{spec: {kubelet: {evictionSoft: {memory.available: "10 percent"}, evictionSoftGracePeriod: {memory.available: 1m}}}}`},
	{"evictionSoft over 100%", "EC2NodeClass", `{spec: {kubelet: {evictionSoft: {imagefs.available: 100.5%}, evictionSoftGracePeriod: {imagefs.available: 1m}}}}`},
	{"evictionSoft without grace period", "EC2NodeClass", `{spec: {kubelet: {evictionSoft: {memory.available: 1Gi}}}}`},
	{"evictionSoftGracePeriod without evictionSoft", "EC2NodeClass", `{spec: {kubelet: {evictionSoftGracePeriod: {memory.available: 1m}}}}`},
	{"evictionSoftGracePeriod unknown key", "EC2NodeClass", `{spec: {kubelet: {evictionSoft: {memory.available: 1Gi}, evictionSoftGracePeriod: {memory.available: 1m, memory.free: 1m}}}}`},
	{"image GC thresholds inverted", "EC2NodeClass", `{spec: {kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}}}`},
	{"image GC thresholds equal", "EC2NodeClass", `{spec: {kubelet: {imageGCHighThresholdPercent: 60, imageGCLowThresholdPercent: 60}}}`},
	{"imageGCHighThresholdPercent 101", "EC2NodeClass", `{spec: {kubelet: {imageGCHighThresholdPercent: 101}}}`},
	{"imageGCLowThresholdPercent negative", "EC2NodeClass", `{spec: {kubelet: {imageGCLowThresholdPercent: -1}}}`},
	{"maxPods negative", "EC2NodeClass", `{spec: {kubelet: {maxPods: -1}}}`},
	{"podsPerCore negative", "EC2NodeClass", `{spec: {kubelet: {podsPerCore: -1}}}`},
	{"maxPods a CEL expression", "EC2NodeClass", `{spec: {kubelet: {maxPods: "pods * 2"}}}`},
	{"kubelet field unknown", "EC2NodeClass", `{spec: {kubelet: {containerLogMaxSise: 50Mi}}}`},
	{"kubelet field of the wrong type", "EC2NodeClass", `{spec: {kubelet: {containerLogMaxFiles: "5"}}}`},
	{"kubelet registerWithTaints", "EC2NodeClass", `{spec: {kubelet: {registerWithTaints: [{key: a, effect: NoSchedule}]}}}`},
}

// refusedOnlyByUs: objects Karpenter's CRDs accept and ours refuse, each on purpose.
var refusedOnlyByUs = []difference{
	{compatCase{"requirement key in kubernetes.io", "NodePool", `{spec: {template: {spec: {requirements: [{key: kubernetes.io/role, operator: Exists}]}}}}`},
		"the kubernetes.io domain (but for its well-known labels, node.kubernetes.io and node-restriction.kubernetes.io) is restricted in requirements, as in Karpenter v1.0; NodeClaims are built on that rule (pkg/nodepool)"},
	{compatCase{"NodeClaim requirement key in kubernetes.io", "NodeClaim", `{spec: {requirements: [{key: kubernetes.io/role, operator: Exists}]}}`},
		"as for NodePools"},
	{compatCase{"requirement Exists with values", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: Exists, values: [b]}]}}}}`},
		"values are meaningless with Exists; Kubernetes refuses them in node affinity and our scheduler refuses the NodePool at run time, so it is refused here at once"},
	{compatCase{"requirement DoesNotExist with values", "NodePool", `{spec: {template: {spec: {requirements: [{key: a, operator: DoesNotExist, values: [b]}]}}}}`},
		"as Exists"},
	{compatCase{"requirement value of 64 characters", "NodePool", `{spec: {template: {spec: {requirements: [{key: team, operator: In, values: [` + letters(64) + `]}]}}}}`},
		"Karpenter's CRD sets maxLength on the values array, where the API server ignores it, and refuses the NodePool at run time; ours limits each value"},
	{compatCase{"requirement value with a space", "NodePool", `{spec: {template: {spec: {requirements: [{key: team, operator: In, values: ["a b"]}]}}}}`},
		"as the 64-character value: the label value pattern"},
	{compatCase{"label key with a space", "NodePool", `{spec: {template: {metadata: {labels: {"bad key": a}}}}}`},
		"Karpenter refuses an invalid label key only at run time; ours at admission"},
	{compatCase{"label key with an upper-case domain", "NodePool", `{spec: {template: {metadata: {labels: {Example.com/team: a}}}}}`},
		"as the key with a space: a label key's domain is lower case"},
	{compatCase{"AMI id with ssmParameter", "EC2NodeClass", `{spec: {amiFamily: AL2023, amiSelectorTerms: [{id: ami-123, ssmParameter: /my/ami}]}}`},
		"Karpenter resolves such a term by its id and ignores the ssmParameter without a word; ours refuses the term, as it refuses an id with any other field"},
	{compatCase{"volume size Ti without a number", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: Ti}}]}}`},
		"Karpenter's volumeSize pattern has an empty alternative that lets a bare unit through; it is not a quantity and would stop every client from decoding the EC2NodeClass list"},
	{compatCase{"volume size T without a number", "EC2NodeClass", `{spec: {blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: T}}]}}`},
		"as Ti"},
	{compatCase{"EC2NodeClass without spec", "EC2NodeClass", `{spec: null}`},
		"an EC2NodeClass without spec has no role, AMIs, subnets or security groups and can never be ready"},
}

// acceptedOnlyByUs: objects Karpenter's CRDs refuse and ours accept, each on purpose.
var acceptedOnlyByUs = []difference{
	{compatCase{"NodePool requirements missing", "NodePool", `{spec: {template: {spec: {requirements: null}}}}`},
		"no requirements means the same as an empty list, which both accept; Go clients (controller-runtime, this project's own code and tests) send a nil list as no field, so requiring it would refuse their NodePools"},
}

// compatUpdates: changes to existing objects.
var compatUpdates = []compatUpdate{
	{name: "NodePool dynamic to static", kind: "NodePool", create: `{}`, patch: `{spec: {replicas: 3}}`},
	{name: "NodePool static to dynamic", kind: "NodePool", create: `{spec: {replicas: 3}}`, patch: `{spec: {replicas: null}}`},
	{name: "NodePool nodeClassRef kind", kind: "NodePool", create: `{}`, patch: `{spec: {template: {spec: {nodeClassRef: {kind: OtherNodeClass}}}}}`},
	{name: "NodePool nodeClassRef group", kind: "NodePool", create: `{}`, patch: `{spec: {template: {spec: {nodeClassRef: {group: example.com}}}}}`},
	{name: "NodeClaim taints", kind: "NodeClaim", create: `{}`, patch: `{spec: {taints: [{key: a, effect: NoSchedule}]}}`},
	{name: "NodeClaim requirements", kind: "NodeClaim", create: `{}`, patch: `{spec: {requirements: [{key: kubernetes.io/os, operator: In, values: [windows]}]}}`},
	{name: "EC2NodeClass role to neither", kind: "EC2NodeClass", create: `{}`, patch: `{spec: {role: null}}`},
	{name: "EC2NodeClass role changed", kind: "EC2NodeClass", create: `{}`, patch: `{spec: {role: OtherRole}}`,
		why: "Karpenter v1.7 made role mutable, moving nodes to a new instance profile through drift; ours changes the role of the NodeClass's one instance profile in place, which would change running nodes' permissions, so role stays immutable"},
	{name: "EC2NodeClass role to instanceProfile", kind: "EC2NodeClass", create: `{}`, patch: `{spec: {role: null, instanceProfile: p}}`,
		why: "as a role change: the nodes would keep the profile made for the old role"},
	{name: "EC2NodeClass instanceProfile to role", kind: "EC2NodeClass", create: `{spec: {role: null, instanceProfile: p}}`, patch: `{spec: {instanceProfile: null, role: KarpenterNodeRole}}`,
		why: "as a role change"},
}

// startKarpenterServer starts an API server of its own (the project's helper) and replaces the
// project's NodePool, NodeClaim, EC2NodeClass, NodeOverlay and CapacityBuffer CRDs on it by Karpenter's from
// testdata/karpenter: they share names, so they cannot be served side by side.
func startKarpenterServer(t *testing.T) *apiserver.Env {
	t.Helper()
	karpenter, err := apiserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = karpenter.Stop() })
	published := envtest.CRDInstallOptions{Paths: []string{"testdata/karpenter"}, ErrorIfPathMissing: true}
	files, _ := filepath.Glob("testdata/karpenter/*.yaml")
	if err := envtest.ReadCRDFiles(&published); err != nil || len(published.CRDs) != len(files) {
		t.Fatalf("reading testdata/karpenter: %d CRDs, %v", len(published.CRDs), err)
	}
	crds := published.CRDs
	ctx := context.Background()
	for _, crd := range crds {
		ours := &unstructured.Unstructured{}
		ours.SetAPIVersion("apiextensions.k8s.io/v1")
		ours.SetKind("CustomResourceDefinition")
		ours.SetName(crd.Name)
		if err := karpenter.Client.Delete(ctx, ours); err != nil {
			t.Fatalf("deleting our %s: %v", crd.Name, err)
		}
		// A CRD goes once the API server has stopped serving it, which takes longer on a
		// loaded machine (30 s once ran out in CI beside the other packages' servers).
		if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := karpenter.Client.Get(ctx, client.ObjectKeyFromObject(ours), ours)
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		}); err != nil {
			t.Fatalf("waiting for our %s to go: %v", crd.Name, err)
		}
	}
	if _, err := envtest.InstallCRDs(karpenter.Config, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
		t.Fatalf("installing Karpenter's CRDs: %v", err)
	}
	return karpenter
}

// compatObject is the base object of c's kind with c's patch merged over it, named name.
func compatObject(t *testing.T, kind, patch, name string) *unstructured.Unstructured {
	t.Helper()
	obj := baseFor(t, kind)
	changes := map[string]any{}
	if err := yaml.Unmarshal([]byte(patch), &changes); err != nil {
		t.Fatalf("patch %s: %v", patch, err)
	}
	merge(obj, changes)
	u := &unstructured.Unstructured{Object: obj}
	u.SetName(name)
	return u
}

// fields are the fields an API error names (its causes' fields), but for the one the API
// server adds when it skips CEL rules because of other errors.
func fields(err error) map[string]bool {
	out := map[string]bool{}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return out
	}
	for _, cause := range status.Status().Details.Causes {
		if cause.Field != "" && cause.Field != "<nil>" {
			out[cause.Field] = true
		}
	}
	return out
}

// strict is kubectl's default field validation: unknown fields are errors, not dropped.
var strict = client.FieldValidation("Strict")

// admit sends obj to c as a server-side dry run: nothing is stored.
func admit(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	return c.Create(ctx, obj.DeepCopy(), client.DryRunAll, strict)
}

// TestKarpenterCRDCompatibility sends one table of objects to an API server with Karpenter's
// published CRDs and to one with ours: what Karpenter refuses, ours refuse; what it accepts,
// ours accept, but for the deliberate differences of refusedOnlyByUs, which must still be
// differences. Updates are compared too.
func TestKarpenterCRDCompatibility(t *testing.T) {
	ctx := context.Background()
	karpenter := startKarpenterServer(t)
	servers := []struct {
		name string
		c    client.Client
	}{{"Karpenter's CRDs", karpenter.Client}, {"our CRDs", env.Client}}
	// verdicts sends obj to both servers and returns their errors (nil: accepted).
	verdicts := func(t *testing.T, obj *unstructured.Unstructured) (karpenterErr, oursErr error) {
		t.Helper()
		errs := make([]error, len(servers))
		for i, s := range servers {
			errs[i] = admit(ctx, s.c, obj)
			if errs[i] != nil && !apierrors.IsInvalid(errs[i]) && !apierrors.IsBadRequest(errs[i]) {
				t.Fatalf("%s: want accepted or Invalid, got %v", s.name, errs[i])
			}
		}
		return errs[0], errs[1]
	}

	t.Run("refused", func(t *testing.T) {
		for _, tc := range refusedByKarpenter {
			t.Run(tc.name, func(t *testing.T) {
				karpenterErr, oursErr := verdicts(t, compatObject(t, tc.kind, tc.patch, "compat"))
				if karpenterErr == nil {
					t.Fatalf("Karpenter's CRDs accept %s: move it to acceptedByKarpenter", tc.patch)
				}
				if oursErr == nil {
					t.Fatalf("Karpenter refuses %s and we accept it; Karpenter says: %v", tc.patch, karpenterErr)
				}
				ours := fields(oursErr)
				for field := range fields(karpenterErr) {
					if !ours[field] {
						t.Errorf("Karpenter's error names %s and ours does not:\nKarpenter: %v\nours:      %v", field, karpenterErr, oursErr)
					}
				}
				t.Logf("Karpenter: %v\nours:      %v", karpenterErr, oursErr)
			})
		}
	})
	t.Run("accepted", func(t *testing.T) {
		for _, tc := range acceptedByKarpenter {
			t.Run(tc.name, func(t *testing.T) {
				karpenterErr, oursErr := verdicts(t, compatObject(t, tc.kind, tc.patch, "compat"))
				if karpenterErr != nil {
					t.Fatalf("Karpenter's CRDs refuse it: %v", karpenterErr)
				}
				if oursErr != nil {
					t.Fatalf("Karpenter accepts it and we refuse it: %v", oursErr)
				}
			})
		}
	})
	t.Run("kubelet refused by the controller", func(t *testing.T) {
		for _, tc := range kubeletRefusedByController {
			t.Run(tc.name, func(t *testing.T) {
				obj := compatObject(t, tc.kind, tc.patch, "compat")
				karpenterErr, oursErr := verdicts(t, obj)
				if karpenterErr != nil || oursErr != nil {
					t.Fatalf("spec.kubelet is free-form: want both to accept it, got Karpenter's: %v, ours: %v", karpenterErr, oursErr)
				}
				nc := &awsv1.EC2NodeClass{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, nc); err != nil {
					t.Fatal(err)
				}
				errs, expressions := nc.Spec.Kubelet.Validate(), nc.Spec.Kubelet.Expressions()
				if len(errs) == 0 && len(expressions) == 0 {
					t.Fatalf("our controller would take %s", tc.patch)
				}
				t.Logf("refused: %v; expressions: %v", errs, expressions)
			})
		}
	})
	t.Run("refused only by us", func(t *testing.T) {
		for _, tc := range refusedOnlyByUs {
			t.Run(tc.name, func(t *testing.T) {
				karpenterErr, oursErr := verdicts(t, compatObject(t, tc.kind, tc.patch, "compat"))
				if karpenterErr != nil {
					t.Fatalf("Karpenter's CRDs refuse it too (move it to refusedByKarpenter): %v", karpenterErr)
				}
				if oursErr == nil {
					t.Fatalf("we accept it now (move it to acceptedByKarpenter and update docs/crd-validation.md); it was refused because %s", tc.why)
				}
				t.Logf("ours: %v", oursErr)
			})
		}
	})
	t.Run("accepted only by us", func(t *testing.T) {
		for _, tc := range acceptedOnlyByUs {
			t.Run(tc.name, func(t *testing.T) {
				karpenterErr, oursErr := verdicts(t, compatObject(t, tc.kind, tc.patch, "compat"))
				if karpenterErr == nil {
					t.Fatalf("Karpenter's CRDs accept it too: move it to acceptedByKarpenter")
				}
				if oursErr != nil {
					t.Fatalf("we refuse it now (move it to refusedByKarpenter and update docs/crd-validation.md); it was accepted because %s", tc.why)
				}
			})
		}
	})
	t.Run("updates", func(t *testing.T) {
		for i, tc := range compatUpdates {
			t.Run(tc.name, func(t *testing.T) {
				errs := make([]error, len(servers))
				for j, s := range servers {
					obj := compatObject(t, tc.kind, tc.create, fmt.Sprintf("compat-update-%d", i))
					if err := s.c.Create(ctx, obj, strict); err != nil {
						t.Fatalf("%s: create: %v", s.name, err)
					}
					t.Cleanup(func() { _ = s.c.Delete(ctx, obj) })
					changes := map[string]any{}
					if err := yaml.Unmarshal([]byte(tc.patch), &changes); err != nil {
						t.Fatal(err)
					}
					merge(obj.Object, changes)
					errs[j] = s.c.Update(ctx, obj, client.DryRunAll, strict)
					if errs[j] != nil && !apierrors.IsInvalid(errs[j]) {
						t.Fatalf("%s: want accepted or Invalid, got %v", s.name, errs[j])
					}
				}
				karpenterErr, oursErr := errs[0], errs[1]
				switch {
				case tc.why == "" && karpenterErr == nil:
					t.Fatalf("Karpenter's CRDs allow the change %s", tc.patch)
				case tc.why == "" && oursErr == nil:
					t.Fatalf("Karpenter refuses the change %s and we allow it; Karpenter says: %v", tc.patch, karpenterErr)
				case tc.why != "" && karpenterErr != nil:
					t.Fatalf("Karpenter's CRDs refuse the change too (drop why): %v", karpenterErr)
				case tc.why != "" && oursErr == nil:
					t.Fatalf("we allow the change now (drop why and update docs/crd-validation.md); it was refused because %s", tc.why)
				}
				t.Logf("Karpenter: %v\nours:      %v", karpenterErr, oursErr)
			})
		}
	})
	if testing.Verbose() {
		t.Logf("%d objects Karpenter refuses, %d it accepts, %d kubelet configurations its controller refuses, %d only we refuse, %d only we accept, %d updates",
			len(refusedByKarpenter), len(acceptedByKarpenter), len(kubeletRefusedByController), len(refusedOnlyByUs), len(acceptedOnlyByUs), len(compatUpdates))
	}
}
