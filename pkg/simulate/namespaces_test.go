package simulate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// namespacePool is the NodePool and EC2NodeClass of gettingStarted, for workloads of several
// namespaces.
var namespacePool = strings.Join(strings.SplitN(gettingStarted, "---\n", 4)[:2], "---\n")

// dbDeployment is a Deployment named name in namespace ns of replicas pods labelled app: db,
// each requiring a node of its own among the db pods its affinity term selects (term: the
// YAML of the term's namespaces or namespaceSelector, if any).
func dbDeployment(ns, name string, replicas int, term string) string {
	return fmt.Sprintf(`---
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: db}}
            topologyKey: kubernetes.io/hostname
            %s
      containers: [{name: db, image: db, resources: {requests: {cpu: "1"}}}]
`, name, ns, replicas, term)
}

// TestNamespacesKeepAntiAffinityApart: two namespaces each run a Deployment of two pods
// labelled app: db that keep apart from the db pods of their own namespace (an affinity term
// without namespaces), as Kubernetes reads it: a pod of one namespace may share a node with
// one of the other, so two nodes hold the four pods. Each pod stays in its namespace, and the
// report qualifies the workloads' names (a/db). The two Deployments may have the same name.
func TestNamespacesKeepAntiAffinityApart(t *testing.T) {
	for _, names := range [][2]string{{"db", "db"}, {"dba", "dbb"}} {
		t.Run(names[0]+","+names[1], func(t *testing.T) {
			rep, e := simulated(t, "apart.yaml", namespacePool+dbDeployment("a", names[0], 2, "")+dbDeployment("b", names[1], 2, ""))
			if rep.Pods.Scheduled != 4 || len(rep.Pods.Unscheduled) > 0 {
				t.Fatalf("%d pods scheduled, unscheduled %+v: want all 4", rep.Pods.Scheduled, rep.Pods.Unscheduled)
			}
			if len(rep.Fleet) != 2 {
				t.Errorf("%d nodes at the end, want 2: each a pod of a beside one of b", len(rep.Fleet))
			}
			var workloads []string
			for _, p := range rep.PodHistory {
				workloads = append(workloads, p.Workload+" "+p.Name)
			}
			slices.Sort(workloads)
			a, b := "a/"+names[0], "b/"+names[1]
			if want := []string{a + " " + a + "-1", a + " " + a + "-2", b + " " + b + "-1", b + " " + b + "-2"}; !slices.Equal(workloads, want) {
				t.Errorf("pod history %q, want %q", workloads, want)
			}
			for _, ns := range []string{"a", "b"} {
				var pods corev1.PodList
				if err := e.kube.List(context.Background(), &pods, client.InNamespace(ns)); err != nil {
					t.Fatal(err)
				}
				if len(pods.Items) != 2 {
					t.Errorf("%d pods in namespace %s, want 2", len(pods.Items), ns)
				}
			}
		})
	}
}

// webBeside is a Deployment web of one pod in namespace default that must run on a node with a pod
// labelled app: db of the namespaces its term (namespaces or namespaceSelector) selects.
func webBeside(term string) string {
	return `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
          - labelSelector: {matchLabels: {app: db}}
            topologyKey: kubernetes.io/hostname
            ` + term + `
      containers: [{name: web, image: web, resources: {requests: {cpu: "1"}}}]
`
}

// TestNamespacesPodAffinityAcrossNamespaces: a pod of namespace default with affinity to the
// db pods of namespace data (through namespaces: [data], or a namespaceSelector matching the
// Namespace's label) runs beside them; with the pods all in one namespace it was never
// scheduled. The Namespace manifest is created with its labels.
func TestNamespacesPodAffinityAcrossNamespaces(t *testing.T) {
	namespace := "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: data, labels: {team: data}}\n"
	for _, tc := range []struct{ name, term string }{
		{"namespaces", "namespaces: [data]"},
		{"namespaceSelector", "namespaceSelector: {matchLabels: {team: data}}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, e := simulated(t, "beside.yaml", namespacePool+namespace+dbDeployment("data", "db", 1, "")+webBeside(tc.term))
			if rep.Pods.Scheduled != 2 || len(rep.Pods.Unscheduled) > 0 {
				t.Fatalf("%d pods scheduled, unscheduled %+v: want both", rep.Pods.Scheduled, rep.Pods.Unscheduled)
			}
			ctx := context.Background()
			var web, db corev1.Pod
			if err := e.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-1"}, &web); err != nil {
				t.Fatal(err)
			}
			if err := e.kube.Get(ctx, client.ObjectKey{Namespace: "data", Name: "db-1"}, &db); err != nil {
				t.Fatal(err)
			}
			if web.Spec.NodeName == "" || web.Spec.NodeName != db.Spec.NodeName {
				t.Errorf("web on %q, db on %q: want the same node", web.Spec.NodeName, db.Spec.NodeName)
			}
			var ns corev1.Namespace
			if err := e.kube.Get(ctx, client.ObjectKey{Name: "data"}, &ns); err != nil || ns.Labels["team"] != "data" {
				t.Errorf("namespace data: %v, labels %v: want the manifest's", err, ns.Labels)
			}
		})
	}
}

