package simulate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
	"github.com/openkarpenter/karpenter/pkg/convert"
	"github.com/openkarpenter/karpenter/pkg/livecluster"
)

// Cluster is a cluster's state as `karpenter simulate --from-cluster` reads it, from a live
// cluster (ReadCluster) or from a dump of one (LoadClusterDump: what `kubectl get
// nodes,pods,daemonsets,pdb,pvc,pv,storageclasses,nodepools,ec2nodeclasses,nodeclaims -A -o
// yaml` prints). Objects of other kinds in a dump are skipped.
type Cluster struct {
	// Source names where it was read: the dump's file, or the kubeconfig context.
	Source string
	// Nodes, Pods, DaemonSets, PodDisruptionBudgets and the storage objects are as read.
	Nodes                []corev1.Node
	Pods                 []corev1.Pod
	DaemonSets           []appsv1.DaemonSet
	PodDisruptionBudgets []policyv1.PodDisruptionBudget
	Claims               []corev1.PersistentVolumeClaim
	Volumes              []corev1.PersistentVolume
	StorageClasses       []storagev1.StorageClass
	// NodeClaims are Karpenter's, read only to name the NodeClaims of the adopted nodes.
	NodeClaims []karpv1.NodeClaim
	// Karpenter are the cluster's NodePools and EC2NodeClasses (and NodeOverlays), decoded,
	// defaulted and validated as the API server does, without their status.
	Karpenter []client.Object
	// Skipped counts the objects of other kinds, by kind.
	Skipped map[string]int
}

// LoadClusterDump reads a dump of a cluster (at most MaxDumpBytes): YAML or JSON documents,
// `kind: List` documents standing for their items. Every problem names the file and line.
func LoadClusterDump(path string) (*Cluster, error) {
	data, err := readDump(path)
	if err != nil {
		return nil, err
	}
	return ParseClusterDump(path, data)
}

