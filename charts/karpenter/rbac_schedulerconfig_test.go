package chart_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/operator"
)

// schedulerConfigOnly are the grants SCHEDULER_CONFIG in controller.env adds to the sim
// rendering.
var schedulerConfigOnly = []string{
	"ClusterRole: list replicasets.apps",
	"ClusterRole: list replicationcontrollers",
	"ClusterRole: list services",
	"ClusterRole: list statefulsets.apps",
	"ClusterRole: watch replicasets.apps",
	"ClusterRole: watch replicationcontrollers",
	"ClusterRole: watch services",
	"ClusterRole: watch statefulsets.apps",
}

// TestRBACSchedulerConfig runs the controllers with a SCHEDULER_CONFIG as the ServiceAccount of
// the rendering that sets it in controller.env: pending pods of a ReplicaSet, a StatefulSet
// and a ReplicationController, selected by a Service, are given the default constraints and
// launched for. What the setting adds to the RBAC is exactly what that needed, and nothing the
// run did is refused.
func TestRBACSchedulerConfig(t *testing.T) {
	const config = "podTopologySpread: {defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]}"
	set := renderAdding(t, "SCHEDULER_CONFIG", schedulerConfigOnly, "--set-json", `controller.env=[{"name": "SCHEDULER_CONFIG", "value": "`+config+`"}]`)
	if set.env["SCHEDULER_CONFIG"] != config {
		t.Fatalf("the Deployment's SCHEDULER_CONFIG is %q", set.env["SCHEDULER_CONFIG"])
	}
	t.Cleanup(func() {
		deletePods(t)
		env.Purge(t, []client.ObjectList{&corev1.ServiceList{}, &appsv1.ReplicaSetList{}, &appsv1.StatefulSetList{}, &corev1.ReplicationControllerList{}}, "default")
	})
	opts := operator.DefaultOptions()
	opts.SchedulerConfig = set.env["SCHEDULER_CONFIG"]
	op := startAsRendering(t, set, opts)

	labels := map[string]string{"app": "web"}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: testPod("template", "1", nil).Spec}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-rs", Namespace: "default"}, Spec: appsv1.ReplicaSetSpec{Selector: selector, Template: template}}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "web-ss", Namespace: "default"}, Spec: appsv1.StatefulSetSpec{Selector: selector, Template: template}}
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web-rc", Namespace: "default"}, Spec: corev1.ReplicationControllerSpec{Selector: labels, Template: &template}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}
	mustCreate(t, svc, rs, ss, rc)
	yes := true
	var pods []client.Object
	for _, owner := range []struct {
		apiVersion, kind, name string
		uid                    types.UID
	}{{"apps/v1", "ReplicaSet", rs.Name, rs.UID}, {"apps/v1", "StatefulSet", ss.Name, ss.UID}, {"v1", "ReplicationController", rc.Name, rc.UID}} {
		pod := testPod(owner.name+"-0", "1", nil)
		pod.Labels = labels
		pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: owner.apiVersion, Kind: owner.kind, Name: owner.name, UID: owner.uid, Controller: &yes}}
		pods = append(pods, pod)
	}
	mustCreate(t, nodeClass(),
		categoryNodePool())
	mustCreate(t, pods...)
	eventually(t, op, 60*time.Second, "a node launched for the pods", func() (bool, string) {
		claims := countClaims(t)
		return claims > 0, fmt.Sprintf("%d nodeclaims", claims)
	})
	checkAddedGrantsUsed(t, set, schedulerConfigOnly, op.shutdown(t))
}
