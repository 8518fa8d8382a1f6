package validation_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/openkarpenter/karpenter/pkg/validation"
)

// podRuntimeClasses are the RuntimeClasses the pod cases may name.
const podRuntimeClasses = `
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: pods-test-kata}
handler: kata
overhead: {podFixed: {cpu: 250m, memory: 160Mi}}
scheduling:
  nodeSelector: {sandbox: kata}
  tolerations: [{key: sandbox, operator: Equal, value: kata, effect: NoSchedule}]
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: pods-test-runc}
handler: runc
`

// podCase is a pod as written and what the API server stores or refuses of it.
type podCase struct {
	name string
	pod  string
	// refused is the field of the refusal, empty when the pod is created.
	refused string
	// check tests the stored pod beyond the server's agreement, to say what the case is about.
	check func(t *testing.T, p *corev1.Pod)
}

var podCases = []podCase{
	{name: "limits only request their limits", pod: `
spec:
  containers: [{name: main, image: app, resources: {limits: {cpu: 3500m, memory: 1Gi}}}]
  initContainers: [{name: init, image: app, resources: {limits: {cpu: "1"}}}]
`, check: func(t *testing.T, p *corev1.Pod) {
		if got := p.Spec.Containers[0].Resources.Requests.Cpu(); got.Cmp(resource.MustParse("3500m")) != 0 {
			t.Errorf("cpu request %s, want the limit 3500m", got)
		}
		if got := p.Spec.InitContainers[0].Resources.Requests.Cpu(); got.Cmp(resource.MustParse("1")) != 0 {
			t.Errorf("init container's cpu request %s, want the limit 1", got)
		}
	}},
	{name: "host network ports are host ports", pod: `
spec:
  hostNetwork: true
  containers: [{name: main, image: app, ports: [{containerPort: 8080}]}]
`, check: func(t *testing.T, p *corev1.Pod) {
		if got := p.Spec.Containers[0].Ports[0].HostPort; got != 8080 {
			t.Errorf("hostPort %d, want 8080", got)
		}
	}},
	{name: "matchLabelKeys and mismatchLabelKeys merged", pod: `
metadata: {labels: {app: web, tenant: blue}}
spec:
  containers: [{name: main, image: app}]
  affinity:
    podAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: web}}, matchLabelKeys: [tenant]}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - {topologyKey: kubernetes.io/hostname, labelSelector: {matchExpressions: [{key: tenant, operator: Exists}]}, mismatchLabelKeys: [tenant]}
`, check: func(t *testing.T, p *corev1.Pod) {
		affinity, _ := metav1.LabelSelectorAsSelector(p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector)
		anti, _ := metav1.LabelSelectorAsSelector(p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector)
		blue, red := labels.Set{"app": "web", "tenant": "blue"}, labels.Set{"app": "web", "tenant": "red"}
		if !affinity.Matches(blue) || affinity.Matches(red) {
			t.Errorf("affinity selector %s: want the pods of tenant blue only", affinity)
		}
		if anti.Matches(blue) || !anti.Matches(red) {
			t.Errorf("anti-affinity selector %s: want the pods of other tenants only", anti)
		}
	}},
	{name: "the RuntimeClass's overhead and scheduling", pod: `
spec:
  runtimeClassName: pods-test-kata
  nodeSelector: {disk: ssd}
  tolerations: [{key: dedicated, operator: Exists}]
  containers: [{name: main, image: app, resources: {requests: {cpu: "1"}}}]
`, check: func(t *testing.T, p *corev1.Pod) {
		if got := p.Spec.Overhead.Cpu(); got.Cmp(resource.MustParse("250m")) != 0 {
			t.Errorf("overhead cpu %s, want 250m", got)
		}
		if p.Spec.NodeSelector["sandbox"] != "kata" || p.Spec.NodeSelector["disk"] != "ssd" {
			t.Errorf("nodeSelector %v, want the pod's and the class's", p.Spec.NodeSelector)
		}
		if len(p.Spec.Tolerations) != 2 {
			t.Errorf("tolerations %v, want the pod's and the class's", p.Spec.Tolerations)
		}
	}},
	{name: "a RuntimeClass without overhead", pod: `
spec:
  runtimeClassName: pods-test-runc
  containers: [{name: main, image: app}]
`},
	{name: "a missing RuntimeClass", refused: "spec.runtimeClassName", pod: `
spec:
  runtimeClassName: pods-test-missing
  containers: [{name: main, image: app}]
`},
	{name: "a nodeSelector conflicting with the RuntimeClass's", refused: "spec.nodeSelector[sandbox]", pod: `
spec:
  runtimeClassName: pods-test-kata
  nodeSelector: {sandbox: gvisor}
  containers: [{name: main, image: app}]
`},
	{name: "an overhead other than the RuntimeClass's", refused: "spec.overhead", pod: `
spec:
  runtimeClassName: pods-test-kata
  overhead: {cpu: "1"}
  containers: [{name: main, image: app}]
`},
	{name: "an overhead without a RuntimeClass", refused: "spec.overhead", pod: `
spec:
  overhead: {cpu: "1"}
  containers: [{name: main, image: app}]
`},
}

