package simulate

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1beta1 "github.com/openkarpenter/karpenter/pkg/apis/autoscaling/v1beta1"
)

// TestCapacityBufferExample: examples/capacity-buffer.yaml against the same cluster without its
// buffer (examples/compare/no-capacity-buffer.yaml). With the buffer the spikes' pods start at
// once and each spike's room is launched again; without, they wait for nodes. The buffer's
// status ends as Karpenter's would.
func TestCapacityBufferExample(t *testing.T) {
	ctx := context.Background()
	w, err := LoadWorkload("../../examples/capacity-buffer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	none, err := w.WithManifests("../../examples/compare/no-capacity-buffer.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEngine(ctx, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	with, err := e.run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	without, err := Run(ctx, none, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pending mean %.1fs p95 %.1fs, $%.2f with the buffer; mean %.1fs p95 %.1fs, $%.2f without",
		with.Pods.PendingMeanS, with.Pods.PendingP95S, with.Cost.Total, without.Pods.PendingMeanS, without.Pods.PendingP95S, without.Cost.Total)
	if with.Pods.PendingP95S > 2 || without.Pods.PendingP95S < 40 {
		t.Errorf("pending p95 %.1fs with the buffer, %.1fs without; want the spikes' pods at once with it and waiting for nodes without", with.Pods.PendingP95S, without.Pods.PendingP95S)
	}
	if with.Pods.PendingMeanS*5 > without.Pods.PendingMeanS || with.Pods.NeverScheduled+without.Pods.NeverScheduled != 0 {
		t.Errorf("pending mean %.1fs with, %.1fs without; never scheduled %d, %d", with.Pods.PendingMeanS, without.Pods.PendingMeanS, with.Pods.NeverScheduled, without.Pods.NeverScheduled)
	}
	if with.Cost.Total <= without.Cost.Total {
		t.Errorf("the buffer's room costs nothing: $%.2f with, $%.2f without", with.Cost.Total, without.Cost.Total)
	}
	// Each of the five spikes takes the room, and the same pass launches it again: claims for
	// the buffer alone.
	relaunched := 0
	for _, ev := range with.Events {
		if ev.Kind == LogLaunch && strings.Contains(ev.Message, " for 0 pods") {
			relaunched++
		}
	}
	if relaunched < 5 {
		t.Errorf("%d launches for the buffer alone, want one at least per spike", relaunched)
	}
	var cb autoscalingv1beta1.CapacityBuffer
	if err := e.kube.Get(ctx, client.ObjectKey{Namespace: defaultNamespace, Name: "web"}, &cb); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionReadyForProvisioning)
	prov := meta.FindStatusCondition(cb.Status.Conditions, autoscalingv1beta1.ConditionProvisioning)
	if ready == nil || ready.Reason != "Resolved" || cb.Status.Replicas == nil || *cb.Status.Replicas != 8 || prov == nil || prov.Reason != "FitsExistingCapacity" {
		t.Errorf("buffer status %+v", cb.Status)
	}
}

// TestCapacityBufferRefused: what a simulation cannot run of a buffer is refused with why.
func TestCapacityBufferRefused(t *testing.T) {
	const pool = `  apiVersion: karpenter.sh/v1
  kind: NodePool
  metadata: {name: default}
  spec:
    template:
      spec:
        requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}]
        nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  ---
  apiVersion: karpenter.k8s.aws/v1
  kind: EC2NodeClass
  metadata: {name: default}
  spec:
    role: R
    amiSelectorTerms: [{alias: al2023@latest}]
    subnetSelectorTerms: [{tags: {a: b}}]
    securityGroupSelectorTerms: [{tags: {a: b}}]
  ---
  apiVersion: v1
  kind: PodTemplate
  metadata: {name: spare}
  template:
    spec:
      containers: [{name: main, image: pause, resources: {requests: {cpu: "1"}}}]
  ---
`
	for _, tc := range []struct{ name, gates, buffer, want string }{
		{"without the gate", "", "podTemplateRef: {name: spare}\n    replicas: 1", "needs the CapacityBuffer feature gate"},
		{"scalableRef", "featureGates: {CapacityBuffer: true}\n", "scalableRef: {kind: Deployment, name: web}\n    percentage: 10", "spec.scalableRef: the simulator's deployments are timeline events"},
		{"missing template", "featureGates: {CapacityBuffer: true}\n", "podTemplateRef: {name: other}\n    replicas: 1", `spec.podTemplateRef: no PodTemplate "other" among the manifests`},
		{"invalid buffer", "featureGates: {CapacityBuffer: true}\n", "podTemplateRef: {name: spare}", "If podTemplateRef is set, replicas or limits must also be set"},
		{"template of another namespace", "featureGates: {CapacityBuffer: true}\n", "podTemplateRef: {name: spare}\n    replicas: 1", `spec.podTemplateRef: no PodTemplate "spare" among the manifests in namespace elsewhere`},
		{"valid, in its own namespace", "featureGates: {CapacityBuffer: true}\n", "podTemplateRef: {name: spare}\n    replicas: 1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The buffer and its template are in namespace elsewhere, but in the case of a
			// template of another namespace.
			manifests := strings.Replace(pool, "metadata: {name: spare}", "metadata: {name: spare, namespace: elsewhere}", 1)
			if tc.name == "template of another namespace" {
				manifests = pool
			}
			doc := "name: t\nduration: 1h\n" + tc.gates + "manifests: |\n" + manifests +
				"  apiVersion: autoscaling.x-k8s.io/v1beta1\n  kind: CapacityBuffer\n  metadata: {name: spare, namespace: elsewhere}\n  spec:\n    " + tc.buffer + "\n"
			w, err := ParseWorkload("w.yaml", []byte(doc))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range w.Objects {
					if o.GetObjectKind().GroupVersionKind().Kind == "CapacityBuffer" && o.GetNamespace() != "elsewhere" {
						t.Errorf("buffer in namespace %q, want the one it names, elsewhere", o.GetNamespace())
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}
