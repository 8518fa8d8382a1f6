package memory_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/test/builders"
)

// TestConformance runs every case against the real API server and against the memory client
// and requires identical transcripts. Garbage collection and the other work of
// kube-controller-manager are not in this table: the test API server has no controller manager
// (see memory_test.go for those).
func TestConformance(t *testing.T) {
	runBoth(t, conformanceCases)
}

var generatedName = regexp.MustCompile(`^web-[bcdfghjklmnpqrstvwxz2456789]{5}$`)

var conformanceCases = []conformanceCase{
	{name: "create sets the server's fields", run: func(h *harness) {
		start := h.now()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: h.ns, Labels: map[string]string{"a": "b"}}, Data: map[string]string{"k": "v"}}
		h.must(h.c.Create(h.ctx, cm), "creating configmap")
		h.observe("uid set", cm.UID != "")
		h.observe("resourceVersion set", cm.ResourceVersion != "")
		h.observe("creationTimestamp is now", near(cm.CreationTimestamp.Time, start, 3*time.Second))
		h.observe("creationTimestamp in whole seconds", cm.CreationTimestamp.Nanosecond() == 0)
		h.observe("configmap generation", cm.Generation)
		h.observe("type meta after create", cm.TypeMeta)
		got := &corev1.ConfigMap{}
		h.must(h.c.Get(h.ctx, client.ObjectKeyFromObject(cm), got), "getting configmap")
		h.observe("type meta after get", got.TypeMeta)
		h.observe("same uid and version", got.UID == cm.UID && got.ResourceVersion == cm.ResourceVersion)
		h.observe("data and labels", fmt.Sprint(got.Data, got.Labels))

		pod := testPod(h.ns, "pod", nil, "")
		pod.Status.Phase = corev1.PodRunning
		h.must(h.c.Create(h.ctx, pod), "creating pod")
		h.observe("pod generation", pod.Generation)
		h.observe("pod phase and qos", fmt.Sprint(pod.Status.Phase, " ", pod.Status.QOSClass))
		h.observe("pod termination grace", *pod.Spec.TerminationGracePeriodSeconds)
		guaranteed := testPod(h.ns, "guaranteed", nil, "")
		guaranteed.Spec.Containers[0].Resources.Limits = guaranteed.Spec.Containers[0].Resources.Requests
		h.must(h.c.Create(h.ctx, guaranteed), "creating guaranteed pod")
		h.observe("guaranteed qos", guaranteed.Status.QOSClass)
		best := testPod(h.ns, "best-effort", nil, "")
		best.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		h.must(h.c.Create(h.ctx, best), "creating best-effort pod")
		h.observe("best-effort qos", best.Status.QOSClass)

		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: h.name("node"), Namespace: "ignored"},
			Status:     corev1.NodeStatus{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
		}
		h.must(h.c.Create(h.ctx, node), "creating node")
		h.observe("node namespace, generation, capacity", fmt.Sprintf("%q %d %s", node.Namespace, node.Generation, node.Status.Capacity.Cpu()))

		dep := testDeployment(h.ns, "dep")
		dep.Status.Replicas = 3
		h.must(h.c.Create(h.ctx, dep), "creating deployment")
		h.observe("deployment generation and status", fmt.Sprint(dep.Generation, " ", dep.Status.Replicas))

		nc := builders.NodeClaim(builders.NodeClaimOptions{Name: h.name("nc"), Requirements: amd64})
		nc.Status.ProviderID = "sim:///dropped"
		h.must(h.c.Create(h.ctx, nc), "creating nodeclaim")
		h.observe("nodeclaim generation and status", fmt.Sprintf("%d %q", nc.Generation, nc.Status.ProviderID))
		h.observe("nodeclaim defaults", fmt.Sprint(nc.Spec.ExpireAfter))

		np := builders.NodePool(builders.NodePoolOptions{Name: h.name("np"), Requirements: amd64})
		h.must(h.c.Create(h.ctx, np), "creating nodepool")
		h.observe("nodepool defaults", fmt.Sprintf("%s %s %+v %s", np.Spec.Disruption.ConsolidationPolicy, np.Spec.Disruption.ConsolidateAfter.Duration,
			np.Spec.Disruption.Budgets, np.Spec.Template.Spec.ExpireAfter))

		ns := &corev1.Namespace{}
		h.must(h.c.Get(h.ctx, client.ObjectKey{Name: h.ns}, ns), "getting namespace")
		h.observe("namespace", fmt.Sprint(ns.Spec.Finalizers, " ", ns.Status.Phase, " ", ns.Generation))
		for _, name := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			h.observeErr("system namespace "+name, h.c.Get(h.ctx, client.ObjectKey{Name: name}, &corev1.Namespace{}))
		}
	}},

	{name: "generateName", run: func(h *harness) {
		var names []string
		for range 3 {
			pod := testPod(h.ns, "", nil, "")
			pod.GenerateName = "web-"
			h.must(h.c.Create(h.ctx, pod), "creating pod")
			h.observe("generated name looks like the API server's", generatedName.MatchString(pod.Name))
			names = append(names, pod.Name)
		}
		slices.Sort(names)
		h.observe("names distinct", len(slices.Compact(names)) == 3)
		named := testPod(h.ns, "explicit", nil, "")
		named.GenerateName = "web-"
		h.must(h.c.Create(h.ctx, named), "creating named pod")
		h.observe("an explicit name wins", named.Name)
	}},

	{name: "create errors", run: func(h *harness) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: h.ns}}
		h.must(h.c.Create(h.ctx, cm), "creating configmap")
		h.observeErr("name taken", h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: h.ns}}))
		h.observeErr("resourceVersion set", h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "rv", Namespace: h.ns, ResourceVersion: "7"}}))
		h.observeErr("no name", h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: h.ns}}))
		h.observeErr("invalid name", h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "Not_Valid", Namespace: h.ns}}))
		h.observeErr("missing namespace", h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: h.ns + "-missing"}}))
		h.observeErr("no namespace", h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}}))

		// A namespace held in Terminating by an object with a finalizer refuses new objects.
		term := h.ns + "-term"
		h.must(h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: term}}), "creating namespace")
		h.must(h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: term, Finalizers: []string{"test.io/hold"}}}), "creating held configmap")
		h.must(h.c.Delete(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: term}}), "deleting namespace")
		ns := &corev1.Namespace{}
		h.must(h.c.Get(h.ctx, client.ObjectKey{Name: term}, ns), "getting namespace")
		h.observe("terminating namespace", fmt.Sprint(ns.Status.Phase, " ", ns.DeletionTimestamp != nil, " ", ns.Spec.Finalizers))
		h.observeErr("create in terminating namespace", h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: term}}))
	}},

	{name: "update", run: func(h *harness) {
		dep := testDeployment(h.ns, "d")
		h.must(h.c.Create(h.ctx, dep), "creating deployment")
		stale := dep.DeepCopy()
		rv := dep.ResourceVersion
		dep.Labels = map[string]string{"x": "y"}
		h.must(h.c.Update(h.ctx, dep), "labelling")
		h.observe("metadata change: generation, new version", fmt.Sprint(dep.Generation, " ", dep.ResourceVersion != rv))
		dep.Spec.Replicas = ptr.To[int32](3)
		h.must(h.c.Update(h.ctx, dep), "scaling")
		h.observe("spec change: generation", dep.Generation)
		stale.Spec.Replicas = ptr.To[int32](5)
		h.observeErr("stale update", h.c.Update(h.ctx, stale))
		rv = dep.ResourceVersion
		h.must(h.c.Update(h.ctx, dep), "updating with no change")
		h.observe("no-op update keeps the version", dep.ResourceVersion == rv)
		unconditional := dep.DeepCopy()
		unconditional.ResourceVersion = ""
		unconditional.Annotations = map[string]string{"a": "b"}
		h.must(h.c.Update(h.ctx, unconditional), "updating without a resourceVersion")
		h.observe("unconditional update", fmt.Sprint(unconditional.Annotations, " ", unconditional.Generation))
		forged := unconditional.DeepCopy()
		forged.CreationTimestamp = metav1.NewTime(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
		forged.Generation = 99
		forged.Labels["forged"] = "true"
		h.must(h.c.Update(h.ctx, forged), "updating server fields")
		h.observe("server fields kept", fmt.Sprint(forged.CreationTimestamp.Equal(&unconditional.CreationTimestamp), " ", forged.Generation))
		wrongUID := forged.DeepCopy()
		wrongUID.UID = types.UID("00000000-0000-0000-0000-000000000000")
		h.observeReason("update with another uid", h.c.Update(h.ctx, wrongUID))
		h.observeErr("update missing", h.c.Update(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: h.ns}}))

		ns := &corev1.Namespace{}
		h.must(h.c.Get(h.ctx, client.ObjectKey{Name: h.ns}, ns), "getting namespace")
		ns.Spec.Finalizers = nil
		ns.Labels = map[string]string{"updated": "yes"}
		h.must(h.c.Update(h.ctx, ns), "updating namespace")
		h.observe("namespace spec.finalizers survive update", fmt.Sprint(ns.Spec.Finalizers, " ", ns.Labels["updated"]))

		forged.Status.Replicas = 7
		forged.Labels = map[string]string{"via": "status"}
		forged.Annotations = map[string]string{"via": "status"}
		h.must(h.c.Status().Update(h.ctx, forged), "updating deployment status")
		h.observe("deployment status update: replicas, labels, annotations", fmt.Sprint(forged.Status.Replicas, " ", forged.Labels, " ", forged.Annotations))
	}},

	{name: "status subresource isolation", run: func(h *harness) {
		pod := testPod(h.ns, "pod", nil, "")
		h.must(h.c.Create(h.ctx, pod), "creating pod")
		stale := pod.DeepCopy()
		pod.Status.Phase = corev1.PodRunning
		pod.Labels = map[string]string{"via": "status"}
		pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
		h.must(h.c.Status().Update(h.ctx, pod), "updating pod status")
		h.observe("status update: phase, labels, spec", fmt.Sprint(pod.Status.Phase, " ", pod.Labels, " ", pod.Spec.ActiveDeadlineSeconds))
		pod.Status.Phase = corev1.PodFailed
		pod.Labels = map[string]string{"via": "update"}
		h.must(h.c.Update(h.ctx, pod), "updating pod")
		h.observe("update: phase, labels", fmt.Sprint(pod.Status.Phase, " ", pod.Labels))
		stale.Status.Phase = corev1.PodSucceeded
		h.observeErr("stale status update", h.c.Status().Update(h.ctx, stale))
		h.observeErr("status of a kind without one", h.c.Status().Update(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: h.ns}}))

		nc := builders.NodeClaim(builders.NodeClaimOptions{Name: h.name("nc"), Requirements: amd64})
		h.must(h.c.Create(h.ctx, nc), "creating nodeclaim")
		nc.Status.ProviderID = "sim:///a"
		h.must(h.c.Status().Update(h.ctx, nc), "updating nodeclaim status")
		h.observe("nodeclaim status update: provider, generation", fmt.Sprint(nc.Status.ProviderID, " ", nc.Generation))
		nc.Status.ProviderID = "sim:///b"
		nc.Labels = map[string]string{"updated": "true"}
		h.must(h.c.Update(h.ctx, nc), "updating nodeclaim")
		h.observe("nodeclaim update: provider, generation", fmt.Sprint(nc.Status.ProviderID, " ", nc.Generation))
		base := nc.DeepCopy()
		nc.Status.ImageID = "ami-1"
		h.must(h.c.Status().Patch(h.ctx, nc, client.MergeFrom(base)), "patching nodeclaim status")
		got := &karpv1.NodeClaim{}
		h.must(h.c.Get(h.ctx, client.ObjectKeyFromObject(nc), got), "getting nodeclaim")
		h.observe("status patch", fmt.Sprint(got.Status.ImageID, " ", got.Status.ProviderID, " ", got.Generation))
		staleBase := base.DeepCopy()
		base.Status.ImageID = "ami-2"
		h.observeErr("stale optimistic status patch", h.c.Status().Patch(h.ctx, base, client.MergeFromWithOptions(staleBase, client.MergeFromWithOptimisticLock{})))
	}},

	{name: "finalizers and deletion timestamps", run: func(h *harness) {
		nc := builders.NodeClaim(builders.NodeClaimOptions{Name: h.name("nc"), Requirements: amd64})
		nc.Finalizers = []string{"karpenter.sh/termination"}
		h.must(h.c.Create(h.ctx, nc), "creating nodeclaim")
		start := h.now()
		h.must(h.c.Delete(h.ctx, nc), "deleting nodeclaim")
		h.must(h.get(nc), "getting nodeclaim")
		h.observe("deleting: timestamp now, grace, generation, finalizers", fmt.Sprint(
			nc.DeletionTimestamp != nil && near(nc.DeletionTimestamp.Time, start, 3*time.Second), " ", *nc.DeletionGracePeriodSeconds, " ", nc.Generation, " ", nc.Finalizers))
		rv := nc.ResourceVersion
		h.must(h.c.Delete(h.ctx, nc), "deleting again")
		h.must(h.get(nc), "getting nodeclaim")
		h.observe("second delete changes nothing", nc.ResourceVersion == rv)
		added := nc.DeepCopy()
		added.Finalizers = append(added.Finalizers, "test.io/late")
		h.observeErr("adding a finalizer while deleting", h.c.Update(h.ctx, added))
		base := nc.DeepCopy()
		nc.Finalizers = nil
		h.must(h.c.Patch(h.ctx, nc, client.MergeFrom(base)), "removing the finalizer")
		h.observe("patch response still has the deletion timestamp", nc.DeletionTimestamp != nil)
		h.observeErr("gone after the last finalizer", h.get(nc))

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: h.ns, Finalizers: []string{"test.io/a", "test.io/b"}}}
		h.must(h.c.Create(h.ctx, cm), "creating configmap")
		h.must(h.c.Delete(h.ctx, cm), "deleting configmap")
		h.must(h.get(cm), "getting configmap")
		cm.Finalizers = []string{"test.io/b"}
		h.must(h.c.Update(h.ctx, cm), "removing one finalizer")
		h.observeErr("still there with one finalizer", h.get(cm))
		cm.Finalizers = nil
		h.must(h.c.Update(h.ctx, cm), "removing the last finalizer")
		h.observeErr("gone after update", h.get(cm))
	}},

	{name: "delete", run: func(h *harness) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: h.ns}}
		h.must(h.c.Create(h.ctx, cm), "creating configmap")
		h.observeErr("delete", h.c.Delete(h.ctx, cm))
		h.observeErr("get after delete", h.get(cm))
		h.observeErr("delete again", h.c.Delete(h.ctx, cm))
		other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: h.ns}}
		h.must(h.c.Create(h.ctx, other), "creating configmap")
		h.observeReason("wrong uid precondition", h.c.Delete(h.ctx, other, client.Preconditions{UID: ptr.To(types.UID("nope"))}))
		h.observeReason("stale version precondition", h.c.Delete(h.ctx, other, client.Preconditions{ResourceVersion: ptr.To("1")}))
		h.observeErr("matching preconditions", h.c.Delete(h.ctx, other, client.Preconditions{UID: &other.UID, ResourceVersion: &other.ResourceVersion}))
		for _, name := range []string{"a", "b", "c", "keep"} {
			labels := map[string]string{"group": "doomed"}
			if name == "keep" {
				labels = nil
			}
			h.must(h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: labels}}), "creating configmap")
		}
		h.observeErr("delete all of", h.c.DeleteAllOf(h.ctx, &corev1.ConfigMap{}, client.InNamespace(h.ns), client.MatchingLabels{"group": "doomed"}))
		h.observe("left", h.listNames(&corev1.ConfigMapList{}, client.InNamespace(h.ns)))
	}},

	{name: "pod graceful deletion", run: func(h *harness) {
		bound := testPod(h.ns, "bound", nil, "some-node")
		h.must(h.c.Create(h.ctx, bound), "creating bound pod")
		start := h.now()
		h.must(h.c.Delete(h.ctx, bound), "deleting bound pod")
		h.must(h.get(bound), "getting bound pod")
		h.observe("graceful: timestamp now+30s, grace, generation", fmt.Sprint(
			near(bound.DeletionTimestamp.Time, start.Add(30*time.Second), 3*time.Second), " ", *bound.DeletionGracePeriodSeconds, " ", bound.Generation))
		rv := bound.ResourceVersion
		h.must(h.c.Delete(h.ctx, bound, client.GracePeriodSeconds(60)), "deleting with a longer grace")
		h.must(h.get(bound), "getting bound pod")
		h.observe("a longer grace changes nothing", bound.ResourceVersion == rv)
		h.must(h.c.Delete(h.ctx, bound, client.GracePeriodSeconds(10)), "deleting with a shorter grace")
		h.must(h.get(bound), "getting bound pod")
		h.observe("shorter: timestamp now+10s, grace", fmt.Sprint(near(bound.DeletionTimestamp.Time, start.Add(10*time.Second), 3*time.Second), " ", *bound.DeletionGracePeriodSeconds))
		h.must(h.c.Delete(h.ctx, bound, client.GracePeriodSeconds(0)), "force deleting")
		h.observeErr("force deleted", h.get(bound))

		unbound := testPod(h.ns, "unbound", nil, "")
		h.must(h.c.Create(h.ctx, unbound), "creating unbound pod")
		h.must(h.c.Delete(h.ctx, unbound), "deleting unbound pod")
		h.observeErr("an unbound pod goes at once", h.get(unbound))

		short := testPod(h.ns, "short", nil, "some-node")
		short.Spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
		h.must(h.c.Create(h.ctx, short), "creating pod")
		h.must(h.c.Delete(h.ctx, short), "deleting pod")
		h.must(h.get(short), "getting pod")
		h.observe("its own grace period", *short.DeletionGracePeriodSeconds)

		done := testPod(h.ns, "done", nil, "some-node")
		h.must(h.c.Create(h.ctx, done), "creating pod")
		done.Status.Phase = corev1.PodSucceeded
		h.must(h.c.Status().Update(h.ctx, done), "finishing pod")
		h.must(h.c.Delete(h.ctx, done), "deleting finished pod")
		h.observeErr("a finished pod goes at once", h.get(done))

		held := testPod(h.ns, "held", nil, "some-node")
		held.Finalizers = []string{"test.io/hold"}
		h.must(h.c.Create(h.ctx, held), "creating pod")
		h.must(h.c.Delete(h.ctx, held, client.GracePeriodSeconds(0)), "force deleting a held pod")
		h.must(h.get(held), "getting held pod")
		h.observe("held: grace, generation", fmt.Sprint(*held.DeletionGracePeriodSeconds, " ", held.Generation))
	}},

	{name: "label selectors", run: func(h *harness) {
		other := h.ns + "-other"
		h.must(h.c.Create(h.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}), "creating namespace")
		for _, p := range []struct {
			ns, name string
			labels   map[string]string
		}{
			{h.ns, "b-web-fe", map[string]string{"app": "web", "tier": "fe"}},
			{h.ns, "a-web-be", map[string]string{"app": "web", "tier": "be"}},
			{h.ns, "c-db", map[string]string{"app": "db"}},
			{h.ns, "d-none", nil},
			{other, "a-web", map[string]string{"app": "web"}},
		} {
			if p.labels == nil {
				p.labels = map[string]string{}
			}
			p.labels["case"] = h.ns
			h.must(h.c.Create(h.ctx, testPod(p.ns, p.name, p.labels, "")), "creating pod")
		}
		h.observe("in namespace", h.listNames(&corev1.PodList{}, client.InNamespace(h.ns)))
		h.observe("matching labels", h.listNames(&corev1.PodList{}, client.InNamespace(h.ns), client.MatchingLabels{"app": "web"}))
		sel, err := labels.Parse("tier in (fe,be),app!=db")
		h.must(err, "parsing selector")
		h.observe("set-based selector", h.listNames(&corev1.PodList{}, client.InNamespace(h.ns), client.MatchingLabelsSelector{Selector: sel}))
		h.observe("has labels", h.listNames(&corev1.PodList{}, client.InNamespace(h.ns), client.HasLabels{"tier"}))
		notTier, err := labels.Parse("!tier")
		h.must(err, "parsing selector")
		h.observe("does not have", h.listNames(&corev1.PodList{}, client.InNamespace(h.ns), client.MatchingLabelsSelector{Selector: notTier}))
		h.observe("all namespaces", h.listNames(&corev1.PodList{}, client.MatchingLabels{"case": h.ns, "app": "web"}))
		h.observe("nothing matches", h.listNames(&corev1.PodList{}, client.MatchingLabels{"case": h.ns, "app": "none"}))

		for _, name := range []string{"n2", "n1"} {
			h.must(h.c.Create(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.name(name), Labels: map[string]string{"case": h.ns}}}), "creating node")
		}
		h.observe("cluster-scoped kinds ignore the namespace", h.listNames(&corev1.NodeList{}, client.InNamespace(h.ns), client.MatchingLabels{"case": h.ns}))
	}},

	{name: "field selectors", run: func(h *harness) {
		for _, p := range []struct{ name, node string }{{"p1", "node-a"}, {"p2", "node-b"}, {"p3", ""}} {
			h.must(h.c.Create(h.ctx, testPod(h.ns, p.name, map[string]string{"case": h.ns}, p.node)), "creating pod")
		}
		in := client.InNamespace(h.ns)
		h.observe("spec.nodeName", h.listNames(&corev1.PodList{}, in, client.MatchingFields{"spec.nodeName": "node-a"}))
		h.observe("spec.nodeName empty", h.listNames(&corev1.PodList{}, in, client.MatchingFields{"spec.nodeName": ""}))
		h.observe("spec.nodeName not empty", h.listNames(&corev1.PodList{}, in, client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("spec.nodeName", "")}))
		h.observe("metadata.name", h.listNames(&corev1.PodList{}, in, client.MatchingFields{"metadata.name": "p2"}))
		h.observe("metadata.namespace", h.listNames(&corev1.PodList{}, client.MatchingFields{"metadata.namespace": h.ns}))
		h.observe("status.phase", h.listNames(&corev1.PodList{}, in, client.MatchingFields{"status.phase": "Pending"}))
		h.observe("two terms", h.listNames(&corev1.PodList{}, in, client.MatchingFields{"spec.nodeName": "node-b", "metadata.name": "p2"}))
		for i, obj := range []string{"p1", "p1", "p2"} {
			h.must(h.c.Create(h.ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("e%d", i), Namespace: h.ns},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: h.ns, Name: obj},
				Reason:         "Test", Message: "hello", Type: corev1.EventTypeNormal,
			}), "creating event")
		}
		h.observe("involvedObject.name", h.listNames(&corev1.EventList{}, in, client.MatchingFields{"involvedObject.name": "p1"}))
		h.must(h.c.Create(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.name("cordoned"), Labels: map[string]string{"case": h.ns}}, Spec: corev1.NodeSpec{Unschedulable: true}}), "creating node")
		h.must(h.c.Create(h.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: h.name("open"), Labels: map[string]string{"case": h.ns}}}), "creating node")
		h.observe("spec.unschedulable", h.listNames(&corev1.NodeList{}, client.MatchingLabels{"case": h.ns}, client.MatchingFields{"spec.unschedulable": "true"}))
		h.observeErr("unknown pod field", h.c.List(h.ctx, &corev1.PodList{}, in, client.MatchingFields{"spec.foo": "x"}))
		h.observeErr("unknown nodeclaim field", h.c.List(h.ctx, &karpv1.NodeClaimList{}, client.MatchingFields{"spec.foo": "x"}))
	}},

	{name: "eviction honours disruption budgets", run: func(h *harness) {
		guarded := map[string]string{"app": "guarded"}
		var pods []*corev1.Pod
		for _, name := range []string{"p1", "p2"} {
			pod := testPod(h.ns, name, guarded, "node-1")
			h.must(h.c.Create(h.ctx, pod), "creating pod")
			h.runningReady(pod)
			pods = append(pods, pod)
		}
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "budget", Namespace: h.ns},
			Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: guarded}},
		}
		h.must(h.c.Create(h.ctx, pdb), "creating budget")
		// The test API server has no disruption controller: write the status it would.
		h.budgetStatus(pdb, 0, 2, 2, 2)
		evict := func(pod *corev1.Pod) error {
			return h.c.SubResource("eviction").Create(h.ctx, pod, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}})
		}
		h.observeErr("refused by the budget", evict(pods[0]))
		h.must(h.get(pods[0]), "getting pod")
		h.observe("still running", pods[0].DeletionTimestamp == nil)

		pdb.Spec.MinAvailable = ptr.To(intstr.FromString("50%"))
		h.must(h.c.Update(h.ctx, pdb), "relaxing the budget")
		h.budgetStatus(pdb, 1, 2, 1, 2)
		start := h.now()
		h.observeErr("allowed by the budget", evict(pods[0]))
		h.must(h.get(pods[0]), "getting pod")
		var cond corev1.PodCondition
		for _, c := range pods[0].Status.Conditions {
			if c.Type == corev1.DisruptionTarget {
				cond = c
			}
		}
		h.observe("evicted: terminating gracefully, condition", fmt.Sprint(
			near(pods[0].DeletionTimestamp.Time, start.Add(30*time.Second), 3*time.Second), " ", cond.Status, " ", cond.Reason, " ", cond.Message))
		h.observeErr("evicting a terminating pod", evict(pods[0]))
		h.observeReason("the budget is spent", evict(pods[1]))

		pending := testPod(h.ns, "pending", guarded, "")
		h.must(h.c.Create(h.ctx, pending), "creating pending pod")
		h.observeErr("a pending pod ignores the budget", evict(pending))
		h.observeErr("and is gone", h.get(pending))

		unready := testPod(h.ns, "unready", guarded, "node-1")
		h.must(h.c.Create(h.ctx, unready), "creating pod")
		unready.Status.Phase = corev1.PodRunning
		unready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		h.must(h.c.Status().Update(h.ctx, unready), "marking pod unready")
		// What the disruption controller would now compute: p1 terminating, p2 healthy,
		// unready not: three pods, one healthy, one desired, none allowed.
		h.must(h.get(pdb), "getting the budget")
		pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(1))
		h.must(h.c.Update(h.ctx, pdb), "changing the budget")
		h.budgetStatus(pdb, 0, 1, 1, 3)
		h.observeReason("a healthy pod may not go", evict(pods[1]))
		h.observeErr("an unhealthy pod may go while the budget is met", evict(unready))

		free := testPod(h.ns, "free", map[string]string{"app": "free"}, "node-1")
		h.must(h.c.Create(h.ctx, free), "creating pod")
		h.runningReady(free)
		h.observeErr("no budget", evict(free))
		h.observeErr("missing pod", evict(testPod(h.ns, "missing", nil, "")))
		h.observeErr("name mismatch", h.c.SubResource("eviction").Create(h.ctx, pods[1], &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "other"}}))

		second := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: h.ns},
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: guarded}},
		}
		h.must(h.c.Create(h.ctx, second), "creating a second budget")
		h.budgetStatus(second, 1, 1, 0, 1)
		h.observeErr("two budgets", evict(pods[1]))
	}},

	{name: "binding", run: func(h *harness) {
		pod := testPod(h.ns, "pod", nil, "")
		h.must(h.c.Create(h.ctx, pod), "creating pod")
		bind := func(pod *corev1.Pod, name, kind, node string) error {
			return h.c.SubResource("binding").Create(h.ctx, pod, &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: kind, Name: node}})
		}
		h.observeErr("wrong target kind", bind(pod, "pod", "Pod", "node-1"))
		h.observeErr("name mismatch", bind(pod, "other", "Node", "node-1"))
		h.observeErr("no target", bind(pod, "pod", "Node", ""))
		h.observeErr("bind", bind(pod, "pod", "Node", "node-1"))
		h.must(h.get(pod), "getting pod")
		var cond corev1.PodCondition
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				cond = c
			}
		}
		h.observe("bound: node, scheduled, generation", fmt.Sprint(pod.Spec.NodeName, " ", cond.Status, " ", !cond.LastTransitionTime.IsZero(), " ", pod.Generation))
		h.observeErr("bind again", bind(pod, "", "", "node-2"))
		h.observeErr("missing pod", bind(testPod(h.ns, "missing", nil, ""), "", "", "node-1"))
	}},

	{name: "unstructured", run: func(h *harness) {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": "u", "namespace": h.ns, "labels": map[string]any{"via": "unstructured"}},
			"data":     map[string]any{"k": "v"},
		}}
		h.must(h.c.Create(h.ctx, u), "creating unstructured configmap")
		h.observe("created", fmt.Sprint(u.GetAPIVersion(), " ", u.GetKind(), " ", u.GetResourceVersion() != "", " ", u.Object["data"]))
		typed := &corev1.ConfigMap{}
		h.must(h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "u"}, typed), "getting typed")
		h.observe("typed view", fmt.Sprint(typed.Data, typed.Labels))
		got := &unstructured.Unstructured{}
		got.SetAPIVersion("v1")
		got.SetKind("ConfigMap")
		h.must(h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "u"}, got), "getting unstructured")
		h.observe("unstructured get", fmt.Sprint(got.GetAPIVersion(), " ", got.GetKind(), " ", got.Object["data"], " ", got.GetLabels()))
		got.SetLabels(map[string]string{"via": "update"})
		h.must(h.c.Update(h.ctx, got), "updating unstructured")
		h.must(h.get(typed), "getting typed")
		h.observe("after unstructured update", typed.Labels)
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("v1")
		list.SetKind("ConfigMapList")
		h.must(h.c.List(h.ctx, list, client.InNamespace(h.ns), client.MatchingLabels{"via": "update"}), "listing unstructured")
		var items []string
		for _, item := range list.Items {
			items = append(items, item.GetAPIVersion()+"/"+item.GetKind()+"/"+item.GetName())
		}
		h.observe("unstructured list", fmt.Sprint(list.GetAPIVersion(), " ", list.GetKind(), " ", list.GetResourceVersion() != "", " ", items))

		np := &unstructured.Unstructured{}
		h.must(h.c.Scheme().Convert(builders.NodePool(builders.NodePoolOptions{Name: h.name("np"), Requirements: amd64}), np, nil), "converting nodepool")
		np.SetAPIVersion("karpenter.sh/v1")
		np.SetKind("NodePool")
		delete(np.Object, "status")
		h.must(h.c.Create(h.ctx, np), "creating unstructured nodepool")
		policy, _, _ := unstructured.NestedString(np.Object, "spec", "disruption", "consolidationPolicy")
		h.observe("unstructured nodepool defaults", fmt.Sprint(np.GetNamespace() == "", " ", policy))
		h.observeErr("unstructured delete", h.c.Delete(h.ctx, np))
	}},

	{name: "patch", run: func(h *harness) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: h.ns, Labels: map[string]string{"x": "1"}}, Data: map[string]string{"a": "1", "b": "2"}}
		h.must(h.c.Create(h.ctx, cm), "creating configmap")
		stale := cm.DeepCopy()
		base := cm.DeepCopy()
		cm.Data["a"] = "10"
		delete(cm.Data, "b")
		cm.Labels["y"] = "2"
		h.must(h.c.Patch(h.ctx, cm, client.MergeFrom(base)), "merge patching")
		h.observe("merge patch", fmt.Sprint(cm.Data, cm.Labels))
		staleBase := stale.DeepCopy()
		stale.Data["c"] = "3"
		h.observeErr("stale optimistic patch", h.c.Patch(h.ctx, stale, client.MergeFromWithOptions(staleBase, client.MergeFromWithOptimisticLock{})))
		h.must(h.c.Patch(h.ctx, cm, client.RawPatch(types.JSONPatchType, []byte(
			`[{"op":"add","path":"/data/d","value":"4"},{"op":"remove","path":"/data/a"},{"op":"replace","path":"/metadata/labels/x","value":"9"},{"op":"copy","from":"/data/d","path":"/data/e"}]`))), "json patching")
		h.observe("json patch", fmt.Sprint(cm.Data, cm.Labels))
		h.observeReason("failed json patch test", h.c.Patch(h.ctx, cm, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"test","path":"/data/d","value":"nope"}]`))))
		h.observeReason("json patch of a missing path", h.c.Patch(h.ctx, cm, client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/data/zzz"}]`))))
		h.observeErr("patch missing", h.c.Patch(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: h.ns}}, client.RawPatch(types.MergePatchType, []byte(`{}`))))
		rv := cm.ResourceVersion
		h.must(h.c.Patch(h.ctx, cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"d":"4"}}`))), "patching nothing")
		h.observe("a patch that changes nothing keeps the version", cm.ResourceVersion == rv)

		pod := testPod(h.ns, "pod", nil, "")
		h.must(h.c.Create(h.ctx, pod), "creating pod")
		podBase := pod.DeepCopy()
		pod.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9"
		pod.Labels = map[string]string{"patched": "yes"}
		h.must(h.c.Patch(h.ctx, pod, client.StrategicMergeFrom(podBase)), "strategic merge patching")
		h.observe("strategic merge", fmt.Sprint(len(pod.Spec.Containers), " ", pod.Spec.Containers[0].Image, " ", pod.Spec.Containers[0].Resources.Requests.Cpu(), " ", pod.Labels))
		h.must(h.c.Patch(h.ctx, pod, client.RawPatch(types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}`))), "raw strategic patch")
		h.observe("containers merged by name", fmt.Sprint(len(pod.Spec.Containers), " ", pod.Spec.Containers[0].Image, " ", pod.Spec.Containers[0].Resources.Requests.Memory()))
		// Merge patches member by member: metadata with a null label, the status subresource
		// with a null member and a replaced list, and a patch naming a spec field through status.
		h.must(h.c.Patch(h.ctx, pod, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"patched":null,"m":"1"},"annotations":{"a":"b"}}}`))), "merge patching metadata")
		h.observe("metadata merge patch", fmt.Sprint(pod.Labels, " ", pod.Annotations))
		h.must(h.c.Status().Patch(h.ctx, pod, client.RawPatch(types.MergePatchType, []byte(
			`{"status":{"phase":"Running","message":"m","conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"False","reason":"r"}]}}`))), "merge patching status")
		h.must(h.c.Status().Patch(h.ctx, pod, client.RawPatch(types.MergePatchType, []byte(
			`{"metadata":{"labels":{"s":"1"}},"spec":{"nodeName":"elsewhere"},"status":{"message":null,"conditions":[{"type":"Ready","status":"True"}]}}`))), "merge patching status with nulls")
		h.observe("status merge patch", fmt.Sprint(pod.Status.Phase, " ", pod.Status.Message == "", " ", len(pod.Status.Conditions), " ", pod.Status.Conditions[0].Type, " ", pod.Status.Conditions[0].Status, " ", pod.Spec.NodeName == "", " ", pod.Labels))
		h.observeReason("merge patch with a status of the wrong type", h.c.Status().Patch(h.ctx, pod, client.RawPatch(types.MergePatchType, []byte(`{"status":"Running"}`))))

		np := builders.NodePool(builders.NodePoolOptions{Name: h.name("np"), Requirements: amd64})
		h.must(h.c.Create(h.ctx, np), "creating nodepool")
		h.observeErr("strategic merge on a custom resource", h.c.Patch(h.ctx, np, client.RawPatch(types.StrategicMergePatchType, []byte(`{}`))))
		npBase := np.DeepCopy()
		np.Spec.Weight = ptr.To[int32](10)
		np.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		h.must(h.c.Patch(h.ctx, np, client.MergeFrom(npBase)), "patching nodepool")
		h.observe("main-resource patch: weight, generation, status ignored", fmt.Sprint(*np.Spec.Weight, " ", np.Generation, " ", len(np.Status.Resources)))
	}},

	{name: "metadata-only and list options", run: func(h *harness) {
		for _, name := range []string{"e", "a", "c", "b", "d"} {
			h.must(h.c.Create(h.ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.ns, Labels: map[string]string{"n": name}}}), "creating configmap")
		}
		meta1 := &metav1.PartialObjectMetadata{}
		meta1.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
		h.must(h.c.Get(h.ctx, client.ObjectKey{Namespace: h.ns, Name: "c"}, meta1), "getting metadata")
		h.observe("metadata", fmt.Sprint(meta1.Name, " ", meta1.Labels, " ", meta1.ResourceVersion != "", " ", meta1.APIVersion, " ", meta1.Kind))
		metaList := &metav1.PartialObjectMetadataList{}
		metaList.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		h.must(h.c.List(h.ctx, metaList, client.InNamespace(h.ns)), "listing metadata")
		var names []string
		for _, item := range metaList.Items {
			names = append(names, item.Name)
		}
		h.observe("metadata list", names)

		list := &corev1.ConfigMapList{}
		h.must(h.c.List(h.ctx, list, client.InNamespace(h.ns)), "listing")
		h.observe("list version set, item type meta", fmt.Sprint(list.ResourceVersion != "", " ", list.TypeMeta, " ", list.Items[0].TypeMeta))
		var pages [][]string
		cont := ""
		for range 5 {
			page := &corev1.ConfigMapList{}
			h.must(h.c.List(h.ctx, page, client.InNamespace(h.ns), client.Limit(2), client.Continue(cont)), "listing a page")
			var names []string
			for _, item := range page.Items {
				names = append(names, item.Name)
			}
			pages = append(pages, names)
			if cont = page.Continue; cont == "" {
				break
			}
		}
		h.observe("pages", pages)
	}},

	{name: "resource versions and mapping", run: func(h *harness) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: h.ns}}
		h.must(h.c.Create(h.ctx, cm), "creating configmap")
		first := cm.ResourceVersion
		cm.Data = map[string]string{"a": "b"}
		h.must(h.c.Update(h.ctx, cm), "updating")
		h.observe("versions differ", first != cm.ResourceVersion)
		for _, obj := range []client.Object{&corev1.Pod{}, &corev1.Node{}, &karpv1.NodeClaim{}, &karpv1.NodePool{}, &appsv1.Deployment{}, &policyv1.PodDisruptionBudget{}} {
			namespaced, err := h.c.IsObjectNamespaced(obj)
			gvk, _ := h.c.GroupVersionKindFor(obj)
			h.observe(fmt.Sprintf("%T namespaced", obj), fmt.Sprint(namespaced, " ", err, " ", gvk))
			mapping, err := h.c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
			if err == nil {
				h.observe(fmt.Sprintf("%T mapping", obj), fmt.Sprint(mapping.Resource, " ", mapping.Scope.Name() == meta.RESTScopeNameNamespace))
			} else {
				h.observeErr(fmt.Sprintf("%T mapping", obj), err)
			}
		}
	}},
}

// listNames lists and returns "namespace/name" (or the name for cluster-scoped and
// single-namespace lists) of the items, in the order returned, or the error.
func (h *harness) listNames(list client.ObjectList, opts ...client.ListOption) string {
	h.Helper()
	if err := h.c.List(h.ctx, list, opts...); err != nil {
		return describe(err)
	}
	items, err := meta.ExtractList(list)
	h.must(err, "extracting list")
	var names []string
	for _, item := range items {
		obj := item.(client.Object)
		name := strings.TrimPrefix(obj.GetName(), h.prefix+"-")
		if obj.GetNamespace() != "" && obj.GetNamespace() != h.ns {
			name = obj.GetNamespace() + "/" + name
		}
		names = append(names, name)
	}
	return fmt.Sprint(names)
}

// budgetStatus writes a budget's status as the disruption controller would.
func (h *harness) budgetStatus(pdb *policyv1.PodDisruptionBudget, allowed, healthy, desired, expected int32) {
	h.Helper()
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed, CurrentHealthy: healthy, DesiredHealthy: desired, ExpectedPods: expected,
	}
	h.must(h.c.Status().Update(h.ctx, pdb), "writing budget status")
}

func testDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}
