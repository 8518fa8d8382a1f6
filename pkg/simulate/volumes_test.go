package simulate

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// statefulManifests are the getting-started NodePool and EC2NodeClass (zones us-east-1a, -b and
// -c), a default WaitForFirstConsumer StorageClass allowed in us-east-1b and -c only, a
// StatefulSet "db" of 3 pods (one per node) with a claim each, and a Deployment "legacy" whose
// claim is bound beforehand to a volume in us-east-1a.
var statefulManifests = strings.Join(strings.Split(gettingStarted, "\n---\n")[:2], "\n---\n") + `
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: gp3
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions:
      - key: topology.ebs.csi.aws.com/zone
        values: [us-east-1b, us-east-1c]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  replicas: 3
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: db}}}
      containers:
        - name: db
          image: postgres
          resources: {requests: {cpu: "1", memory: 2Gi}}
          volumeMounts: [{name: data, mountPath: /var/lib/postgresql}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec:
        accessModes: [ReadWriteOnce]
        resources: {requests: {storage: 20Gi}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: legacy}
spec:
  capacity: {storage: 50Gi}
  accessModes: [ReadWriteOnce]
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-0123}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: legacy}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  volumeName: legacy
  resources: {requests: {storage: 50Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: legacy}
spec:
  replicas: 1
  selector: {matchLabels: {app: legacy}}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers: [{name: app, image: app, resources: {requests: {cpu: 500m}}}]
      volumes: [{name: data, persistentVolumeClaim: {claimName: legacy}}]
`

