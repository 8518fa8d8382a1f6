package requeue

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestOnConflict(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "nodeclaims"}, "a", errors.New("stale"))
	other := errors.New("boom")
	wait := reconcile.Result{RequeueAfter: time.Minute}
	for name, tc := range map[string]struct {
		err     error
		want    reconcile.Result
		wantErr bool
	}{
		"nil keeps the result":         {nil, wait, false},
		"a conflict requeues":          {fmt.Errorf("writing: %w", conflict), reconcile.Result{RequeueAfter: ConflictDelay}, false},
		"joined conflicts requeue":     {errors.Join(conflict, conflict), reconcile.Result{RequeueAfter: ConflictDelay}, false},
		"another error is returned":    {other, reconcile.Result{}, true},
		"a conflict joined with other": {errors.Join(conflict, other), reconcile.Result{}, true},
	} {
		got, err := OnConflict(wait, tc.err)
		if got != tc.want || (err != nil) != tc.wantErr {
			t.Errorf("%s: got %+v, %v; want %+v, error %v", name, got, err, tc.want, tc.wantErr)
		}
	}
}
