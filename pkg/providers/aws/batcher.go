package aws

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"reflect"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/openkarpenter/karpenter/pkg/metrics"
)

// maxBatchWorkers bounds the EC2 calls one batcher has in flight, as Karpenter's request
// workers do.
const maxBatchWorkers = 100

// batchWindow is when a batcher calls: idle after the last request of a window, max after its
// first, or as soon as it holds maxItems requests (0: no bound).
type batchWindow struct {
	idle, max time.Duration
	maxItems  int
}

// batchResult is what one request of a batch gets back: an output or an error.
type batchResult[Out any] struct {
	out *Out
	err error
}

// batchRequest is one caller's request waiting in a batcher.
type batchRequest[In, Out any] struct {
	ctx    context.Context
	input  *In
	result chan batchResult[Out] // buffered: the executor never waits for its caller
}

// batcher merges concurrent requests of one EC2 call into fewer calls, as Karpenter's AWS
// provider does (its pkg/batcher). The first request opens a window; every request that
// arrives before the window closes joins it; when it closes, its requests are grouped by their
// hash, and each group is handed to exec at once, which makes one call (or as few as it can)
// and returns one result per request, in the requests' order.
//
// Requests wait for their result whatever their context does, as in Karpenter: the call of a
// group is made with the first request's context values but without its cancellation, so that
// one caller giving up does not fail the others.
type batcher[In, Out any] struct {
	// name is the batcher label of its metrics.
	name   string
	window batchWindow
	// hash buckets requests: only requests of the same hash are merged.
	hash func(*In) uint64
	// exec makes the merged call of a group of requests; it returns one result per input, in
	// order (missing results become errors). It may modify the inputs.
	exec  func(ctx context.Context, inputs []*In) []batchResult[Out]
	clock clock.Clock
	// workers bounds the groups executing at once.
	workers chan struct{}

	mu      sync.Mutex
	pending map[uint64][]*batchRequest[In, Out]
	// count is the requests of the open window; open says whether one is open, opened when
	// it was and last when its last request arrived.
	count        int
	open         bool
	opened, last time.Time
	// full wakes the open window when it reaches maxItems.
	full chan struct{}
}

// newBatcher returns a batcher; its windows run on clk.
func newBatcher[In, Out any](name string, window batchWindow, hash func(*In) uint64,
	exec func(context.Context, []*In) []batchResult[Out], clk clock.Clock) *batcher[In, Out] {
	return &batcher[In, Out]{name: name, window: window, hash: hash, exec: exec, clock: clk,
		workers: make(chan struct{}, maxBatchWorkers), pending: map[uint64][]*batchRequest[In, Out]{}, full: make(chan struct{}, 1)}
}

// add puts the request in the open window (opening one if there is none) and waits for its
// result.
func (b *batcher[In, Out]) add(ctx context.Context, input *In) (*Out, error) {
	req := &batchRequest[In, Out]{ctx: ctx, input: input, result: make(chan batchResult[Out], 1)}
	key := b.hash(input)
	b.mu.Lock()
	now := b.clock.Now()
	b.pending[key] = append(b.pending[key], req)
	b.count++
	b.last = now
	if !b.open {
		b.open, b.opened = true, now
		go b.collect()
	}
	if b.window.maxItems > 0 && b.count >= b.window.maxItems {
		select {
		case b.full <- struct{}{}:
		default: // already signalled
		}
	}
	b.mu.Unlock()
	r := <-req.result
	return r.out, r.err
}

// collect waits for the open window to close, idle or full, then executes its groups.
func (b *batcher[In, Out]) collect() {
	for {
		b.mu.Lock()
		deadline := b.last.Add(b.window.idle)
		if end := b.opened.Add(b.window.max); end.Before(deadline) {
			deadline = end
		}
		full := b.window.maxItems > 0 && b.count >= b.window.maxItems
		b.mu.Unlock()
		wait := deadline.Sub(b.clock.Now())
		if full || wait <= 0 {
			break
		}
		// A request arriving meanwhile moves the idle deadline on: the loop measures again.
		timer := b.clock.NewTimer(wait)
		select {
		case <-timer.C():
		case <-b.full: // a stale signal of an earlier window is measured again too
		}
		timer.Stop()
	}
	b.mu.Lock()
	groups, opened, closed := b.pending, b.opened, b.clock.Now()
	b.pending, b.count, b.open = map[uint64][]*batchRequest[In, Out]{}, 0, false
	b.mu.Unlock()
	metrics.ObserveBatchWindow(b.name, closed.Sub(opened))
	for _, group := range groups {
		b.workers <- struct{}{}
		go func() {
			defer func() { <-b.workers }()
			b.call(group)
		}()
	}
}

// errNoBatchResult is the error of a request the executor returned no result for.
var errNoBatchResult = errors.New("the batched call returned no result for the request")

// call executes one group and hands each request its result.
func (b *batcher[In, Out]) call(group []*batchRequest[In, Out]) {
	metrics.ObserveBatchSize(b.name, len(group))
	inputs := make([]*In, len(group))
	for i, req := range group {
		inputs[i] = req.input
	}
	results := b.exec(context.WithoutCancel(group[0].ctx), inputs)
	for i, req := range group {
		if i < len(results) {
			req.result <- results[i]
		} else {
			req.result <- batchResult[Out]{err: errNoBatchResult}
		}
	}
}

// hashAsSet hashes a value by its content, as Karpenter's request hasher does (hashstructure
// with slices as sets): pointers are followed, exported struct fields count by name and value,
// the order of slice elements and map entries does not matter. Equal requests hash alike
// whatever the order their lists were built in.
func hashAsSet(v any) uint64 { return hashValue(reflect.ValueOf(v)) }

var timeType = reflect.TypeFor[time.Time]()

func hashValue(v reflect.Value) uint64 {
	h := fnv.New64a()
	word := func(x uint64) {
		var b [8]byte
		for i := range b {
			b[i] = byte(x >> (8 * i))
		}
		_, _ = h.Write(b[:])
	}
	if !v.IsValid() {
		return 0
	}
	word(uint64(v.Kind()))
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return h.Sum64()
		}
		word(hashValue(v.Elem()))
	case reflect.Struct:
		if v.Type() == timeType {
			word(uint64(v.Interface().(time.Time).UnixNano()))
			break
		}
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			_, _ = h.Write([]byte(t.Field(i).Name))
			word(hashValue(v.Field(i)))
		}
	case reflect.Slice, reflect.Array:
		// A sum does not depend on the order; the length keeps repeated elements apart.
		var sum uint64
		for i := range v.Len() {
			sum += hashValue(v.Index(i))
		}
		word(uint64(v.Len()))
		word(sum)
	case reflect.Map:
		var sum uint64
		for it := v.MapRange(); it.Next(); {
			sum += hashValue(it.Key())*31 + hashValue(it.Value())
		}
		word(uint64(v.Len()))
		word(sum)
	case reflect.String:
		_, _ = h.Write([]byte(v.String()))
	case reflect.Bool:
		if v.Bool() {
			word(1)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		word(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		word(v.Uint())
	case reflect.Float32, reflect.Float64:
		word(math.Float64bits(v.Float()))
	default:
		panic("hashing a request: cannot hash a " + v.Kind().String())
	}
	return h.Sum64()
}
