// Package harness owns what tests use to run things around the code under test: polling until
// a condition holds, work repeated in the background (the kube-scheduler's binding played by
// the simulator's binder), an operator started for the length of a test, free loopback ports,
// and the PodDisruptionBudget notion of a healthy pod.
package harness

import (
	"context"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openkarpenter/karpenter/pkg/operator"
	"github.com/openkarpenter/karpenter/pkg/simulate/binder"
)

// PollInterval is how often Eventually checks its condition.
const PollInterval = 100 * time.Millisecond

// Eventually checks cond every PollInterval until it holds. When timeout passes first it runs
// onTimeout (to log what explains the failure) and fails the test with what it waited for and
// cond's last detail.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() (bool, string), onTimeout ...func()) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			for _, f := range onTimeout {
				f()
			}
			msg := fmt.Sprintf("timed out after %s waiting for %s: %s", timeout, what, detail)
			timeouts.Store(t, msg)
			t.Fatal(msg)
		}
		time.Sleep(PollInterval)
	}
}

// timeouts holds, per test, the message of the Eventually that failed it; explanations what
// its onTimeout functions gave Explain.
var timeouts, explanations sync.Map

// Explain records what explains a timeout, for TimedOut to repeat after its message: an
// Eventually's onTimeout function calls it with what it found (the objects still waiting and
// why), while the test's objects still exist.
func Explain(t testing.TB, detail string) {
	explanations.Store(t, detail)
}

// TimedOut returns the message of the Eventually that failed t, if one did, followed by what
// Explain recorded: a test that logs long diagnostics when it fails repeats it after them,
// where a reader of the output's end finds it.
func TimedOut(t testing.TB) (string, bool) {
	msg, ok := timeouts.Load(t)
	if !ok {
		return "", false
	}
	if detail, ok := explanations.Load(t); ok {
		return msg.(string) + "\n" + detail.(string), true
	}
	return msg.(string), true
}

// Every runs fn every interval in the background until the test ends, logging its errors but
// optimistic-concurrency conflicts, which the next run resolves.
func Every(t testing.TB, interval time.Duration, what string, fn func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if err := fn(ctx); err != nil && ctx.Err() == nil && !apierrors.IsConflict(err) && !strings.Contains(err.Error(), "has been modified") {
				t.Logf("%s: %v", what, err)
			}
			time.Sleep(interval)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// StartBinder binds pending pods to nodes every 100ms until the test ends, as the
// kube-scheduler would.
func StartBinder(t testing.TB, kube client.Client) {
	t.Helper()
	b := binder.New(kube, clock.RealClock{}, binder.Options{})
	Every(t, 100*time.Millisecond, "binder", func(ctx context.Context) error {
		_, err := b.Step(ctx)
		return err
	})
}

// stopDiagnosticsAfter is how long RunOperator's stop waits before it logs every goroutine's
// stack (the manager's own grace period for its runnables is 30s).
const stopDiagnosticsAfter = 20 * time.Second

// RunOperator starts the operator in the background and returns a function that stops it and
// reports how it ended; the test's cleanup stops it too, once.
func RunOperator(t testing.TB, op *operator.Operator) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- op.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			var err error
			select {
			case err = <-done:
			case <-time.After(stopDiagnosticsAfter):
				// The manager gives its runnables 30s: show what still runs before it gives up.
				buf := make([]byte, 8<<20)
				t.Logf("the operator is still stopping after %s; goroutines:\n%s", stopDiagnosticsAfter, buf[:runtime.Stack(buf, true)])
				err = <-done
			}
			if err != nil {
				t.Errorf("operator stopped with %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// StartOperator builds an operator on cfg with opts and runs it (see RunOperator).
func StartOperator(t testing.TB, cfg *rest.Config, opts operator.Options) (*operator.Operator, func()) {
	t.Helper()
	op, err := operator.New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return op, RunOperator(t, op)
}

// FreePort returns a loopback port nothing listens on.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// PodHealthy reports whether a pod counts toward a PodDisruptionBudget: running, ready and not
// terminating.
func PodHealthy(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
