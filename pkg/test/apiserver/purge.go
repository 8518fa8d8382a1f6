package apiserver

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Purge deletes every object of the given list kinds, finalizers first, as there is no
// controller-manager or operator left to remove them; then, for each namespace given, its pods
// with no grace period. Tests call it from t.Cleanup so the next test starts from an empty
// cluster. Failures other than "not found" are reported with t.Errorf.
func (e *Env) Purge(t testing.TB, lists []client.ObjectList, podNamespaces ...string) {
	t.Helper()
	ctx := context.Background()
	for _, list := range lists {
		if err := e.Client.List(ctx, list); err != nil {
			t.Errorf("purge: listing %T: %v", list, err)
			continue
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Errorf("purge: %v", err)
			continue
		}
		for _, item := range items {
			obj := item.(client.Object)
			if len(obj.GetFinalizers()) > 0 {
				// A merge patch, so a status write since the list does not conflict.
				patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
				obj.SetFinalizers(nil)
				if err := e.Client.Patch(ctx, obj, patch); client.IgnoreNotFound(err) != nil {
					t.Errorf("purge: removing finalizers of %s: %v", obj.GetName(), err)
				}
			}
			if err := e.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				t.Errorf("purge: deleting %s: %v", obj.GetName(), err)
			}
		}
	}
	for _, ns := range podNamespaces {
		if err := e.Client.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns), client.GracePeriodSeconds(0)); err != nil {
			t.Errorf("purge: deleting pods of %s: %v", ns, err)
		}
	}
}
