package operator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// refusedError is what a client gets from an API server that is down: a real dial to a port
// nobody listens on, wrapped as net/http wraps it.
func refusedError(t *testing.T) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	conn, err := net.Dial("tcp", addr)
	if err == nil {
		_ = conn.Close()
		t.Fatalf("dialing %s, closed: connected", addr)
	}
	return &url.Error{Op: "Get", URL: "https://" + addr + "/api/v1/nodes", Err: err}
}

// scriptedLW answers its lists and watches with the scripted errors in turn, then succeeds.
type scriptedLW struct {
	mu     sync.Mutex
	script []error
	calls  int
}

func (s *scriptedLW) next() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if len(s.script) == 0 {
		return nil
	}
	err := s.script[0]
	s.script = s.script[1:]
	return err
}

func (s *scriptedLW) List(metav1.ListOptions) (runtime.Object, error) {
	if err := s.next(); err != nil {
		return nil, err
	}
	return &corev1.NodeList{}, nil
}

func (s *scriptedLW) Watch(metav1.ListOptions) (watch.Interface, error) {
	if err := s.next(); err != nil {
		return nil, err
	}
	return watch.NewFake(), nil
}

// TestRetryUnreachable: lists and watches that fail because the server cannot be reached are
// retried inside, every 100 ms doubling to 1 s, until an answer comes; the server's answers,
// errors included, reach the caller at once; a cancelled context ends the retries.
func TestRetryUnreachable(t *testing.T) {
	refused := refusedError(t)
	reset := &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/nodes", Err: &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no"))
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "karpenter.sh", Resource: "nodeclaims"}, "")
	gone := apierrors.NewResourceExpired("too old resource version")
	for _, tc := range []struct {
		name      string
		script    []error
		wantErr   error // nil: success
		wantCalls int
	}{
		{"refused, then answered", []error{refused, refused, refused}, nil, 4},
		{"reset and EOF, then answered", []error{reset, io.EOF, fmt.Errorf("decoding: %w", io.ErrUnexpectedEOF)}, nil, 4},
		{"forbidden reaches the reflector", []error{forbidden}, forbidden, 1},
		{"not found reaches the reflector", []error{notFound}, notFound, 1},
		{"expired reaches the reflector", []error{refused, gone}, gone, 2},
	} {
		for _, op := range []string{"list", "watch"} {
			t.Run(tc.name+"/"+op, func(t *testing.T) {
				lw := &scriptedLW{script: tc.script}
				r := retryUnreachable(lw, time.Millisecond, 4*time.Millisecond)
				var err error
				if op == "list" {
					_, err = r.ListWithContext(t.Context(), metav1.ListOptions{})
				} else {
					_, err = r.WatchWithContext(t.Context(), metav1.ListOptions{})
				}
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Errorf("error %v, want %v", err, tc.wantErr)
				}
				if lw.calls != tc.wantCalls {
					t.Errorf("%d calls, want %d", lw.calls, tc.wantCalls)
				}
			})
		}
	}

	t.Run("waits double up to the most", func(t *testing.T) {
		lw := &scriptedLW{script: []error{refused, refused, refused, refused, refused}}
		start := time.Now()
		if _, err := retryUnreachable(lw, 20*time.Millisecond, 40*time.Millisecond).ListWithContext(t.Context(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		// 20 + 40 + 40 + 40 + 40 ms.
		if took := time.Since(start); took < 180*time.Millisecond || took > 2*time.Second {
			t.Errorf("five retries took %s, want 180 ms and a little", took)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		script := make([]error, 1000)
		for i := range script {
			script[i] = refused
		}
		lw := &scriptedLW{script: script}
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		defer cancel()
		_, err := retryUnreachable(lw, time.Millisecond, 5*time.Millisecond).WatchWithContext(ctx, metav1.ListOptions{})
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("after the context ended: %v, want the last connection refused", err)
		}
	})
}

// outageLW is an API server that refuses connections until up is closed, then lists one node
// and watches without events.
type outageLW struct {
	refused error
	up      chan struct{}
}

func (o *outageLW) isUp() bool {
	select {
	case <-o.up:
		return true
	default:
		return false
	}
}

// node is the one node the server has: it registered during the outage.
func (o *outageLW) node() *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "registered-meanwhile", ResourceVersion: "2"}}
}

func (o *outageLW) List(metav1.ListOptions) (runtime.Object, error) {
	if !o.isUp() {
		return nil, o.refused
	}
	return &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "2"}, Items: []corev1.Node{*o.node()}}, nil
}

// Watch answers as kube-apiserver 1.35 does: a watch asked for its initial events (client-go's
// watch-list, on by default) streams them and a bookmark that marks their end.
func (o *outageLW) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	if !o.isUp() {
		return nil, o.refused
	}
	w := watch.NewFakeWithChanSize(2, false)
	if opts.SendInitialEvents != nil && *opts.SendInitialEvents {
		w.Add(o.node())
		w.Action(watch.Bookmark, &corev1.Node{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	}
	return w, nil
}

// TestInformerCatchesUpAfterOutage: an informer from newInformer, started while the API server
// refuses connections for 8 s, has the node that registered meanwhile within about a second
// of the server's return. (client-go's reflector alone would then be waiting up to 13 s more:
// its backoff doubles from 0.8 s with every refusal.)
func TestInformerCatchesUpAfterOutage(t *testing.T) {
	lw := &outageLW{refused: refusedError(t), up: make(chan struct{})}
	informer := newInformer(lw, &corev1.Node{}, 0, toolscache.Indexers{})
	go informer.RunWithContext(t.Context())
	time.Sleep(8 * time.Second)
	close(lw.up)
	back := time.Now()
	for !informer.HasSynced() {
		if time.Since(back) > 10*time.Second {
			t.Fatal("the informer did not sync within 10 s of the server's return")
		}
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(back)
	if _, ok, _ := informer.GetStore().GetByKey("registered-meanwhile"); !ok {
		t.Fatal("synced without the node")
	}
	if took > 1500*time.Millisecond {
		t.Errorf("the informer saw the node %s after the server's return, want within 1 s and a little", took)
	}
	t.Logf("node seen %s after the API server's return", took.Round(time.Millisecond))
}

// noWatchListLW is a ListerWatcher that says it cannot stream a list over a watch.
type noWatchListLW struct{ scriptedLW }

func (*noWatchListLW) IsWatchListSemanticsUnSupported() bool { return true }

// TestRetryUnreachableKeepsWatchListSupport: the wrapper claims watch-list support exactly
// when what it wraps does, so the reflector lists the same way with it as without.
func TestRetryUnreachableKeepsWatchListSupport(t *testing.T) {
	if watchlist.DoesClientNotSupportWatchListSemantics(retryUnreachable(&scriptedLW{}, time.Millisecond, time.Millisecond)) {
		t.Error("the wrapper of a ListerWatcher supporting watch-list says it does not")
	}
	if !watchlist.DoesClientNotSupportWatchListSemantics(retryUnreachable(&noWatchListLW{}, time.Millisecond, time.Millisecond)) {
		t.Error("the wrapper of a ListerWatcher without watch-list says it has it")
	}
}
