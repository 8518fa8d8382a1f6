package validation_test

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/openkarpenter/karpenter/pkg/validation"
)

// builtinBase are valid objects of every kind ValidateBuiltin checks; the cases patch them.
var builtinBase = map[string]string{
	"Deployment": `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: main
          image: registry.k8s.io/pause:3.10
          resources: {requests: {cpu: 500m, memory: 1Gi}}
`,
	"StatefulSet": `
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: default}
spec:
  serviceName: db
  replicas: 2
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: main, image: registry.k8s.io/pause:3.10}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 10Gi}}
`,
	"DaemonSet": `
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: main, image: registry.k8s.io/pause:3.10}]
`,
	"ReplicaSet": `
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web-5d4f, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: main, image: registry.k8s.io/pause:3.10}]
`,
	"Job": `
apiVersion: batch/v1
kind: Job
metadata: {name: batch, namespace: default}
spec:
  completions: 10
  parallelism: 5
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: registry.k8s.io/pause:3.10}]
`,
	"PodDisruptionBudget": `
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec:
  minAvailable: 2
  selector: {matchLabels: {app: web}}
`,
	"PersistentVolumeClaim": `
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 10Gi}}
`,
	"PersistentVolume": `
apiVersion: v1
kind: PersistentVolume
metadata: {name: vol}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123}
`,
	"PodTemplate": `
apiVersion: v1
kind: PodTemplate
metadata: {name: spare, namespace: default}
template:
  metadata: {labels: {app: web}}
  spec:
    containers: [{name: main, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: "1"}}}]
`,
	"StorageClass": `
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
`,
	"RuntimeClass": `
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 250m, memory: 160Mi}}
scheduling: {nodeSelector: {sandbox: kata}, tolerations: [{key: sandbox, operator: Exists, effect: NoSchedule}]}
`,
}

