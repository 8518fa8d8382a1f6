package memory

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/openkarpenter/karpenter/pkg/apis/aws/v1"
	karpv1 "github.com/openkarpenter/karpenter/pkg/apis/karpenter/v1"
)

// deepCopier is a generated API type: a pointer to T with DeepCopyInto.
type deepCopier[T any] interface {
	*T
	client.Object
	DeepCopyInto(*T)
}

// fastCopier copies objects of one Go type without reflection.
type fastCopier struct {
	copyInto func(dst, src client.Object)
	fillList func(objs []client.Object, deep bool) reflect.Value
}

// fastCopiers holds the copiers of the kinds controllers read most; other kinds use reflection
// and DeepCopyObject, which costs one more allocation per object.
var fastCopiers = map[reflect.Type]fastCopier{}

func init() {
	register[corev1.Pod]()
	register[corev1.Node]()
	register[corev1.Namespace]()
	register[corev1.Event]()
	register[corev1.ConfigMap]()
	register[corev1.Secret]()
	register[corev1.Service]()
	register[corev1.PersistentVolume]()
	register[corev1.PersistentVolumeClaim]()
	register[corev1.ReplicationController]()
	register[appsv1.Deployment]()
	register[appsv1.ReplicaSet]()
	register[appsv1.StatefulSet]()
	register[appsv1.DaemonSet]()
	register[batchv1.Job]()
	register[policyv1.PodDisruptionBudget]()
	register[storagev1.StorageClass]()
	register[storagev1.CSINode]()
	register[storagev1.VolumeAttachment]()
	register[coordinationv1.Lease]()
	register[karpv1.NodeClaim]()
	register[karpv1.NodePool]()
	register[awsv1.EC2NodeClass]()
}

// register adds the fast copier of T.
func register[T any, P deepCopier[T]]() {
	fastCopiers[reflect.TypeFor[T]()] = fastCopier{
		copyInto: func(dst, src client.Object) { src.(P).DeepCopyInto(dst.(P)) },
		fillList: func(objs []client.Object, deep bool) reflect.Value {
			out := make([]T, len(objs))
			inParallel(len(objs), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					if deep {
						objs[i].(P).DeepCopyInto(&out[i])
					} else {
						out[i] = *objs[i].(P)
					}
				}
			})
			return reflect.ValueOf(out)
		},
	}
}

// toStored returns a private copy of obj, in the kind's Go type, with an empty TypeMeta (the
// form in which the store keeps objects). Typed objects are deep-copied; unstructured ones are
// converted through the scheme's field mapping.
func toStored(info *kindInfo, obj client.Object) (client.Object, error) {
	var out client.Object
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		out = info.newObject()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, out); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("decoding %s: %v", info, err))
		}
	case *metav1.PartialObjectMetadata:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot write %s from metadata alone", info))
	default:
		if reflect.TypeOf(obj).Elem() != info.typ {
			return nil, fmt.Errorf("object of type %T does not hold a %s", obj, info)
		}
		out = obj.DeepCopyObject().(client.Object)
	}
	out.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return out, nil
}

// copyOut fills dst (a typed object of the kind, an Unstructured or a PartialObjectMetadata)
// with a deep copy of the stored object src.
func copyOut(info *kindInfo, src client.Object, dst runtime.Object) error {
	switch d := dst.(type) {
	case *unstructured.Unstructured:
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(src)
		if err != nil {
			return fmt.Errorf("converting %s to unstructured: %w", info, err)
		}
		d.SetUnstructuredContent(content)
		d.SetGroupVersionKind(info.gvk)
	case *metav1.PartialObjectMetadata:
		objectMeta(src).DeepCopyInto(&d.ObjectMeta)
		d.SetGroupVersionKind(info.gvk)
	default:
		if reflect.TypeOf(dst).Elem() != info.typ {
			return fmt.Errorf("object of type %T cannot hold a %s", dst, info)
		}
		if info.copyInto != nil {
			info.copyInto(d.(client.Object), src)
		} else {
			reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src.DeepCopyObject()).Elem())
		}
	}
	return nil
}

// fillList sets the items of list (a typed list of the kind, an UnstructuredList or a
// PartialObjectMetadataList) to copies of objs. deep=false shares memory with the store
// (client.UnsafeDisableDeepCopy) for typed lists.
func fillList(info *kindInfo, list client.ObjectList, objs []client.Object, deep bool) error {
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		l.Items = make([]unstructured.Unstructured, len(objs))
		for i, o := range objs {
			if err := copyOut(info, o, &l.Items[i]); err != nil {
				return err
			}
		}
		l.SetGroupVersionKind(info.gvk.GroupVersion().WithKind(info.gvk.Kind + "List"))
		return nil
	case *metav1.PartialObjectMetadataList:
		l.Items = make([]metav1.PartialObjectMetadata, len(objs))
		for i, o := range objs {
			if err := copyOut(info, o, &l.Items[i]); err != nil {
				return err
			}
		}
		l.SetGroupVersionKind(info.gvk.GroupVersion().WithKind(info.gvk.Kind + "List"))
		return nil
	}
	items := reflect.ValueOf(list).Elem().FieldByName("Items")
	if !items.IsValid() || items.Kind() != reflect.Slice || items.Type().Elem() != info.typ {
		return fmt.Errorf("list of type %T cannot hold %s items", list, info)
	}
	if info.fillList != nil {
		items.Set(info.fillList(objs, deep))
		return nil
	}
	out := reflect.MakeSlice(items.Type(), len(objs), len(objs))
	inParallel(len(objs), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			o := objs[i]
			if deep {
				o = o.DeepCopyObject().(client.Object)
			}
			out.Index(i).Set(reflect.ValueOf(o).Elem())
		}
	})
	items.Set(out)
	return nil
}

// parallelChunk is the smallest share of a copy worth a goroutine.
const parallelChunk = 1024

// inParallel calls fn over [0, n) split into ranges, concurrently on up to GOMAXPROCS
// goroutines when n is large: copying a big list is the store's most expensive read, and each
// range fills its own part of the result, so the result does not depend on scheduling.
func inParallel(n int, fn func(lo, hi int)) {
	workers := min(goruntime.GOMAXPROCS(0), n/parallelChunk)
	if workers < 2 {
		fn(0, n)
		return
	}
	step := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			fn(lo, hi)
		}(lo, min(lo+step, n))
	}
	wg.Wait()
}

// shallowClone returns a new object of the kind sharing every field of obj except ObjectMeta,
// which is deep-copied so the clone's metadata can be changed. Stored objects are never
// modified, so a new version may share the unchanged parts of the previous one.
func shallowClone(obj client.Object) client.Object {
	v := reflect.ValueOf(obj).Elem()
	out := reflect.New(v.Type())
	out.Elem().Set(v)
	clone := out.Interface().(client.Object)
	m := objectMeta(obj).DeepCopy()
	*objectMeta(clone) = *m
	return clone
}
