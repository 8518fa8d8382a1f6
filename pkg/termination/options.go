package termination

import (
	"fmt"
	"time"
)

// Defaults of Options.
const (
	// DefaultEvictionRetry is the longest a drain whose evictions a PodDisruptionBudget refused
	// (429 TooManyRequests) waits before it tries again; the wait starts at
	// EvictionRetryBase and doubles with each pass that evicts nothing.
	DefaultEvictionRetry = 5 * time.Second
	// EvictionRetryBase is how soon a drain retries after its first refused pass.
	EvictionRetryBase = 250 * time.Millisecond
	// DefaultDrainPoll is how soon a drain that evicted pods, or waits for terminating pods to
	// go, looks again.
	DefaultDrainPoll = time.Second
	// DefaultStuckTerminatingTimeout is how long after its deletionTimestamp a terminating pod
	// still holds up a drain; after that its kubelet is presumed gone and the pod ignored.
	DefaultStuckTerminatingTimeout = time.Minute
	// DefaultEvictionTimeout bounds one call to the Eviction API. The API server answers a
	// budget it has not processed yet with 429 and Retry-After: 10, which client-go obeys up to
	// ten times; the bound turns that wait into a refused eviction, retried like any other,
	// instead of holding the drain (and a reconcile worker) for 100 seconds.
	DefaultEvictionTimeout = 5 * time.Second
	// DefaultMaxConcurrentReconciles is how many NodeClaims the controller drains at once.
	DefaultMaxConcurrentReconciles = 10
)

// Options configure a Controller. The zero value is usable: every zero field takes its default.
type Options struct {
	// EvictionRetry is the longest wait before a refused eviction is retried; zero means
	// DefaultEvictionRetry.
	EvictionRetry time.Duration
	// DrainPoll is how soon a drain in progress looks again; zero means DefaultDrainPoll.
	DrainPoll time.Duration
	// StuckTerminatingTimeout is how long past its deletionTimestamp a terminating pod still
	// blocks the drain; zero means DefaultStuckTerminatingTimeout.
	StuckTerminatingTimeout time.Duration
	// EvictionTimeout bounds one eviction call; zero means DefaultEvictionTimeout.
	EvictionTimeout time.Duration
	// MaxConcurrentReconciles bounds the parallel reconciles under a manager; zero means
	// DefaultMaxConcurrentReconciles.
	MaxConcurrentReconciles int
}

// Validate reports the first invalid option.
func (o Options) Validate() error {
	switch {
	case o.EvictionRetry < 0:
		return fmt.Errorf("eviction retry %s is negative", o.EvictionRetry)
	case o.DrainPoll < 0:
		return fmt.Errorf("drain poll %s is negative", o.DrainPoll)
	case o.StuckTerminatingTimeout < 0:
		return fmt.Errorf("stuck terminating timeout %s is negative", o.StuckTerminatingTimeout)
	case o.EvictionTimeout < 0:
		return fmt.Errorf("eviction timeout %s is negative", o.EvictionTimeout)
	case o.MaxConcurrentReconciles < 0:
		return fmt.Errorf("max concurrent reconciles %d is negative", o.MaxConcurrentReconciles)
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.EvictionRetry == 0 {
		o.EvictionRetry = DefaultEvictionRetry
	}
	if o.DrainPoll == 0 {
		o.DrainPoll = DefaultDrainPoll
	}
	if o.StuckTerminatingTimeout == 0 {
		o.StuckTerminatingTimeout = DefaultStuckTerminatingTimeout
	}
	if o.EvictionTimeout == 0 {
		o.EvictionTimeout = DefaultEvictionTimeout
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return o
}