// TestPodCreationAgreesWithTheServer: PodCreation.Stored stores what the API server stores on
// create (the admission plugins the simulator does not model aside) and refuses what it
// refuses, at the field of the refusal.
func TestPodCreationAgreesWithTheServer(t *testing.T) {
	ctx := context.Background()
	var classes []*nodev1.RuntimeClass
	for _, doc := range strings.Split(podRuntimeClasses, "---") {
		rc := &nodev1.RuntimeClass{}
		if err := yaml.UnmarshalStrict([]byte(doc), rc); err != nil {
			t.Fatal(err)
		}
		classes = append(classes, rc)
		if err := env.Client.Create(ctx, rc.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(ctx, rc) })
	}
	creation, err := validation.NewPodCreation(classes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range podCases {
		t.Run(c.name, func(t *testing.T) {
			written := &corev1.Pod{}
			if err := yaml.UnmarshalStrict([]byte(c.pod), written); err != nil {
				t.Fatal(err)
			}
			written.Name, written.Namespace = "pod", "default"
			before := written.DeepCopy()
			stored, errs := creation.Stored(written)
			if !equality.Semantic.DeepEqual(before, written) {
				t.Error("Stored changed the pod it was given")
			}
			server := written.DeepCopy()
			serverErr := env.Client.Create(ctx, server, client.DryRunAll)
			if c.refused != "" {
				if len(errs) != 1 || errs[0].Field != c.refused {
					t.Fatalf("refused as %v, want one error at %s", errs, c.refused)
				}
				if !apierrors.IsForbidden(serverErr) || !strings.Contains(serverErr.Error(), errs[0].Detail) {
					t.Fatalf("the server refuses it with %v, offline %q", serverErr, errs[0].Detail)
				}
				return
			}
			if len(errs) > 0 || serverErr != nil {
				t.Fatalf("refused: offline %v, by the server %v", errs.ToAggregate(), serverErr)
			}
			want, got := asJSON(unmodelled(server.Spec)), asJSON(stored.Spec)
			if got != want {
				t.Errorf("stored spec\n%s\nthe server's\n%s", got, want)
			}
			if c.check != nil {
				c.check(t, stored)
			}
		})
	}
}

// unmodelled is a spec the server stored without what admission plugins Stored does not run
// added: the Priority plugin's priority and preemption policy and DefaultTolerationSeconds'
// tolerations of not-ready and unreachable nodes.
func unmodelled(spec corev1.PodSpec) corev1.PodSpec {
	spec.Priority, spec.PreemptionPolicy = nil, nil
	var kept []corev1.Toleration
	for _, tol := range spec.Tolerations {
		if tol.Effect == corev1.TaintEffectNoExecute && tol.TolerationSeconds != nil && *tol.TolerationSeconds == 300 &&
			(tol.Key == corev1.TaintNodeNotReady || tol.Key == corev1.TaintNodeUnreachable) {
			continue
		}
		kept = append(kept, tol)
	}
	spec.Tolerations = kept
	return spec
}

// BenchmarkPodCreationStored is the cost of making one pod as the API server stores it (the
// simulator does it once per pod template).
func BenchmarkPodCreationStored(b *testing.B) {
	creation, err := validation.NewPodCreation([]*nodev1.RuntimeClass{{ObjectMeta: metav1.ObjectMeta{Name: "kata"},
		Handler: "kata", Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}})
	if err != nil {
		b.Fatal(err)
	}
	kata := "kata"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"app": "web", "tenant": "blue"}},
		Spec: corev1.PodSpec{RuntimeClassName: &kata, Containers: []corev1.Container{{Name: "main", Image: "app",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, MismatchLabelKeys: []string{"tenant"}}}}}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := creation.Stored(pod); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