// simulated runs a workload and returns its report and the engine, whose cluster is as the run
// left it.
func simulated(t *testing.T, file, text string) (*Report, *engine) {
	t.Helper()
	w, err := ParseWorkload(file, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := newEngine(ctx, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rep, e
}

// TestVolumesPlacePods: stateful pods get nodes where their volumes are. Each of the
// StatefulSet's pods gets its claim data-db-<ordinal> (of the default StorageClass), bound
// once the pod has a node, to a volume in that node's zone, which the class allows; the pod
// whose claim is bound to a volume in us-east-1a goes there. The StatefulSet's pods come one by
// one (OrderedReady), each once the one before runs.
func TestVolumesPlacePods(t *testing.T) {
	rep, e := simulated(t, "stateful.yaml", statefulManifests)
	ctx := context.Background()
	zones := map[string]string{} // node -> zone
	for _, n := range rep.Fleet {
		zones[n.Name] = n.Zone
	}
	var previous *corev1.Pod
	for _, name := range []string{"db-0", "db-1", "db-2", "legacy-1"} {
		pod := &corev1.Pod{}
		if err := e.kube.Get(ctx, client.ObjectKey{Namespace: defaultNamespace, Name: name}, pod); err != nil {
			t.Fatalf("pod %s: %v", name, err)
		}
		if previous != nil && name != "legacy-1" && pod.CreationTimestamp.Before(previous.Status.StartTime) {
			t.Errorf("pod %s created at %s, before %s ran (%s)", name, pod.CreationTimestamp, previous.Name, previous.Status.StartTime)
		}
		previous = pod
		zone := zones[pod.Spec.NodeName]
		if name == "legacy-1" {
			if zone != "us-east-1a" {
				t.Errorf("pod legacy-1 in %q, want us-east-1a with its volume", zone)
			}
			continue
		}
		if zone != "us-east-1b" && zone != "us-east-1c" {
			t.Errorf("pod %s in %q, outside the StorageClass's us-east-1b and -c", name, zone)
		}
		pvc := &corev1.PersistentVolumeClaim{}
		if err := e.kube.Get(ctx, client.ObjectKey{Namespace: defaultNamespace, Name: "data-" + name}, pvc); err != nil {
			t.Fatalf("claim of pod %s: %v", name, err)
		}
		pv := &corev1.PersistentVolume{}
		if err := e.kube.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv); err != nil {
			t.Fatalf("volume of claim %s: %v", pvc.Name, err)
		}
		if pvc.Status.Phase != corev1.ClaimBound || *pvc.Spec.StorageClassName != "gp3" || pvc.Labels["app"] != "db" ||
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != zone {
			t.Errorf("claim %s: %s, class %s, labels %v, volume %s; want bound, of the default class, to a volume in the pod's %s",
				pvc.Name, pvc.Status.Phase, *pvc.Spec.StorageClassName, pvc.Labels, pv.Spec.NodeAffinity.Required, zone)
		}
	}
	for _, n := range rep.Fleet {
		if n.Pods == 0 {
			t.Errorf("node %s in %s has no pod: launched for a pod it never took", n.Name, n.Zone)
		}
	}
	if rep.Pods.Created != 4 || rep.Pods.Scheduled != 4 || rep.Nodes.Launched != 4 {
		t.Errorf("%d of %d pods scheduled on %d nodes launched, want the 3 of db and legacy's 1, a node each", rep.Pods.Scheduled, rep.Pods.Created, rep.Nodes.Launched)
	}
}

// TestMissingStorageClassIsReported: pods whose claim names a StorageClass that does not exist
// get no node (none is launched for them) and the report gives the kube-scheduler's reason; so
// does a pod whose claim has no class, when no default class is among the manifests.
func TestMissingStorageClassIsReported(t *testing.T) {
	manifests := nodePoolManifests + `  ---
  apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: cache}
  spec: {accessModes: [ReadWriteOnce], storageClassName: fast, resources: {requests: {storage: 5Gi}}}
  ---
  apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: files}
  spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
`
	rep, _ := simulated(t, "missing.yaml", "name: missing\nduration: 10m\n"+manifests+`timeline:
  - at: 0s
    deploy: {name: web, replicas: 1, pod: {cpu: 500m, memory: 1Gi}}
  - at: 0s
    deploy:
      name: cache
      replicas: 2
      pod:
        template:
          spec:
            containers: [{name: cache, image: cache, resources: {requests: {cpu: 500m}}}]
            volumes: [{name: data, persistentVolumeClaim: {claimName: cache}}]
  - at: 0s
    deploy:
      name: files
      replicas: 1
      pod:
        template:
          spec:
            containers: [{name: files, image: files, resources: {requests: {cpu: 500m}}}]
            volumes: [{name: data, persistentVolumeClaim: {claimName: files}}]
`)
	want := []Unscheduled{
		{Workload: "cache", Pods: 2, Reason: `storageclass.storage.k8s.io "fast" not found`},
		{Workload: "files", Pods: 1, Reason: "pod has unbound immediate PersistentVolumeClaims"},
	}
	if rep.Pods.NeverScheduled != 3 || !slices.Equal(rep.Pods.Unscheduled, want) {
		t.Errorf("never scheduled %d: %+v, want %+v", rep.Pods.NeverScheduled, rep.Pods.Unscheduled, want)
	}
	if rep.Pods.Scheduled != 1 || rep.Nodes.Launched != 1 {
		t.Errorf("%d pods scheduled on %d nodes launched, want web's one pod on one node", rep.Pods.Scheduled, rep.Nodes.Launched)
	}
	var text strings.Builder
	if err := WriteText(&text, rep); err != nil {
		t.Fatal(err)
	}
	if line := "  cache: 2 pods: " + want[0].Reason + "\n"; !strings.Contains(text.String(), line) {
		t.Errorf("text report lacks %q:\n%s", line, text.String())
	}
}

// TestVolumesInAWorkloadFile: a workload file's manifests may hold StorageClasses and claims
// too; a claim of an Immediate class is bound at once in a zone the class allows, and the
// pods that mount it follow it there.
func TestVolumesInAWorkloadFile(t *testing.T) {
	manifests := nodePoolManifests + `  ---
  apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: now}
  provisioner: ebs.csi.aws.com
  allowedTopologies: [{matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [us-east-1c]}]}]
  ---
  apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: shared}
  spec: {accessModes: [ReadWriteMany], storageClassName: now, resources: {requests: {storage: 1Gi}}}
`
	rep, _ := simulated(t, "files.yaml", "name: files\nduration: 30m\n"+manifests+`timeline:
  - at: 0s
    deploy:
      name: web
      replicas: 4
      pod:
        template:
          spec:
            containers: [{name: web, image: web, resources: {requests: {cpu: "1"}}}]
            volumes: [{name: files, persistentVolumeClaim: {claimName: shared}}]
`)
	if rep.Pods.Scheduled != 4 || len(rep.Fleet) == 0 {
		t.Fatalf("pods %+v on %d nodes, want the 4 scheduled", rep.Pods, len(rep.Fleet))
	}
	for _, n := range rep.Fleet {
		if n.Zone != "us-east-1c" {
			t.Errorf("node %s in %s, want the claim's us-east-1c", n.Name, n.Zone)
		}
	}
}

func TestVolumeManifestErrors(t *testing.T) {
	head := strings.Join(strings.Split(gettingStarted, "\n---\n")[:2], "\n---\n") + "\n---\n"
	claim := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
	for _, tc := range []struct{ name, text, want string }{
		{"unknown claim field", head + strings.Replace(claim, "spec: {", "spec: {bogus: 1, ", 1), `m.yaml:50: PersistentVolumeClaim "data": spec.bogus: unknown field`},
		{"duplicate claim", head + claim + "---\n" + claim, `m.yaml:54: PersistentVolumeClaim "data": metadata.name: Duplicate value: "data": used by an earlier PersistentVolumeClaim (m.yaml:47)`},
		{"nameless class", head + "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nprovisioner: x\n", "m.yaml:47: StorageClass (document 3): metadata.name: Required value"},
		{"nameless claim template", head + `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  template: {metadata: {labels: {app: db}}, spec: {containers: [{name: db, image: db}]}}
  volumeClaimTemplates: [{spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}]
`, `m.yaml:52: StatefulSet "db": spec.template.spec.volumes[0].name: Required value`}, // the API server's words
		{"claim without access modes (the API server's check)", head + strings.Replace(claim, "accessModes: [ReadWriteOnce], ", "", 1),
			"m.yaml:50: PersistentVolumeClaim \"data\": spec.accessModes: Required value: at least 1 access mode is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseWorkload("m.yaml", []byte(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