// TestNamespacesBudgetsAndEvents: a PodDisruptionBudget guards the deployment of its own
// namespace only, and timeline events name a deployment by namespace/name, or by its bare name
// when that is unique; a bare name of several namespaces is refused as ambiguous.
func TestNamespacesBudgetsAndEvents(t *testing.T) {
	pdb := "---\napiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: b}\nspec:\n  minAvailable: 1\n  selector: {matchLabels: {app: db}}\n"
	w, err := ParseWorkload("pdb.yaml", []byte(namespacePool+dbDeployment("a", "db", 2, "")+dbDeployment("b", "db", 2, "")+pdb))
	if err != nil {
		t.Fatal(err)
	}
	guarded := map[string]bool{}
	for _, ev := range w.Timeline {
		if ev.Deploy != nil {
			guarded[ev.Deploy.key()] = ev.Deploy.MinAvailable != nil
		}
	}
	if want := map[string]bool{"a/db": false, "b/db": true}; fmt.Sprint(guarded) != fmt.Sprint(want) {
		t.Errorf("guarded %v, want %v", guarded, want)
	}
	_, e := runWorkload(t, w)
	var budgets policyv1.PodDisruptionBudgetList
	if err := e.kube.List(context.Background(), &budgets); err != nil {
		t.Fatal(err)
	}
	if len(budgets.Items) != 1 || budgets.Items[0].Namespace != "b" {
		t.Errorf("budgets %v, want one in namespace b", budgets.Items)
	}

	deploy := func(ns string) string {
		return fmt.Sprintf("- at: 0s\n  deploy: {name: web, namespace: %s, replicas: 1, pod: {cpu: 100m}}\n", ns)
	}
	head := "name: t\nduration: 10m\nmanifests: |\n  " + strings.ReplaceAll(namespacePool, "\n", "\n  ") + "\ntimeline:\n"
	for _, tc := range []struct{ name, timeline, want string }{
		{"bare name, one namespace", deploy("a") + "- at: 1m\n  scale: {name: web, replicas: 3}\n", ""},
		{"qualified name", deploy("a") + deploy("b") + "- at: 1m\n  scale: {name: b/web, replicas: 3}\n", ""},
		{"ambiguous", deploy("a") + deploy("b") + "- at: 1m\n  scale: {name: web, replicas: 3}\n", `"web" is ambiguous: several namespaces have a deployment of that name; write namespace/name, one of a/web, b/web`},
		{"ambiguous annotate", deploy("a") + deploy("b") + "- at: 1m\n  annotate: {deployment: web, annotations: {x: y}}\n", `"web" is ambiguous`},
		{"ambiguous delete", deploy("a") + deploy("b") + "- at: 1m\n  delete: {name: web}\n", `"web" is ambiguous`},
		{"wrong namespace", deploy("a") + "- at: 1m\n  scale: {name: b/web, replicas: 3}\n", `no deployment "web" in namespace b`},
		{"same name twice in a namespace", deploy("a") + deploy("a"), `"web" is already used by an earlier event in namespace a`},
		{"invalid namespace", deploy("Not_A_Label"), "deploy.namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ParseWorkload("w.yaml", []byte(head+tc.timeline))
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one saying %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rep, _ := runWorkload(t, w)
			if rep.Pods.Created != len(w.Timeline)+1 {
				t.Errorf("%d pods created, want %d: the scale event scales its deployment", rep.Pods.Created, len(w.Timeline)+1)
			}
		})
	}
}

// TestNamespacesSelectorAntiAffinity: a pod keeping apart from the cache pods of the
// namespaces labelled team: data shares a node with a cache pod of another namespace, and not
// with one of data. Read as every namespace, the selector kept it from both.
func TestNamespacesSelectorAntiAffinity(t *testing.T) {
	namespaces := "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: data, labels: {team: data}}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n"
	web := strings.Replace(webBeside("namespaceSelector: {matchLabels: {team: data}}"), "podAffinity:", "podAntiAffinity:", 1)
	for _, tc := range []struct {
		namespace string
		together  bool
	}{{"other", true}, {"data", false}} {
		t.Run(tc.namespace, func(t *testing.T) {
			cache := strings.ReplaceAll(webBeside(""), "web", "db")
			cache = strings.Replace(cache, "metadata: {name: db}", "metadata: {name: db, namespace: "+tc.namespace+"}", 1)
			cache = strings.Replace(cache, "      affinity:\n        podAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n          - labelSelector: {matchLabels: {app: db}}\n            topologyKey: kubernetes.io/hostname\n            \n", "", 1)
			rep, e := simulated(t, "selector.yaml", namespacePool+namespaces+cache+web)
			if rep.Pods.Scheduled != 2 || len(rep.Pods.Unscheduled) > 0 {
				t.Fatalf("%d pods scheduled, unscheduled %+v: want both", rep.Pods.Scheduled, rep.Pods.Unscheduled)
			}
			ctx := context.Background()
			var webPod, db corev1.Pod
			if err := e.kube.Get(ctx, client.ObjectKey{Namespace: "default", Name: "web-1"}, &webPod); err != nil {
				t.Fatal(err)
			}
			if err := e.kube.Get(ctx, client.ObjectKey{Namespace: tc.namespace, Name: "db-1"}, &db); err != nil {
				t.Fatal(err)
			}
			if together := webPod.Spec.NodeName == db.Spec.NodeName; together != tc.together || tc.together && len(rep.Fleet) != 1 {
				t.Errorf("web on %s, db of %s on %s (%d nodes): want them together %v", webPod.Spec.NodeName, tc.namespace, db.Spec.NodeName, len(rep.Fleet), tc.together)
			}
		})
	}
}
