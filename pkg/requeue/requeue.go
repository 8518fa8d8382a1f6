// Package requeue holds when controllers run again. A write that loses an
// optimistic-concurrency race: a conflict (a stale read, usually from the cache) is not an
// error worth a backoff and an error log, and the reconcile runs again shortly instead (the
// write that won normally brings it back sooner, through the watch). A singleton controller
// that looks every so often runs through Periodic.
package requeue

import (
	"errors"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConflictDelay is how soon a reconcile that lost an optimistic-concurrency race runs again.
const ConflictDelay = time.Second

// IsConflict reports whether err is a conflict, or joins (errors.Join) only conflicts.
func IsConflict(err error) bool {
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			if !IsConflict(e) {
				return false
			}
		}
		return true
	}
	return apierrors.IsConflict(err)
}

// OnConflict turns the outcome of a reconcile into its result: res when err is nil, a requeue
// after ConflictDelay (and no error) when err is a conflict (IsConflict), and err otherwise.
func OnConflict(res reconcile.Result, err error) (reconcile.Result, error) {
	if err == nil {
		return res, nil
	}
	if IsConflict(err) {
		return reconcile.Result{RequeueAfter: ConflictDelay}, nil
	}
	return reconcile.Result{}, err
}
