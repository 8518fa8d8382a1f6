package provisioning

import (
	"context"
	"time"

	"k8s.io/utils/clock"
)

// Default batching windows, as in Karpenter.
const (
	DefaultBatchIdleDuration = time.Second
	DefaultBatchMaxDuration  = 10 * time.Second
)

// Batcher groups triggers into batches: a batch starts with the first trigger and ends when no
// trigger came for the idle duration, or when the max duration has passed since it started.
type Batcher struct {
	clock     clock.Clock
	idle, max time.Duration
	triggers  chan struct{}
}

// NewBatcher returns a batcher with the given windows (defaults when zero).
func NewBatcher(c clock.Clock, idle, max time.Duration) *Batcher {
	if idle <= 0 {
		idle = DefaultBatchIdleDuration
	}
	if max <= 0 {
		max = DefaultBatchMaxDuration
	}
	return &Batcher{clock: c, idle: idle, max: max, triggers: make(chan struct{}, 1)}
}

// Trigger notes that there is work; it never blocks.
func (b *Batcher) Trigger() {
	select {
	case b.triggers <- struct{}{}:
	default:
	}
}

// Wait blocks until a batch is complete and reports true, or false when ctx is done.
func (b *Batcher) Wait(ctx context.Context) bool {
	select {
	case <-b.triggers:
	case <-ctx.Done():
		return false
	}
	limit := b.clock.NewTimer(b.max)
	defer limit.Stop()
	idle := b.clock.NewTimer(b.idle)
	defer idle.Stop()
	for {
		select {
		case <-b.triggers:
			if !idle.Stop() {
				select {
				case <-idle.C():
				default:
				}
			}
			idle.Reset(b.idle)
		case <-idle.C():
			return true
		case <-limit.C():
			return true
		case <-ctx.Done():
			return false
		}
	}
}