// builtinCases are patches of builtinBase: the mistakes users make, each of which the server
// refuses (invalid) or accepts.
var builtinCases = []struct {
	name, kind, patch string
	invalid           bool
}{
	{name: "valid", kind: "Deployment"},
	{name: "valid", kind: "StatefulSet"},
	{name: "valid", kind: "DaemonSet"},
	{name: "valid", kind: "Job"},
	{name: "valid", kind: "ReplicaSet"},
	{name: "negative replicas", kind: "ReplicaSet", invalid: true, patch: `{spec: {replicas: -2}}`},
	{name: "valid", kind: "PodDisruptionBudget"},
	{name: "valid", kind: "PersistentVolumeClaim"},
	{name: "valid", kind: "PersistentVolume"},
	{name: "valid", kind: "StorageClass"},
	{name: "valid", kind: "PodTemplate"},
	{name: "no containers", kind: "PodTemplate", invalid: true, patch: `{template: {spec: {containers: []}}}`},
	{name: "request above limit", kind: "PodTemplate", invalid: true, patch: `{template: {spec: {containers: [{name: main, image: pause, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}]}}}`},
	{name: "negative cpu request", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {containers: [{name: main, image: x, resources: {requests: {cpu: "-500m"}}}]}}}}`},
	{name: "limit below request", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {containers: [{name: main, image: x, resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}}]}}}}`},
	{name: "maxSkew 0", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {topologySpreadConstraints: [{maxSkew: 0, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}]}}}}`},
	{name: "whenUnsatisfiable unknown", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: Sometimes}]}}}}`},
	{name: "node affinity operator Maybe", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/arch, operator: Maybe, values: [amd64]}]}]}}}}}}}`},
	{name: "pod anti-affinity without topologyKey", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: web}}}]}}}}}}`},
	{name: "hostPort out of range", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {containers: [{name: main, image: x, ports: [{containerPort: 80, hostPort: 99999}]}]}}}}`},
	{name: "toleration Exists with a value", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {tolerations: [{key: a, operator: Exists, value: b}]}}}}`},
	{name: "negative replicas", kind: "Deployment", invalid: true, patch: `{spec: {replicas: -1}}`},
	{name: "selector does not match the template", kind: "Deployment", invalid: true,
		patch: `{spec: {selector: {matchLabels: {app: other}}}}`},
	{name: "label value too long", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {metadata: {labels: {app: web, tier: "` + strings.Repeat("x", 64) + `"}}}}}`},
	{name: "name not a DNS subdomain", kind: "Deployment", invalid: true, patch: `{metadata: {name: Web_1}}`},
	{name: "nodeSelector key invalid", kind: "Deployment", invalid: true,
		patch: `{spec: {template: {spec: {nodeSelector: {"bad key!": x}}}}}`},
	{name: "no containers", kind: "DaemonSet", invalid: true, patch: `{spec: {template: {spec: {containers: []}}}}`},
	{name: "restartPolicy Always", kind: "Job", invalid: true, patch: `{spec: {template: {spec: {restartPolicy: Always}}}}`},
	{name: "negative completions", kind: "Job", invalid: true, patch: `{spec: {completions: -3}}`},
	{name: "minAvailable and maxUnavailable", kind: "PodDisruptionBudget", invalid: true, patch: `{spec: {maxUnavailable: 1}}`},
	{name: "minAvailable over 100%", kind: "PodDisruptionBudget", invalid: true, patch: `{spec: {minAvailable: "150%"}}`},
	{name: "selector operator Maybe", kind: "PodDisruptionBudget", invalid: true,
		patch: `{spec: {selector: {matchLabels: null, matchExpressions: [{key: app, operator: Maybe, values: [web]}]}}}`},
	{name: "no access modes", kind: "PersistentVolumeClaim", invalid: true, patch: `{spec: {accessModes: []}}`},
	{name: "no storage request", kind: "PersistentVolumeClaim", invalid: true, patch: `{spec: {resources: {requests: null}}}`},
	{name: "no capacity", kind: "PersistentVolume", invalid: true, patch: `{spec: {capacity: null}}`},
	{name: "binding mode unknown", kind: "StorageClass", invalid: true, patch: `{volumeBindingMode: Later}`},
	{name: "valid", kind: "RuntimeClass"},
	{name: "handler not a DNS label", kind: "RuntimeClass", invalid: true, patch: `{handler: Kata_1}`},
	{name: "negative overhead", kind: "RuntimeClass", invalid: true, patch: `{overhead: {podFixed: {cpu: "-1"}}}`},
	{name: "replicas without a serviceName", kind: "StatefulSet", patch: `{spec: {serviceName: null}}`},
	{name: "negative volume claim size", kind: "StatefulSet", invalid: true,
		patch: `{spec: {volumeClaimTemplates: [{metadata: {name: data}, spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: "-1Gi"}}}}]}}`},
}

// TestBuiltinAgreesWithTheServer: ValidateBuiltin accepts what the API server accepts and
// refuses what it refuses, with the same causes (field, type, message).
func TestBuiltinAgreesWithTheServer(t *testing.T) {
	invalid := 0
	for _, c := range builtinCases {
		t.Run(c.kind+"/"+c.name, func(t *testing.T) {
			u := patched(t, builtinBase[c.kind], c.patch)
			typed, err := clientgoscheme.Scheme.New(u.GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
				t.Fatal(err)
			}
			typed.GetObjectKind().SetGroupVersionKind(u.GroupVersionKind())
			offline, err := validation.ValidateBuiltin(typed)
			if err != nil {
				t.Fatal(err)
			}
			if got := len(offline) > 0; got != c.invalid {
				t.Errorf("refused offline: %v, want %v (%v)", got, c.invalid, offline.ToAggregate())
			}
			_, serverErr := serverCreate(u)
			requireAgree(t, serverErr, offline, u)
			if c.invalid {
				invalid++
			}
		})
	}
	t.Logf("%d cases, %d invalid, the same verdicts and causes as the API server", len(builtinCases), invalid)
}

// TestBuiltinRefusesOtherKinds: a kind ValidateBuiltin does not know is an error, not a pass.
func TestBuiltinRefusesOtherKinds(t *testing.T) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"})
	if _, err := validation.ValidateBuiltin(u); !errors.Is(err, validation.ErrUnsupportedKind) {
		t.Fatalf("ValidateBuiltin(ConfigMap) = %v, want ErrUnsupportedKind", err)
	}
	if validation.IsBuiltin(schema.GroupKind{Kind: "ConfigMap"}) || !validation.IsBuiltin(schema.GroupKind{Group: "apps", Kind: "Deployment"}) {
		t.Fatal("IsBuiltin is wrong")
	}
}
