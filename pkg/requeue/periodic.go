package requeue

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Periodic registers with mgr a singleton controller named name that runs step at once and then
// every interval on clk, on the elected leader, until the manager stops: the shape of
// Karpenter's singleton controllers that requeue after a fixed time. A failed pass is logged as
// what it was doing (doing, such as "garbage collecting nodeclaims"), and the next pass retries.
func Periodic(mgr manager.Manager, name, doing string, clk clock.Clock, interval time.Duration, step func(context.Context) error) error {
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		logger := log.FromContext(ctx).WithName(name)
		for {
			if err := step(ctx); err != nil && ctx.Err() == nil {
				logger.Error(err, doing)
			}
			timer := clk.NewTimer(interval)
			select {
			case <-ctx.Done():
				timer.Stop()
				return nil
			case <-timer.C():
			}
		}
	}))
}
