package operator

import (
	"context"
	"errors"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// The retries of a list or watch while the API server is unreachable: the first after
// unreachableFirstRetry, each later one after twice the wait before it, at most
// unreachableMaxRetry.
const (
	unreachableFirstRetry = 100 * time.Millisecond
	unreachableMaxRetry   = time.Second
)

// newInformer builds the manager's informers (cache.Options.NewInformer): client-go's shared
// index informer over a ListerWatcher that rides out an unreachable API server.
//
// Why: a reflector whose list or watch fails backs off 0.8 s, doubling to 30 s (plus up to as
// much again of jitter), and does not try again before its wait is over. After an API server
// outage of a minute the controller's caches stay stale for up to another minute, blind to the
// nodes that registered meanwhile. Retried inside the ListerWatcher, every 100 ms doubling to
// 1 s, "server unreachable" never reaches the reflector, so its backoff never grows, and the
// caches catch up within a second of the server's return.
func newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	return toolscache.NewSharedIndexInformer(retryUnreachable(lw, unreachableFirstRetry, unreachableMaxRetry), obj, resync, indexers)
}

// retryUnreachable wraps lw so that a list or watch failing because the API server cannot be
// reached is retried inside it, after first, doubling up to most, until it gets an answer or
// its context ends. Answers, errors included (403, 404, 410, 429, 500...), go to the caller
// unchanged: the reflector's handling of each stays as it is.
func retryUnreachable(lw toolscache.ListerWatcher, first, most time.Duration) *unreachableRetrier {
	return &unreachableRetrier{inner: lw, lw: toolscache.ToListerWatcherWithContext(lw), first: first, most: most}
}

// unreachableRetrier is the ListerWatcher retryUnreachable returns; it has the methods of both
// the older interface and the one with contexts, which reflectors use.
type unreachableRetrier struct {
	inner       toolscache.ListerWatcher
	lw          toolscache.ListerWatcherWithContext
	first, most time.Duration
}

// ListWithContext lists, retrying while the server is unreachable.
func (r *unreachableRetrier) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	return retryWhileUnreachable(ctx, r.first, r.most, func() (runtime.Object, error) { return r.lw.ListWithContext(ctx, opts) })
}

// WatchWithContext starts a watch, retrying while the server is unreachable.
func (r *unreachableRetrier) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return retryWhileUnreachable(ctx, r.first, r.most, func() (watch.Interface, error) { return r.lw.WatchWithContext(ctx, opts) })
}

// List is ListWithContext without a deadline, for callers of the older interface.
func (r *unreachableRetrier) List(opts metav1.ListOptions) (runtime.Object, error) {
	return r.ListWithContext(context.Background(), opts)
}

// Watch is WatchWithContext without a deadline, for callers of the older interface.
func (r *unreachableRetrier) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	return r.WatchWithContext(context.Background(), opts)
}

// IsWatchListSemanticsUnSupported forwards the wrapped ListerWatcher's answer, so that the
// reflector streams its initial list over a watch exactly when it would without the wrapper.
func (r *unreachableRetrier) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(r.inner)
}

// retryWhileUnreachable calls call until it returns anything but an unreachable error, waiting
// first, doubling up to most, between calls. When ctx ends it returns the last error.
func retryWhileUnreachable[T any](ctx context.Context, first, most time.Duration, call func() (T, error)) (T, error) {
	wait := first
	for {
		out, err := call()
		if err == nil || !unreachable(err) {
			return out, err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return out, err
		case <-timer.C:
		}
		wait = min(2*wait, most)
	}
}

// unreachable reports whether err says the API server could not be reached (connection refused
// or reset, the connection closed before an answer) rather than being the server's answer.
func unreachable(err error) bool {
	return utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