// ParseClusterDump parses a dump of a cluster read from file (named in messages).
func ParseClusterDump(file string, data []byte) (*Cluster, error) {
	docs, errs := readDumpDocuments(file, data)
	c := &Cluster{Source: file, Skipped: map[string]int{}}
	var karpenter []document
	seen := map[string]document{} // kind/namespace/name -> the first
	for _, doc := range docs {
		kind := doc.src.Kind
		apiVersion := doc.src.APIVersion
		if doc.isKarpenter() {
			if kind == "NodeClaim" {
				var nc karpv1.NodeClaim
				if err := decodeLenient(doc, &nc); err != nil {
					errs = append(errs, err)
					continue
				}
				c.NodeClaims = append(c.NodeClaims, nc)
				continue
			}
			karpenter = append(karpenter, withoutServerFields(doc))
			continue
		}
		var into kruntime.Object
		var add func()
		switch apiVersion + "/" + kind {
		case "v1/Node":
			var n corev1.Node
			into, add = &n, func() { c.Nodes = append(c.Nodes, n) }
		case "v1/Pod":
			var p corev1.Pod
			into, add = &p, func() { c.Pods = append(c.Pods, p) }
		case "apps/v1/DaemonSet":
			var d appsv1.DaemonSet
			into, add = &d, func() { c.DaemonSets = append(c.DaemonSets, d) }
		case "policy/v1/PodDisruptionBudget":
			var p policyv1.PodDisruptionBudget
			into, add = &p, func() { c.PodDisruptionBudgets = append(c.PodDisruptionBudgets, p) }
		case "v1/PersistentVolumeClaim":
			var p corev1.PersistentVolumeClaim
			into, add = &p, func() { c.Claims = append(c.Claims, p) }
		case "v1/PersistentVolume":
			var p corev1.PersistentVolume
			into, add = &p, func() { c.Volumes = append(c.Volumes, p) }
		case "storage.k8s.io/v1/StorageClass":
			var s storagev1.StorageClass
			into, add = &s, func() { c.StorageClasses = append(c.StorageClasses, s) }
		default:
			if kind == "" {
				errs = append(errs, doc.errorf("kind", "Required value: a dump holds Kubernetes objects with apiVersion and kind (kubectl get ... -o yaml)"))
				continue
			}
			c.Skipped[kind]++
			continue
		}
		if err := decodeLenient(doc, into); err != nil {
			errs = append(errs, err)
			continue
		}
		obj := into.(client.Object)
		if obj.GetName() == "" {
			errs = append(errs, doc.errorf("metadata.name", "Required value"))
			continue
		}
		key := kind + "/" + obj.GetNamespace() + "/" + obj.GetName()
		if earlier, dup := seen[key]; dup {
			errs = append(errs, duplicate(doc, earlier))
			continue
		}
		seen[key] = doc
		add()
	}
	if len(karpenter) > 0 {
		objs, err := decodeObjects(karpenter)
		if err != nil {
			errs = append(errs, err)
		}
		c.Karpenter = objs
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(c.Nodes) == 0 {
		return nil, fmt.Errorf("%s: no Node: a dump of a cluster holds its nodes and pods, such as kubectl get nodes,pods,daemonsets,pdb,pvc,pv,storageclasses,nodepools,ec2nodeclasses,nodeclaims -A -o yaml > cluster.yaml", file)
	}
	return c, nil
}

// decodeLenient decodes a document of a cluster into obj: fields this version of the types does
// not know (a newer cluster's) are passed over, a value of the wrong type is an error at its
// line.
func decodeLenient(doc document, obj kruntime.Object) error {
	if _, err := convert.DecodeStrict(doc.src.JSON, obj); err != nil {
		return doc.src.DecodeError(err, obj, doc.src.JSON)
	}
	return nil
}

// withoutServerFields drops what the API server writes on an object (status, uid,
// resourceVersion, managedFields, …), so that a NodePool read from a cluster is checked as the
// NodePool its owner wrote.
func withoutServerFields(doc document) document {
	raw := map[string]any{}
	for k, v := range doc.raw {
		if k != "status" {
			raw[k] = v
		}
	}
	if md, ok := raw["metadata"].(map[string]any); ok {
		kept := map[string]any{}
		for k, v := range md {
			switch k {
			case "uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "finalizers", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences":
			default:
				kept[k] = v
			}
		}
		if ann, ok := kept["annotations"].(map[string]any); ok {
			a := map[string]any{}
			for k, v := range ann {
				if k != "kubectl.kubernetes.io/last-applied-configuration" && !strings.HasPrefix(k, "karpenter.k8s.aws/ec2nodeclass-hash") && !strings.HasPrefix(k, "karpenter.sh/nodepool-hash") {
					a[k] = v
				}
			}
			if len(a) == 0 {
				delete(kept, "annotations")
			} else {
				kept["annotations"] = a
			}
		}
		raw["metadata"] = kept
	}
	data, err := json.Marshal(raw)
	if err != nil {
		return doc
	}
	doc.raw, doc.src.JSON = raw, data
	return doc
}

// ReadCluster lists a live cluster's objects of the kinds a dump holds, through a reader (it
// can only get and list), and reads them as a dump of them would be read: the same objects give
// the same Cluster from either. A cluster without Karpenter's CRDs has no NodePools.
// source names the cluster in messages (such as `context "prod"`).
func ReadCluster(ctx context.Context, r client.Reader, source string) (*Cluster, error) {
	kinds := []livecluster.Kind{
		livecluster.Nodes, livecluster.Pods, livecluster.DaemonSets, livecluster.PodDisruptionBudgets, livecluster.Claims,
		livecluster.Volumes, livecluster.StorageClasses, livecluster.NodePools, livecluster.NodeClaims, livecluster.EC2NodeClasses,
	}
	lists, err := livecluster.List(ctx, r, kinds, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	var items []json.RawMessage
	for i, list := range lists {
		if list == nil {
			continue // one of Karpenter's kinds, not served
		}
		objs, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			// A typed list's items come without their kind, which the dump reader needs.
			o.GetObjectKind().SetGroupVersionKind(kinds[i].GroupVersionKind)
			data, err := json.Marshal(o)
			if err != nil {
				return nil, err
			}
			items = append(items, data)
		}
	}
	data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return nil, err
	}
	return ParseClusterDump(source, data)
}

// daemonSetOf names the DaemonSet a pod belongs to (its controller), or "".
func daemonSetOf(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "DaemonSet" {
			return o.Name
		}
	}
	return ""
}

// isMirrorPod reports a static pod's mirror (owned by its Node).
func isMirrorPod(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.OwnerReferences, func(o metav1.OwnerReference) bool { return o.Kind == "Node" })
}
